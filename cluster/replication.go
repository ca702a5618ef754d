package cluster

import (
	"context"
	"sync"
	"time"
)

// Replication progress of the groups led here, for the front end's ROLE
// and WAIT: how far each follower has applied the group's log. Raft does
// not publish a leader's match indexes, so each follower is asked with
// the bus's control query (the same one leader discovery uses).

// FollowerProgress is how far one follower of a group has applied its log.
type FollowerProgress struct {
	Peer    Peer
	Applied uint64
	Err     error // the follower did not answer (down, leaving, not ready)
}

// Followers asks every replica of g other than this node, in parallel
// (queryTimeout each), for its applied index. The order is the group's
// replica order.
func (g *Group) Followers(ctx context.Context) []FollowerProgress {
	self := g.node.self.ID
	var out []FollowerProgress
	for _, p := range g.layout().replicas {
		if p.ID != self {
			out = append(out, FollowerProgress{Peer: p})
		}
	}
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, queryTimeout)
			defer cancel()
			st, err := g.node.mux.Query(qctx, out[i].Peer.BusAddr, g.id)
			out[i].Applied, out[i].Err = st.AppliedIndex, err
		})
	}
	wg.Wait()
	return out
}

// ElectionTimeout is how long the groups' followers wait for a silent
// leader before they elect another (the Sentinel facade's
// down-after-milliseconds).
func (n *Node) ElectionTimeout() time.Duration { return n.cfg.raftConfig().ElectionTimeout }

// KnownTerm is g's Raft term: this replica's, or, for a group not hosted
// here, the first replica's that answers (0 if none does).
func (g *Group) KnownTerm(ctx context.Context) uint64 {
	if g.Local() {
		return g.raft.CurrentTerm()
	}
	for _, p := range g.layout().replicas {
		qctx, cancel := context.WithTimeout(ctx, queryTimeout)
		st, err := g.node.mux.Query(qctx, p.BusAddr, g.id)
		cancel()
		if err == nil && st.Term > 0 {
			return st.Term
		}
	}
	return 0
}
