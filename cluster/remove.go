package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotraft/slotraft/cluster/meta"
)

// ErrRemoveNode wraps the reasons RemoveNode refuses.
var ErrRemoveNode = errors.New("remove node")

// RemoveNode takes a node out of the cluster. A live node (this one
// included) is drained: the placement controller moves its replicas and
// leaderships to other nodes one at a time, then removes it from the map.
// A node that is gone for good is removed at once, instead of waiting
// DeadAfter, and its replicas are replaced.
// It reports whether the node was drained rather than removed.
func (n *Node) RemoveNode(ctx context.Context, id string) (draining bool, err error) {
	m := n.Map()
	alive := map[string]bool{}
	for pid, st := range n.GossipStates() {
		// A suspect node is most likely alive (a slow answer on a loaded
		// machine): drain it rather than remove it at once; a dead one is
		// dead or left.
		alive[pid] = st == GossipAlive || st == GossipSuspect
	}
	alive[n.self.ID] = true
	g, needed := quorumNeeds(m, id, alive)
	switch nd, ok := m.Node(id); {
	case !ok:
		return false, fmt.Errorf("%w: no node %q in the cluster map", ErrRemoveNode, id)
	case nd.State == meta.Removed:
		return false, fmt.Errorf("%w: %s was removed already", ErrRemoveNode, id)
	case alive[id]:
		return true, n.drain(ctx, id)
	case needed:
		return false, fmt.Errorf("%w: group %d has no live majority without %s: its copy is needed to restore the quorum", ErrRemoveNode, g, id)
	}
	if err := n.ProposeMeta(ctx, meta.RemoveNode{ID: id}); err != nil {
		return false, fmt.Errorf("%w: %w", ErrRemoveNode, err)
	}
	n.log.Info("node removed by an operator", "removed", id)
	return false, nil
}

// drain marks a live node draining; the controller empties and removes it.
func (n *Node) drain(ctx context.Context, id string) error {
	if err := n.ProposeMeta(ctx, meta.DrainNode{ID: id}); err != nil {
		return fmt.Errorf("%w: drain %s: %w", ErrRemoveNode, id, err)
	}
	n.log.Info("node draining by an operator", "node", id)
	return nil
}
