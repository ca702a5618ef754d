package cluster

import (
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
)

// How a cluster starts (docs/operations.md, "Bootstrap"):
//   - static: every node is given the same peer list and bootstraps the
//     meta group with it (identical configurations, which Raft allows);
//   - --bootstrap, or no peers at all: a cluster of this node alone, that
//     others join;
//   - --bootstrap-expect N: wait until gossip sees N nodes, then the one
//     with the smallest id bootstraps the meta group with those N;
//   - --join only: bootstrap nothing, wait to be added by the meta leader;
//   - --meet: bootstrap nothing until CLUSTER MEET (meet.go).
// Whoever bootstraps also proposes the initial map once it leads the meta
// group (controller.go). Raft refuses a second bootstrap of a data dir with
// state, so a restarted node never bootstraps twice.

// bootstrapExpectPoll is how often a --bootstrap-expect node looks at gossip.
const bootstrapExpectPoll = 250 * time.Millisecond

// bootPlan is the meta group's bootstrap configuration and initial map
// for this node's start mode, or nil when this node must not bootstrap
// now.
func (n *Node) bootPlan() ([]Peer, *meta.Init) {
	c := n.cfg
	if c.Meet || c.BootstrapExpect > 0 || (len(c.Join) > 0 && !c.Bootstrap) {
		return nil, nil
	}
	return c.Peers, staticInit(c.Peers, c.Groups, c.Replicas)
}

// bootstrapExpectLoop waits for BootstrapExpect nodes in gossip; the one
// with the smallest id bootstraps the meta group with the first N by id.
func (n *Node) bootstrapExpectLoop() {
	for {
		if n.meta.raft.LastIndex() > 0 {
			return // bootstrapped by another node, or restarted
		}
		if by, ok := n.gossip.memberSeen(); ok {
			// A cluster exists (this node is new to it, or lost its data):
			// wait to be added to it, never create a second one.
			n.log.Info("bootstrap-expect: a cluster exists, waiting to be added to it", "member", by)
			return
		}
		alive := n.gossip.alivePeers()
		slices.SortFunc(alive, func(a, b Peer) int { return strings.Compare(a.ID, b.ID) })
		if len(alive) >= n.cfg.BootstrapExpect {
			first := alive[:n.cfg.BootstrapExpect]
			if first[0].ID != n.self.ID {
				n.log.Debug("bootstrap-expect: waiting for the smallest id to bootstrap", "by", first[0].ID)
			} else if err := n.meta.raft.BootstrapCluster(metaServers(first)).Error(); err != nil {
				n.log.Warn("bootstrap-expect: bootstrap", "err", err)
			} else {
				n.meta.init.Store(staticInit(first, n.cfg.Groups, n.cfg.Replicas))
				n.log.Info("bootstrap-expect: bootstrapped the meta group", "nodes", len(first))
				return
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(bootstrapExpectPoll):
		}
	}
}
