package cluster

import (
	"bytes"
	"context"

	"github.com/slotraft/slotraft/acl"
)

// Scripts call commands as the client that ran them (fsm/script_acl.go):
// a proposal made for a client whose user is restricted, of commands that
// run scripts, carries the user's permissions (acl.User.Perms) in its
// context; the proposer puts them in the entry (fsm.Entry.User) and
// batches only proposals of the same permissions together.

type scriptUserKey struct{}

// WithScriptUser marks ctx's proposals as made for a user with these
// permissions (acl.User.Perms); nil for a user allowed everything.
func WithScriptUser(ctx context.Context, perms []byte) context.Context {
	if perms == nil {
		return ctx
	}
	return context.WithValue(ctx, scriptUserKey{}, perms)
}

func scriptUserFrom(ctx context.Context) []byte {
	p, _ := ctx.Value(scriptUserKey{}).([]byte)
	return p
}

// sameUser reports whether two proposals may share an entry.
func sameUser(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// parseScriptUser rebuilds an entry's user with the front end's command
// table, waiting for it if the front end has not given it yet (as the
// meta group's ACL entries do).
func (n *Node) parseScriptUser(perms []byte) (*acl.User, error) {
	return acl.UserFromPerms(n.meta.fsm.AwaitACLCommands(), perms)
}
