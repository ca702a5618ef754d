package cluster

import (
	"context"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// A group's leader makes the group's Raft membership follow the map, one
// configuration change at a time: replicas that died are removed first
// (so the quorum does not count them), new replicas join as non-voters and
// are promoted once they caught up (their data arrives by snapshot
// install, without making the group wait for them), and replicas the map
// dropped while alive are removed last. A leader the map dropped hands its
// leadership to a listed replica instead.

// memberInterval is how often a group's leader compares its Raft
// membership with the map.
const memberInterval = 250 * time.Millisecond

// promoteMaxLag is how far behind its leader a non-voter may be when it is
// promoted to voter.
const promoteMaxLag = 256

func (g *Group) memberLoop() {
	tick := time.NewTicker(memberInterval)
	defer tick.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-tick.C:
		}
		if g.raft.State() == raft.Leader {
			if err := g.reconcileMembers(); err != nil {
				g.log.Info("membership change", "err", err)
			}
		}
	}
}

// reconcileMembers makes at most one membership change toward the map.
func (g *Group) reconcileMembers() error {
	want := g.layout().replicas
	if len(want) == 0 {
		return nil
	}
	cf := g.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	servers := cf.Configuration().Servers
	n := g.node
	wanted := func(id raft.ServerID) bool {
		return slices.ContainsFunc(want, func(p Peer) bool { return p.ID == string(id) })
	}
	self := raft.ServerID(n.self.ID)
	if !wanted(self) {
		if to, ok := listedVoter(want, servers); ok {
			g.log.Info("handing off a group the map took from this node", "to", to.ID)
			return g.transferLeadership(&to)
		}
	}
	alive := n.GossipStates()
	for _, s := range servers {
		if !wanted(s.ID) && s.ID != self && alive[string(s.ID)] != GossipAlive {
			g.log.Info("removing a replica the map dropped (not alive)", "replica", s.ID)
			return g.raft.RemoveServer(s.ID, 0, 0).Error()
		}
	}
	for _, p := range want {
		if !slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raft.ServerID(p.ID) }) {
			g.log.Info("adding a replica as non-voter", "replica", p.ID)
			return g.raft.AddNonvoter(raft.ServerID(p.ID), raft.ServerAddress(p.BusAddr), 0, 0).Error()
		}
	}
	for _, s := range servers {
		if s.Suffrage != raft.Voter && wanted(s.ID) && g.caughtUp(s) {
			g.log.Info("promoting a caught-up replica to voter", "replica", s.ID)
			return g.raft.AddVoter(s.ID, s.Address, 0, 0).Error()
		}
	}
	for _, s := range servers {
		if !wanted(s.ID) && s.ID != self {
			g.log.Info("removing a replica the map dropped", "replica", s.ID)
			return g.raft.RemoveServer(s.ID, 0, 0).Error()
		}
	}
	return nil
}

// caughtUp: the server has applied about as much as this leader.
func (g *Group) caughtUp(s raft.Server) bool {
	ctx, cancel := context.WithTimeout(g.ctx, queryTimeout)
	defer cancel()
	st, err := g.node.mux.Query(ctx, string(s.Address), g.id)
	return err == nil && st.AppliedIndex+promoteMaxLag >= g.raft.AppliedIndex()
}

// listedVoter is a replica the map lists that already votes in the group.
func listedVoter(want []Peer, servers []raft.Server) (Peer, bool) {
	for _, p := range want {
		if slices.ContainsFunc(servers, func(s raft.Server) bool {
			return s.ID == raft.ServerID(p.ID) && s.Suffrage == raft.Voter
		}) {
			return p, true
		}
	}
	return Peer{}, false
}
