package cluster

import (
	"context"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster/meta"
)

// The ACL users are cluster state in the meta group (cluster/meta's
// ACLState); the front end checks them and proposes their changes.

// SetACLCommands gives the meta group the command table ACL rules apply
// to. The front end calls it before it serves; the meta group's ACL
// entries wait for it.
func (n *Node) SetACLCommands(cmds *acl.Commands) { n.meta.fsm.SetACLCommands(cmds) }

// ACL is the replicated user set as this node has applied it.
func (n *Node) ACL() *meta.ACLState { return n.meta.fsm.ACL() }

// ACLChanged is closed at the next change of the user set.
func (n *Node) ACLChanged() <-chan struct{} { return n.meta.fsm.ACLChanged() }

// aclLocalWait bounds waiting for this node's replica to apply a change
// the meta leader applied.
const aclLocalWait = 2 * time.Second

// ProposeACL applies an ACL change (meta.ACLSetUser, ACLDelUsers,
// ACLLoad) through the meta group, then waits until this node's replica
// has applied it too, so the connection that asked sees its change in its
// next command. The error is ProposeMeta's, or the change's own (an
// *acl.RuleError, acl.ErrDefaultUser…; as text when another node led).
func (n *Node) ProposeACL(ctx context.Context, cmd meta.Command) error {
	index, err := n.proposeMetaAt(ctx, cmd)
	if err != nil || index == 0 {
		return err
	}
	deadline := time.Now().Add(aclLocalWait)
	for n.meta.fsm.Applied() < index && time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-n.ACLChanged():
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}
