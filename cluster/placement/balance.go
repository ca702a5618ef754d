package placement

import (
	"cmp"
	"maps"
	"slices"

	"github.com/slotraft/slotraft/cluster/meta"
)

// Rule 5: move one replica from a node holding at least two more than
// another. Only the add is planned here; rule 4 on a later plan removes
// the extra replica, so the move is chosen such that rule 4 will then drop
// the heavy node's replica and not undo the add (which would loop forever).
func (p *planner) balance() {
	if p.moveInFlight() {
		// One move at a time across plans too, not only within one.
		return
	}
	cands := p.candidates()
	ld := loadOf(p.m)
	if p.drainMove(cands, ld) {
		return
	}
	heavy := slices.Clone(cands)
	slices.SortFunc(heavy, func(a, b string) int {
		if ld.replicas[a] != ld.replicas[b] {
			return ld.replicas[b] - ld.replicas[a]
		}
		return cmp.Compare(b, a)
	})
	light := slices.Clone(cands)
	slices.SortFunc(light, func(a, b string) int {
		if lighter(ld, a, b) {
			return -1
		}
		if lighter(ld, b, a) {
			return 1
		}
		return 0
	})
	for _, hi := range heavy {
		for _, lo := range light {
			if ld.replicas[hi]-ld.replicas[lo] < 2 {
				break
			}
			if p.move(hi, lo, ld) {
				return
			}
		}
	}
}

// moveInFlight reports whether some group is above the wanted size: a
// previous move whose removal half has not happened yet.
func (p *planner) moveInFlight() bool {
	for _, g := range p.m.Groups {
		if len(g.Replicas) > p.in.Replicas {
			return true
		}
	}
	return false
}

// move adds lo to the lowest settled full-size group that hi replicates, lo
// does not, and from which rule 4 would then drop hi.
func (p *planner) move(hi, lo string, ld load) bool {
	after := load{replicas: maps.Clone(ld.replicas), firsts: ld.firsts}
	after.replicas[lo]++
	for _, g := range p.groups() {
		if !p.in.Settled[g.ID] || p.changed[g.ID] || len(g.Replicas) != p.in.Replicas {
			continue
		}
		if !slices.Contains(g.Replicas, hi) || slices.Contains(g.Replicas, lo) {
			continue
		}
		next := append(slices.Clone(g.Replicas), lo)
		if pickDrop(next, p.isCandidate, after) != hi {
			continue
		}
		return p.setReplicas(g, next)
	}
	return false
}

// Rule 6: spread preferred leaders (first replicas), one group per plan.
// A group led by a node that is down comes first; then a node leading at
// least two more groups than one of its fellow replicas hands one over;
// failing that, a node leading the most hands one along a chain
// (relayLeader). Requiring a gap of two makes each step strictly even
// things out, so repeated plans settle instead of swapping leaders back and
// forth; it also covers "more than ceil(G/N)", since such a node always
// leads two more than some other candidate.
func (p *planner) spreadLeaders() {
	ld := loadOf(p.m)
	if p.promoteFromDown(ld) {
		return
	}
	heavy := p.candidates()
	slices.SortFunc(heavy, func(a, b string) int {
		if ld.firsts[a] != ld.firsts[b] {
			return ld.firsts[b] - ld.firsts[a]
		}
		return cmp.Compare(a, b)
	})
	groups := p.groups()
	for _, hi := range heavy {
		for _, g := range groups {
			if !p.mayReorder(g) || g.Replicas[0] != hi {
				continue
			}
			to := p.leastLeading(g.Replicas, ld)
			if to != "" && ld.firsts[to] <= ld.firsts[hi]-2 {
				p.promote(g, to)
				return
			}
		}
	}
	p.relayLeader(ld)
}

// hop records how relayLeader reached a node: from leads group, where the
// node is a replica. Sources have an empty from.
type hop struct {
	from  string
	group meta.Group
}

// relayLeader handles a node leading the most groups when none of its
// groups holds a replica that leads two fewer: it finds the shortest chain
// max -g1-> x -g2-> ... -> light (each node leads the group holding the
// next) and takes the first step, handing g1 to x. x then leads as many
// groups as the max did and is one step closer to the light node, so later
// plans walk the chain instead of trading leaders back and forth.
func (p *planner) relayLeader(ld load) bool {
	cands := p.candidates()
	if len(cands) == 0 {
		return false
	}
	top := slices.MaxFunc(cands, func(a, b string) int { return ld.firsts[a] - ld.firsts[b] })
	maxF := ld.firsts[top]
	led := p.ledGroups()
	via := map[string]hop{}
	var queue []string
	for _, c := range cands {
		if ld.firsts[c] == maxF {
			via[c] = hop{}
			queue = append(queue, c)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, g := range led[u] {
			for _, r := range g.Replicas[1:] {
				if _, seen := via[r]; seen || !p.isCandidate(r) {
					continue
				}
				via[r] = hop{from: u, group: g}
				if ld.firsts[r] <= maxF-2 {
					return p.firstStep(via, r)
				}
				queue = append(queue, r)
			}
		}
	}
	return false
}

// firstStep walks the chain ending at r back to its source and promotes the
// node the source hands its group to.
func (p *planner) firstStep(via map[string]hop, r string) bool {
	for via[via[r].from].from != "" {
		r = via[r].from
	}
	return p.promote(via[r].group, r)
}

// ledGroups are the groups rule 6 may reorder, by their live leader, in id
// order.
func (p *planner) ledGroups() map[string][]meta.Group {
	led := map[string][]meta.Group{}
	for _, g := range p.groups() {
		if p.mayReorder(g) && p.isCandidate(g.Replicas[0]) {
			led[g.Replicas[0]] = append(led[g.Replicas[0]], g)
		}
	}
	return led
}

// promoteFromDown gives the lowest group whose first replica is not a
// candidate a live preferred leader.
func (p *planner) promoteFromDown(ld load) bool {
	for _, g := range p.groups() {
		if !p.mayReorder(g) || p.isCandidate(g.Replicas[0]) {
			continue
		}
		if to := p.leastLeading(g.Replicas, ld); to != "" {
			return p.promote(g, to)
		}
	}
	return false
}

func (p *planner) mayReorder(g meta.Group) bool {
	return p.in.Settled[g.ID] && !p.changed[g.ID] && len(g.Replicas) > 1
}

// leastLeading is the candidate replica leading the fewest groups (ties:
// smaller id); "" if none is a candidate.
func (p *planner) leastLeading(replicas []string, ld load) string {
	best := ""
	for _, r := range replicas {
		if !p.isCandidate(r) {
			continue
		}
		if best == "" || ld.firsts[r] < ld.firsts[best] || (ld.firsts[r] == ld.firsts[best] && r < best) {
			best = r
		}
	}
	return best
}

// promote moves to to the front of g's replicas, keeping the others' order.
func (p *planner) promote(g meta.Group, to string) bool {
	return p.setReplicas(g, toFront(g.Replicas, to))
}

// toFront is a copy of ids with id first, the others in their order.
func toFront(ids []string, id string) []string {
	return append([]string{id}, slices.DeleteFunc(slices.Clone(ids), func(r string) bool { return r == id })...)
}
