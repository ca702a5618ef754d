package server

import (
	"context"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
)

// The commands a script calls are checked against the user of the client
// that ran it (fsm/script_acl.go), as Redis's scriptVerifyACL: a write's
// entry carries the user's permissions (cluster.WithScriptUser), a read
// gives the user (fsm.ReadOpts.User). A user allowed everything carries
// nothing and nothing is checked. The denials come back in the outcome
// and are logged here, in ACL LOG with context lua.

// scriptPerms are c's user's permissions when they are restricted; nil
// for a user allowed everything (or no client: the server's own
// proposals). Connection goroutine only.
func (c *client) scriptPerms() []byte {
	u := scriptUserOf(c)
	if u == nil {
		return nil
	}
	if c.acl.permsOf != u {
		c.acl.perms, c.acl.permsOf = u.Perms(), u
	}
	return c.acl.perms
}

// scriptUserOf is c's user if its scripts' calls are to be checked.
func scriptUserOf(c *client) *acl.User {
	if c == nil || c.acl.user == nil || c.acl.user.AllowsAll() {
		return nil
	}
	return c.acl.user
}

// withScriptUser marks the proposal of batch for c with c's permissions
// when a command of it runs scripts (EXEC may queue some).
func withScriptUser(ctx context.Context, c *client, batch [][][]byte) context.Context {
	if scriptUserOf(c) == nil || !runsScripts(batch) {
		return ctx
	}
	return cluster.WithScriptUser(ctx, c.scriptPerms())
}

func runsScripts(batch [][][]byte) bool {
	for _, args := range batch {
		if len(args) == 0 {
			continue
		}
		if cmd := fsm.Lookup(args[0]); cmd != nil && (cmd.Script != nil || cmd.Meta.Name == "exec") {
			return true
		}
	}
	return false
}

// noteScriptDenials logs the calls o's scripts were refused.
func (s *Server) noteScriptDenials(c *client, o fsm.Outcome) {
	if c == nil {
		return
	}
	for i := range o.Denials {
		d := &o.Denials[i].Denial
		s.aclNote(c, d, acl.ContextLua, d.Object, c.acl.name)
	}
}
