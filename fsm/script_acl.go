package fsm

import (
	"bytes"
	"log/slog"

	"github.com/slotraft/slotraft/acl"
)

// A script's calls are checked against the permissions of the client that
// ran it (Redis's scriptVerifyACL): the user travels in the log entry
// (Entry.User, acl.User.Perms) so that every replica checks the same calls
// the same way, whatever users its own node has applied by then. Reads
// give the user directly (ReadOpts.User). No user means one allowed
// everything: nothing is checked.

// ScriptDenial is a command a script called that its caller's user may
// not run: the script got "ACL failure in script", and the node that
// answers the client logs it in ACL LOG (context lua).
type ScriptDenial struct {
	acl.Denial
}

// UserParser rebuilds a user from the permissions an entry carries
// (acl.UserFromPerms with the front end's command table).
type UserParser func(perms []byte) (*acl.User, error)

// SetUserParser sets how entries' users are rebuilt. An entry with a
// user, applied without a parser or with permissions that do not parse,
// has every script call denied: closed, never open.
func (f *FSM) SetUserParser(parse UserParser) { f.state.setUserParser(parse) }

func (s *State) setUserParser(parse UserParser) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users.parse = parse
}

// userCache keeps the last user rebuilt: a client runs many scripts as
// one user, and parsing rules costs more than the check.
type userCache struct {
	parse UserParser
	perms []byte
	user  *acl.User // nil: the permissions did not parse
}

// scriptUser is the user of an entry's scripts; nil perms, nil user.
// Called under the write lock (Apply).
func (s *State) scriptUser(perms []byte) (*acl.User, bool) {
	if perms == nil {
		return nil, false
	}
	uc := &s.users
	if uc.perms != nil && bytes.Equal(uc.perms, perms) {
		return uc.user, uc.user == nil
	}
	var u *acl.User
	if uc.parse != nil {
		var err error
		if u, err = uc.parse(perms); err != nil {
			slog.Error("a log entry's user does not parse: its scripts may call no command", "group", s.group, "err", err)
			u = nil
		}
	}
	uc.perms, uc.user = bytes.Clone(perms), u
	return u, u == nil
}

// checkCall is the ACL check of a command a script calls (arity known
// good): nil when allowed. A denial is kept for the outcome.
func (c *Ctx) checkCall(cmd *Command, args [][]byte) *acl.Denial {
	if c == nil || (c.user == nil && !c.userBroken) {
		return nil
	}
	var d *acl.Denial
	if c.userBroken {
		d = &acl.Denial{Reason: acl.ReasonCommand, Command: cmd.Meta.Name, Object: cmd.Meta.Name}
	} else if d = c.user.Check(cmd.Meta, args); d == nil {
		return nil
	}
	c.denials = append(c.denials, ScriptDenial{Denial: *d})
	return d
}

// allowsCall is redis.acl_check_cmd: whether the caller's user may run
// args, logging nothing.
func (c *Ctx) allowsCall(cmd *Command, args [][]byte) bool {
	switch {
	case c == nil || (c.user == nil && !c.userBroken):
		return true
	case c.userBroken:
		return false
	}
	return c.user.Check(cmd.Meta, args) == nil
}

// userName is the caller's name in denial messages.
func (c *Ctx) userName() string {
	if c.user == nil {
		return "?"
	}
	return c.user.Name
}
