package placement

import (
	"slices"

	"github.com/slotraft/slotraft/cluster/meta"
)

// Draining nodes are no candidates, so repair never adds them, pickDrop
// drops them first, and spreadLeaders moves leadership off them as off a
// dead node. What is left is to move their replicas away and, once they
// hold none, to remove them.

// drainMove starts moving one replica off a draining node: it adds a
// candidate to the lowest settled group that lists a draining node and is
// not above the wanted size. Rule 4 drops the draining replica on a later
// plan, as it drops non-candidates first, so the group never has fewer
// replicas than before. Without a candidate outside the group the draining
// replica stays: it still serves, and leaving is not worth a missing copy.
func (p *planner) drainMove(cands []string, ld load) bool {
	for _, g := range p.groups() {
		if !p.in.Settled[g.ID] || p.changed[g.ID] || len(g.Replicas) > p.in.Replicas {
			continue
		}
		if !slices.ContainsFunc(g.Replicas, p.m.IsDraining) {
			continue
		}
		if to := pickAdd(g.Replicas, cands, ld); to != "" {
			return p.setReplicas(g, append(slices.Clone(g.Replicas), to))
		}
	}
	return false
}

// Rule 7: remove draining nodes that no group lists any more. It waits for
// a plan that changes no replica set and for every hosted group to be
// settled, so no group's Raft still counts the node as a voter when it is
// removed; and it keeps the last member, as removeDead does.
func (p *planner) removeDrained() {
	if len(p.changed) > 0 || !p.hostedSettled() {
		return
	}
	for _, nd := range p.m.Nodes {
		if nd.State != meta.Draining || len(p.m.HostedBy(nd.ID)) > 0 {
			continue
		}
		if len(p.m.ActiveNodes()) <= 1 {
			return
		}
		p.propose(meta.RemoveNode{ID: nd.ID})
	}
}

// hostedSettled reports whether every group with replicas is settled.
func (p *planner) hostedSettled() bool {
	for _, g := range p.m.Groups {
		if len(g.Replicas) > 0 && !p.in.Settled[g.ID] {
			return false
		}
	}
	return true
}
