package acl

import (
	"slices"
	"strings"
)

// User is one ACL user: its flags, password hashes (lowercase hex
// SHA-256, in the order they were added) and selectors, the root first.
type User struct {
	Name         string
	cmds         *Commands // the table its rules apply to
	enabled      bool
	nopass       bool
	skipSanitize bool
	passwords    []string
	selectors    []*selector // [0] is the root selector
}

// newUser is a user as ACLCreateUser makes it: off, no password, no
// permissions (all channels when acl-pubsub-default is allchannels).
func newUser(cmds *Commands, name string, allChannels bool) *User {
	return &User{Name: name, cmds: cmds, selectors: []*selector{newSelector(cmds, true, allChannels)}}
}

func (u *User) clone() *User {
	c := *u
	c.passwords = slices.Clone(u.passwords)
	c.selectors = make([]*selector, len(u.selectors))
	for i, s := range u.selectors {
		c.selectors[i] = s.clone()
	}
	return &c
}

// Enabled reports whether the user is on (may authenticate).
func (u *User) Enabled() bool { return u.enabled }

// NoPass reports whether any password authenticates the user.
func (u *User) NoPass() bool { return u.nopass }

// SkipSanitizePayload reports the skip-sanitize-payload flag (RESTORE).
func (u *User) SkipSanitizePayload() bool { return u.skipSanitize }

// Passwords are the user's password hashes in order.
func (u *User) Passwords() []string { return slices.Clone(u.passwords) }

// set is ACLSetUser: one rule (an argument of ACL SETUSER, selectors
// already merged) on the user.
func (u *User) set(cmds *Commands, op string, allChannels bool) error {
	if op == "" {
		return nil
	}
	name := cstr(op)
	switch {
	case strings.EqualFold(name, "on"):
		u.enabled = true
	case strings.EqualFold(name, "off"):
		u.enabled = false
	case strings.EqualFold(name, "skip-sanitize-payload"):
		u.skipSanitize = true
	case strings.EqualFold(name, "sanitize-payload"):
		u.skipSanitize = false
	case strings.EqualFold(name, "nopass"):
		u.nopass, u.passwords = true, nil
	case strings.EqualFold(name, "resetpass"):
		u.nopass, u.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		return u.addPassword(op)
	case op[0] == '<' || op[0] == '!':
		return u.removePassword(op)
	case op[0] == '(' && op[len(op)-1] == ')':
		s, err := parseSelector(cmds, op, allChannels)
		if err != nil {
			return err
		}
		u.selectors = append(u.selectors, s)
	case strings.EqualFold(name, "clearselectors"):
		u.selectors = u.selectors[:1]
	case strings.EqualFold(name, "reset"):
		u.reset(cmds, allChannels)
	default:
		return u.selectors[0].set(cmds, op)
	}
	return nil
}

// reset is "reset": resetpass, resetkeys, resetchannels (allchannels
// under acl-pubsub-default allchannels), off, sanitize-payload,
// clearselectors, -@all.
func (u *User) reset(cmds *Commands, allChannels bool) {
	u.nopass, u.passwords = false, nil
	root := u.selectors[0]
	root.allKeys, root.keys = false, nil
	root.allChannels, root.channels = allChannels, nil
	u.enabled, u.skipSanitize = false, false
	u.selectors = u.selectors[:1]
	root.setAll(false)
}

func (u *User) addPassword(op string) error {
	h, err := opHash(op)
	if err != nil {
		return err
	}
	if !slices.Contains(u.passwords, h) {
		u.passwords = append(u.passwords, h)
	}
	u.nopass = false
	return nil
}

func (u *User) removePassword(op string) error {
	h, err := opHash(op)
	if err != nil {
		return err
	}
	i := slices.Index(u.passwords, h)
	if i < 0 {
		return ErrNoSuchPassword
	}
	u.passwords = slices.Delete(u.passwords, i, i+1)
	return nil
}

// opHash is the hash a password rule names: >pass and <pass hash the
// cleartext, #hash and !hash give it (checked).
func opHash(op string) (string, error) {
	if op[0] == '>' || op[0] == '<' {
		return HashPassword([]byte(op[1:])), nil
	}
	if !validHash(op[1:]) {
		return "", ErrBadHash
	}
	return op[1:], nil
}

// parseSelector is aclCreateSelectorFromOpSet: "(rules)", split as
// sdssplitargs splits (unbalanced quotes give no rules, as in Redis).
func parseSelector(cmds *Commands, op string, allChannels bool) (*selector, error) {
	s := newSelector(cmds, false, allChannels)
	args, _ := splitArgs(op[1 : len(op)-1])
	for _, a := range args {
		if err := s.set(cmds, a); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// mergeSelectors is ACLMergeSelectorArguments: a selector spread over
// several arguments, "(~x" "+get)", becomes one "(~x +get)"; ok is false
// with the index of an opening argument never closed.
func mergeSelectors(args []string) (merged []string, open int, ok bool) {
	open = -1
	var cur string
	for j, op := range args {
		if open < 0 && strings.HasPrefix(op, "(") && !strings.HasSuffix(op, ")") {
			cur, open = op, j
			continue
		}
		if open >= 0 {
			cur += " " + cstr(op)
			if strings.HasSuffix(op, ")") {
				merged, open = append(merged, cur), -1
			}
			continue
		}
		merged = append(merged, op)
	}
	if open >= 0 {
		return nil, open, false
	}
	return merged, 0, true
}

// AllowsAll reports whether the root selector allows every command, key
// and channel: Check then never denies, so the server may skip it (the
// common case, the default user, costs a flag test).
func (u *User) AllowsAll() bool {
	r := u.selectors[0]
	return r.allCommands && r.allKeys && r.allChannels
}
