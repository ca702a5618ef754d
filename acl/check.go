package acl

import (
	"fmt"
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// Reason is why a command was denied or an ACL LOG entry was made, in
// Redis's order of importance (ACL_DENIED_CMD < KEY < AUTH < CHANNEL).
type Reason int

// The reasons, numbered as Redis numbers them.
const (
	ReasonCommand Reason = 1
	ReasonKey     Reason = 2
	ReasonAuth    Reason = 3
	ReasonChannel Reason = 4
)

// String is the reason as ACL LOG shows it.
func (r Reason) String() string {
	switch r {
	case ReasonCommand:
		return "command"
	case ReasonKey:
		return "key"
	case ReasonAuth:
		return "auth"
	case ReasonChannel:
		return "channel"
	}
	return "unknown"
}

// Denial is a command the user may not run: the reason, the command's
// full name, and for a key or channel its position in the arguments and
// its text (the ACL LOG object).
type Denial struct {
	Reason  Reason
	Command string // full name: "get", "config|set"
	Pos     int    // index in args of the key or channel; 0 for a command
	Object  string // the key or channel; the command's full name for a command
}

// Err is the -NOPERM error the command gets (getAclErrorMessage, not
// verbose).
func (d *Denial) Err(username string) *resp.Error {
	return resp.NewError("NOPERM " + d.Text(username))
}

// Text is the denial's message without an error code, as a script's
// call gets it after "ACL failure in script: " (getAclErrorMessage, not
// verbose).
func (d *Denial) Text(username string) string {
	switch d.Reason {
	case ReasonKey:
		return "No permissions to access a key"
	case ReasonChannel:
		return "No permissions to access a channel"
	}
	return fmt.Sprintf("User %s has no permissions to run the '%s' command", username, d.Command)
}

// DryRunText is ACL DRYRUN's bulk reply for a denial (the verbose message).
func (d *Denial) DryRunText(username string) string {
	switch d.Reason {
	case ReasonKey:
		return fmt.Sprintf("User %s has no permissions to access the '%s' key", username, d.Object)
	case ReasonChannel:
		return fmt.Sprintf("User %s has no permissions to access the '%s' channel", username, d.Object)
	}
	return fmt.Sprintf("User %s has no permissions to run the '%s' command", username, d.Command)
}

// Check is ACLCheckAllUserCommandPerm: whether the user may run cmd with
// args (args[0] the command's name; arity already checked). cmd may be a
// container: the subcommand args[1] names is checked. nil means allowed.
// When no selector allows it, the denial is the most important one any
// selector gave (command < key < channel; the later argument on a tie),
// as Redis picks the one it logs.
func (u *User) Check(cmd *resp.Command, args [][]byte) *Denial {
	cmd = subcommandOf(cmd, args)
	c := u.cmds.byName[cmd.Name]
	var cache keyCache
	worst := &Denial{Reason: ReasonCommand, Command: cmd.Name, Object: cmd.Name}
	for _, s := range u.selectors {
		r, pos := s.check(c, cmd, args, &cache)
		if r == 0 {
			return nil
		}
		if r > worst.Reason || (r == worst.Reason && pos > worst.Pos) {
			worst.Reason, worst.Pos = r, pos
		}
	}
	if worst.Reason != ReasonCommand {
		worst.Object = string(args[worst.Pos])
	}
	return worst
}

// subcommandOf is the subcommand of a container args names, else cmd.
func subcommandOf(cmd *resp.Command, args [][]byte) *resp.Command {
	if len(cmd.Subcommands) == 0 || len(args) < 2 {
		return cmd
	}
	for _, sc := range cmd.Subcommands {
		if _, name, _ := strings.Cut(sc.Name, "|"); resp.EqualFold(args[1], name) {
			return sc
		}
	}
	return cmd
}

// keyCache holds a command's keys once computed, for every selector.
type keyCache struct {
	done bool
	keys []resp.KeyRef
}

func (k *keyCache) get(cmd *resp.Command, args [][]byte) []resp.KeyRef {
	if !k.done {
		k.keys, _ = cmd.GetKeys(args) // no keys when Redis finds none
		k.done = true
	}
	return k.keys
}

// check is ACLSelectorCheckCmd: 0 when allowed, else the reason and the
// argument at fault. c is nil for a command outside the engine's table.
func (s *selector) check(c *command, cmd *resp.Command, args [][]byte, cache *keyCache) (Reason, int) {
	if !s.allCommands && cmd.Flags&resp.FlagNoAuth == 0 && !s.commandAllowed(c, args) {
		return ReasonCommand, 0
	}
	if !s.allKeys {
		for _, k := range cache.get(cmd, args) {
			if !s.keyAllowed(args[k.Pos], keyPerm(k.Flags)) {
				return ReasonKey, k.Pos
			}
		}
	}
	if !s.allChannels {
		first, last, pattern := channelArgs(cmd.Name, len(args))
		for i := first; i <= last; i++ {
			if !s.channelAllowed(args[i], pattern) {
				return ReasonChannel, i
			}
		}
	}
	return 0, 0
}

// commandAllowed is the command bit, or an allowed first argument.
func (s *selector) commandAllowed(c *command, args [][]byte) bool {
	if c == nil {
		return false
	}
	if s.bit(c.id) {
		return true
	}
	idx := 1
	if c.parent >= 0 {
		idx = 2
	}
	if idx >= len(args) {
		return false
	}
	for _, a := range s.firstArgs[c.id] {
		if resp.EqualFold(args[idx], a) {
			return true
		}
	}
	return false
}

// keyPerm is the access a key's flags ask for (ACLSelectorCheckKey):
// access reads, insert, delete and update write; none asks nothing.
func keyPerm(flags []string) perm {
	var p perm
	for _, f := range flags {
		switch f {
		case "access":
			p |= permRead
		case "insert", "delete", "update":
			p |= permWrite
		}
	}
	return p
}

func (s *selector) keyAllowed(key []byte, need perm) bool {
	for _, k := range s.keys {
		if k.perm&need == need && resp.Match([]byte(k.pattern), key) {
			return true
		}
	}
	return false
}

// channelAllowed is ACLCheckChannelAgainstList: a channel matches the
// patterns as globs, a PSUBSCRIBE pattern only a pattern equal to it.
func (s *selector) channelAllowed(ch []byte, pattern bool) bool {
	for _, p := range s.channels {
		if (pattern && p == string(ch)) || (!pattern && resp.Match([]byte(p), ch)) {
			return true
		}
	}
	return false
}

// channelArgs are the channel arguments ACL checks (Redis's
// commands_with_channels, publish and subscribe only): first > last when
// the command names none.
func channelArgs(name string, n int) (first, last int, pattern bool) {
	switch name {
	case "publish", "spublish":
		return 1, min(1, n-1), false
	case "subscribe", "ssubscribe":
		return 1, n - 1, false
	case "psubscribe":
		return 1, n - 1, true
	}
	return 1, 0, false
}

// ChannelAllowed is ACLUserCheckChannelPerm: whether some selector lets
// the user publish or subscribe to ch (a PSUBSCRIBE pattern when
// pattern). The server uses it to drop subscriptions a changed user may
// no longer hold, as Redis's ACLKillPubsubClientsIfNeeded.
func (u *User) ChannelAllowed(ch []byte, pattern bool) bool {
	for _, s := range u.selectors {
		if s.allChannels || s.channelAllowed(ch, pattern) {
			return true
		}
	}
	return false
}

// DryRun is ACL DRYRUN's reply once the server has found the user and
// the command and checked the arity: OK, or the verbose denial as a bulk
// string.
func (u *User) DryRun(cmd *resp.Command, args [][]byte) resp.Value {
	if d := u.Check(cmd, args); d != nil {
		return resp.BulkString(d.DryRunText(u.Name))
	}
	return resp.OK()
}

// KeyAllowed is ACLUserCheckKeyPerm: whether some selector lets the user
// touch key with the access asked (read and/or write; neither asks only
// that some pattern matches).
func (u *User) KeyAllowed(key []byte, read, write bool) bool {
	need := accessPerm(read, write)
	for _, s := range u.selectors {
		if s.allKeys || s.keyAllowed(key, need) {
			return true
		}
	}
	return false
}

// CheckUnrestricted is ACLUserCheckCmdWithUnrestrictedKeyAccess: whether
// some selector both allows the command and grants the access asked to
// every key (allkeys, or a pattern "*" with that access). SORT asks it
// (read) before it accepts BY or GET patterns.
func (u *User) CheckUnrestricted(cmd *resp.Command, args [][]byte, read, write bool) bool {
	cmd = subcommandOf(cmd, args)
	c := u.cmds.byName[cmd.Name]
	need := accessPerm(read, write)
	var cache keyCache
	for _, s := range u.selectors {
		if r, _ := s.check(c, cmd, args, &cache); r == 0 && s.unrestricted(need) {
			return true
		}
	}
	return false
}

// unrestricted is ACLSelectorHasUnrestrictedKeyAccess.
func (s *selector) unrestricted(need perm) bool {
	if s.allKeys {
		return true
	}
	for _, k := range s.keys {
		if k.perm&need == need && k.pattern == "*" {
			return true
		}
	}
	return false
}

func accessPerm(read, write bool) perm {
	var p perm
	if read {
		p |= permRead
	}
	if write {
		p |= permWrite
	}
	return p
}
