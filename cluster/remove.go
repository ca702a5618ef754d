package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotraft/slotraft/cluster/meta"
)

// ErrRemoveNode wraps the reasons RemoveNode refuses.
var ErrRemoveNode = errors.New("remove node")

// RemoveNode takes a node that is gone for good out of the cluster map at
// once, instead of waiting DeadAfter: the placement controller then
// replaces its replicas. A node gossip sees alive is refused: it would
// rejoin as a new member at once (make it leave and stop it first).
func (n *Node) RemoveNode(ctx context.Context, id string) error {
	m := n.Map()
	alive := map[string]bool{}
	for pid, st := range n.GossipStates() {
		alive[pid] = st == GossipAlive
	}
	g, needed := quorumNeeds(m, id, alive)
	switch nd, ok := m.Node(id); {
	case id == n.self.ID:
		return fmt.Errorf("%w: %s is this node (run it on another node)", ErrRemoveNode, id)
	case !ok:
		return fmt.Errorf("%w: no node %q in the cluster map", ErrRemoveNode, id)
	case nd.State == meta.Removed:
		return fmt.Errorf("%w: %s was removed already", ErrRemoveNode, id)
	case n.GossipStates()[id] == GossipAlive:
		return fmt.Errorf("%w: %s is alive: stop it first (slotraft admin leave on it)", ErrRemoveNode, id)
	case needed:
		return fmt.Errorf("%w: group %d has no live majority without %s: its copy is needed to restore the quorum", ErrRemoveNode, g, id)
	}
	if err := n.ProposeMeta(ctx, meta.RemoveNode{ID: id}); err != nil {
		return fmt.Errorf("%w: %w", ErrRemoveNode, err)
	}
	n.log.Info("node removed by an operator", "removed", id)
	return nil
}
