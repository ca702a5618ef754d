package acl

import (
	"slices"
	"strings"
)

// perm is a key pattern's access: read, write or both (Redis's
// ACL_READ_PERMISSION, ACL_WRITE_PERMISSION).
type perm uint8

const (
	permRead perm = 1 << iota
	permWrite
	permAll = permRead | permWrite
)

// keyPattern is one ~, %R~, %W~ or %RW~ pattern.
type keyPattern struct {
	pattern string
	perm    perm
}

// String is the pattern as ACL LIST shows it (sdsCatPatternString).
func (k keyPattern) String() string {
	switch k.perm {
	case permRead:
		return "%R~" + k.pattern
	case permWrite:
		return "%W~" + k.pattern
	}
	return "~" + k.pattern
}

// selector is Redis's aclSelector: what a user may run and touch. The
// root selector holds the rules given outside parentheses.
type selector struct {
	root        bool
	allKeys     bool
	allChannels bool
	allCommands bool
	// future is Redis's reserved command bit: set by +@all (allcommands),
	// cleared only by -@all (nocommands); ACL LIST starts with +@all
	// when it is set.
	future    bool
	allowed   []uint64 // bit per command id
	firstArgs map[int][]string
	keys      []keyPattern
	channels  []string
	// rules are the command rules in the order that still matters
	// (Redis's command_rules): "+get", "-@read", "+select|0".
	rules []string
}

func newSelector(cmds *Commands, root, allChannels bool) *selector {
	return &selector{root: root, allChannels: allChannels, allowed: make([]uint64, (cmds.size()+63)/64)}
}

func (s *selector) clone() *selector {
	c := *s
	c.allowed = slices.Clone(s.allowed)
	c.keys = slices.Clone(s.keys)
	c.channels = slices.Clone(s.channels)
	c.rules = slices.Clone(s.rules)
	c.firstArgs = nil
	for id, args := range s.firstArgs {
		c.addFirstArg(id, args...)
	}
	return &c
}

func (s *selector) bit(id int) bool { return s.allowed[id/64]&(1<<(id%64)) != 0 }

// setBit is ACLSetSelectorCommandBit: clearing a bit clears allcommands.
func (s *selector) setBit(id int, on bool) {
	if on {
		s.allowed[id/64] |= 1 << (id % 64)
		return
	}
	s.allowed[id/64] &^= 1 << (id % 64)
	s.allCommands = false
}

// changePerm is ACLChangeSelectorPerm: a command with its subcommands.
func (s *selector) changePerm(c *command, on bool) {
	s.setBit(c.id, on)
	delete(s.firstArgs, c.id)
	for _, sub := range c.subs {
		s.setBit(sub, on)
	}
}

// addFirstArg is ACLAddAllowedFirstArg: no duplicates, any case.
func (s *selector) addFirstArg(id int, args ...string) {
	if s.firstArgs == nil {
		s.firstArgs = map[int][]string{}
	}
	for _, a := range args {
		if !slices.ContainsFunc(s.firstArgs[id], func(x string) bool { return strings.EqualFold(x, a) }) {
			s.firstArgs[id] = append(s.firstArgs[id], a)
		}
	}
}

// setAll is +@all (on) or -@all: every bit, the rules forgotten.
func (s *selector) setAll(on bool) {
	var fill uint64
	if on {
		fill = ^uint64(0)
	}
	for i := range s.allowed {
		s.allowed[i] = fill
	}
	s.allCommands, s.future = on, on
	s.rules = nil
	s.firstArgs = nil
}

// updateRules is ACLUpdateCommandRules: the new rule (lowercased) replaces
// every earlier rule on the same name or on one of its subcommands or
// first arguments, and goes last.
func (s *selector) updateRules(rule string, allow bool) {
	rule = strings.ToLower(rule)
	s.rules = slices.DeleteFunc(s.rules, func(r string) bool {
		r = r[1:]
		return r == rule || strings.HasPrefix(r, rule+"|")
	})
	sign := "-"
	if allow {
		sign = "+"
	}
	s.rules = append(s.rules, sign+rule)
}

// set is ACLSetSelector: one rule on the selector.
func (s *selector) set(cmds *Commands, op string) error {
	name := cstr(op)
	switch {
	case strings.EqualFold(name, "allkeys") || name == "~*":
		s.allKeys, s.keys = true, nil
	case strings.EqualFold(name, "resetkeys"):
		s.allKeys, s.keys = false, nil
	case strings.EqualFold(name, "allchannels") || name == "&*":
		s.allChannels, s.channels = true, nil
	case strings.EqualFold(name, "resetchannels"):
		s.allChannels, s.channels = false, nil
	case strings.EqualFold(name, "allcommands") || strings.EqualFold(name, "+@all"):
		s.setAll(true)
	case strings.EqualFold(name, "nocommands") || strings.EqualFold(name, "-@all"):
		s.setAll(false)
	case op != "" && (op[0] == '~' || op[0] == '%'):
		return s.addKeyPattern(op)
	case op != "" && op[0] == '&':
		return s.addChannel(op[1:])
	case len(name) > 1 && (name[0] == '+' || name[0] == '-') && name[1] == '@':
		return s.setCategory(cmds, name)
	case name != "" && name[0] == '+':
		return s.allowCommand(cmds, name[1:])
	case name != "" && name[0] == '-':
		return s.denyCommand(cmds, name[1:])
	default:
		return ErrSyntax
	}
	return nil
}

// addKeyPattern is ~pattern or %R~, %W~, %RW~ pattern. Unlike Redis 7.2,
// a '%' rule that grants no access ("%", "%~x") is a syntax error: Redis
// accepts it and then aborts when it describes the user (later Redis
// versions reject "%~").
func (s *selector) addKeyPattern(op string) error {
	if s.allKeys {
		return ErrKeyAfterAll
	}
	p, off := permAll, 1
	if op[0] == '%' {
		p = 0
	scan:
		for ; off < len(op); off++ {
			switch {
			case (op[off] == 'R' || op[off] == 'r') && p&permRead == 0:
				p |= permRead
			case (op[off] == 'W' || op[off] == 'w') && p&permWrite == 0:
				p |= permWrite
			case op[off] == '~' && p != 0:
				off++
				break scan
			default:
				return ErrSyntax
			}
		}
		if p == 0 {
			return ErrSyntax
		}
	}
	pat := op[off:]
	if hasSpaces(pat) {
		return ErrSyntax
	}
	if i := slices.IndexFunc(s.keys, func(k keyPattern) bool { return k.pattern == pat }); i >= 0 {
		s.keys[i].perm |= p
	} else {
		s.keys = append(s.keys, keyPattern{pattern: pat, perm: p})
	}
	s.allKeys = false
	return nil
}

func (s *selector) addChannel(pat string) error {
	if s.allChannels {
		return ErrChannelAfterAll
	}
	if hasSpaces(pat) {
		return ErrSyntax
	}
	if !slices.Contains(s.channels, pat) {
		s.channels = append(s.channels, pat)
	}
	return nil
}

// setCategory is +@category or -@category (ACLSetSelectorCategory): a
// container in the category changes with all its subcommands, then each
// subcommand in the category changes.
func (s *selector) setCategory(cmds *Commands, op string) error {
	cat := knownCategory(op[2:])
	if cat == "" {
		return ErrUnknownCommand
	}
	allow := op[0] == '+'
	s.updateRules(op[1:], allow)
	for _, c := range cmds.list {
		if c.cats[cat] {
			s.changePerm(c, allow)
		}
	}
	return nil
}

// allowCommand is +command, +container|sub or +command|first-arg.
func (s *selector) allowCommand(cmds *Commands, name string) error {
	i := strings.LastIndexByte(name, '|')
	if i < 0 {
		c := cmds.lookup(name)
		if c == nil {
			return ErrUnknownCommand
		}
		s.changePerm(c, true)
		s.updateRules(c.meta.Name, true)
		return nil
	}
	c := cmds.lookup(name[:i])
	switch {
	case c == nil:
		return ErrUnknownCommand
	case c.parent >= 0:
		return ErrSubcommandArg
	case i == len(name)-1:
		return ErrSyntax
	case len(c.subs) > 0:
		sub := cmds.lookup(name)
		if sub == nil {
			return ErrUnknownCommand
		}
		s.changePerm(sub, true)
	case hasSpaces(name[i+1:]):
		// Redis accepts it, then cannot read its own ACL LIST back;
		// rejected here so every description replays.
		return ErrSyntax
	default:
		// Redis allows a first argument of a command without
		// subcommands (SELECT|0), deprecated but kept.
		s.addFirstArg(c.id, name[i+1:])
	}
	s.updateRules(name, true)
	return nil
}

// denyCommand is -command or -container|sub.
func (s *selector) denyCommand(cmds *Commands, name string) error {
	c := cmds.lookup(name)
	if c == nil {
		return ErrUnknownCommand
	}
	s.changePerm(c, false)
	s.updateRules(c.meta.Name, false)
	return nil
}

// cstr is op as C sees it: up to its first NUL.
func cstr(op string) string {
	if i := strings.IndexByte(op, 0); i >= 0 {
		return op[:i]
	}
	return op
}

// hasSpaces is ACLStringHasSpaces: C's isspace or a NUL.
func hasSpaces(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r == 0
	})
}
