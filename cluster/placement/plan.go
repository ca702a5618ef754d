package placement

import (
	"cmp"
	"slices"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
)

// Input is what the controller knows at one moment.
type Input struct {
	Map      *meta.Map
	Replicas int             // replication factor wanted per group (>=1)
	Alive    map[string]bool // gossip: nodes alive now (ids); missing = not alive
	// Joiners are alive gossip members that are not members in the map
	// (not IsActive: new nodes or removed ones that came back), with their
	// addresses.
	Joiners []meta.Node
	// DownFor is, for members (Active or Draining) not alive, how long
	// they have been down as far as the controller knows. A node missing
	// here is never removed.
	DownFor   map[string]time.Duration
	DeadAfter time.Duration // remove a node down at least this long; <=0 disables removal
	// Settled marks groups whose Raft membership matches the map and whose
	// replicas have all caught up: only they get replica changes.
	Settled map[uint32]bool
	// Groups is the number of slot groups wanted: while the map has fewer,
	// each Plan creates one (AddGroup). 0 never creates groups.
	Groups int
	// MaxMigrations caps the slot migrations recorded in the map at once
	// while slots are balanced; <=0 means 16.
	MaxMigrations int
	// UIDs are the data directory ids alive nodes announce in gossip
	// (missing or "": not announced, as by an older release).
	UIDs map[string]string
}

// Plan returns the commands to propose now, in order. It plans at most one
// SetReplicas per group and at most one move (an add to a group already at
// full size) in the whole plan, so the cluster changes calmly; the
// controller calls Plan again after applying. After the replica rules come
// the drained nodes' removal, then one AddGroup or else the slot
// migrations (see slots.go).
func Plan(in Input) []meta.Command {
	if in.Map == nil {
		return nil
	}
	p := newPlanner(in)
	p.checkIdentities()
	p.addJoiners()
	p.removeDead()
	if in.Replicas < 1 {
		// A bad factor must not shrink every group to nothing.
		return p.out
	}
	p.repair()
	if len(p.changed) == 0 {
		p.balance()
	}
	p.spreadLeaders()
	p.removeDrained()
	if !p.addGroup() {
		// Slots wait until the groups are all created, so each moves once.
		p.balanceSlots()
	}
	return p.out
}

// planner carries a working copy of the map: the map as it will be once
// the commands planned so far are applied, so later rules see their effect.
type planner struct {
	in      Input
	m       *meta.Map
	alive   map[string]bool
	changed map[uint32]bool // groups that already got a SetReplicas
	out     []meta.Command
}

func newPlanner(in Input) *planner {
	alive := make(map[string]bool, len(in.Alive)+len(in.Joiners))
	for id, ok := range in.Alive {
		if ok {
			alive[id] = true
		}
	}
	// Joiners are alive gossip members by definition.
	for _, nd := range in.Joiners {
		alive[nd.ID] = true
	}
	return &planner{in: in, m: in.Map, alive: alive, changed: map[uint32]bool{}}
}

// propose applies cmd to the working map and records it. A command the
// FSM would reject, or one that changes nothing (Apply then returns the
// same map), is left out rather than proposed again every tick.
func (p *planner) propose(cmd meta.Command) bool {
	m, err := meta.Apply(p.m, cmd)
	if err != nil || m == p.m {
		return false
	}
	p.m = m
	p.out = append(p.out, cmd)
	if sr, ok := cmd.(meta.SetReplicas); ok {
		p.changed[sr.Group] = true
	}
	return true
}

// setReplicas proposes a new replica list for g, expecting its current one.
func (p *planner) setReplicas(g meta.Group, replicas []string) bool {
	return p.propose(meta.SetReplicas{Group: g.ID, Replicas: replicas, Expect: slices.Clone(g.Replicas)})
}

// Rule 0: a member that announces another data directory id than the map
// records lost its data (a new volume, a wiped disk): its old incarnation
// is removed at once (its replicas are replaced, and it comes back as a
// joiner, a new member, at the next plan); a member whose id the map does
// not know yet gets it recorded.
func (p *planner) checkIdentities() {
	for _, nd := range p.m.ActiveNodes() {
		uid := p.in.UIDs[nd.ID]
		switch {
		case uid == "" || uid == nd.UID:
		case nd.UID == "":
			p.propose(meta.SetUID{ID: nd.ID, UID: uid})
		case len(p.m.ActiveNodes()) > 1:
			p.propose(meta.RemoveNode{ID: nd.ID})
			delete(p.alive, nd.ID) // not a member until it is added again
		}
	}
}

// Rule 1: admit every joiner.
func (p *planner) addJoiners() {
	js := slices.Clone(p.in.Joiners)
	slices.SortStableFunc(js, func(a, b meta.Node) int { return cmp.Compare(a.ID, b.ID) })
	for _, nd := range js {
		p.propose(meta.AddNode{Node: nd})
	}
}

// Rule 2: remove nodes down for at least DeadAfter, never an alive one and
// never the last Active node (the map must keep someone to run it).
func (p *planner) removeDead() {
	if p.in.DeadAfter <= 0 {
		return
	}
	for _, nd := range p.m.ActiveNodes() {
		down, known := p.in.DownFor[nd.ID]
		if p.alive[nd.ID] || !known || down < p.in.DeadAfter {
			continue
		}
		if len(p.m.ActiveNodes()) <= 1 {
			return
		}
		p.propose(meta.RemoveNode{ID: nd.ID})
	}
}

// Rules 3 and 4: bring every settled group to its target size, one
// replica per group per plan.
func (p *planner) repair() {
	cands := p.candidates()
	target := min(p.in.Replicas, len(cands))
	for _, g := range p.groups() {
		if !p.in.Settled[g.ID] || p.changed[g.ID] {
			continue
		}
		switch {
		case len(g.Replicas) == 0:
			// Nobody hosts it: a new replica could not bootstrap it (only
			// Boot may), so it is left for an operator to see.
		case len(g.Replicas) < target:
			if to := pickAdd(g.Replicas, cands, loadOf(p.m)); to != "" {
				// Appended: an empty replica must not be preferred leader.
				p.setReplicas(g, append(slices.Clone(g.Replicas), to))
			}
		case len(g.Replicas) > p.in.Replicas:
			p.dropOne(g)
		}
	}
}

// dropOne removes the replica pickDrop chooses from an over-replicated
// group. A live first replica (a draining node: pickDrop drops a live
// candidate first only when it is the sole choice) hands its leadership
// over first, so the group's writes need no election.
func (p *planner) dropOne(g meta.Group) {
	ld := loadOf(p.m)
	drop := pickDrop(g.Replicas, p.isCandidate, ld)
	if drop == g.Replicas[0] && p.alive[drop] {
		if to := p.leastLeading(g.Replicas, ld); to != "" {
			p.promote(g, to)
			return
		}
	}
	p.setReplicas(g, slices.DeleteFunc(slices.Clone(g.Replicas), func(r string) bool { return r == drop }))
}

// candidates are the nodes that may take replicas and leaderships: Active
// (not draining) and alive, by id.
func (p *planner) candidates() []string {
	var out []string
	for _, nd := range p.m.ActiveNodes() {
		if p.isCandidate(nd.ID) {
			out = append(out, nd.ID)
		}
	}
	return out
}

func (p *planner) isCandidate(id string) bool {
	return p.alive[id] && p.m.IsActive(id) && !p.m.IsDraining(id)
}

// groups are the working map's groups by id. The slice is a snapshot: a
// caller that proposes while iterating relies on each command changing
// only the group at hand, which it never revisits.
func (p *planner) groups() []meta.Group {
	gs := slices.Clone(p.m.Groups)
	slices.SortFunc(gs, func(a, b meta.Group) int { return cmp.Compare(a.ID, b.ID) })
	return gs
}

// load counts, per node, the replicas it holds and the groups it leads
// (is first in).
type load struct {
	replicas map[string]int
	firsts   map[string]int
}

func loadOf(m *meta.Map) load {
	ld := load{replicas: map[string]int{}, firsts: map[string]int{}}
	for _, g := range m.Groups {
		for i, r := range g.Replicas {
			ld.replicas[r]++
			if i == 0 {
				ld.firsts[r]++
			}
		}
	}
	return ld
}

// pickAdd is the candidate outside replicas with the fewest replicas, then
// the fewest groups led, then the smallest id; "" if none.
func pickAdd(replicas, cands []string, ld load) string {
	best := ""
	for _, c := range cands {
		if slices.Contains(replicas, c) {
			continue
		}
		if best == "" || lighter(ld, c, best) {
			best = c
		}
	}
	return best
}

// lighter orders nodes for receiving a replica.
func lighter(ld load, a, b string) bool {
	if ld.replicas[a] != ld.replicas[b] {
		return ld.replicas[a] < ld.replicas[b]
	}
	if ld.firsts[a] != ld.firsts[b] {
		return ld.firsts[a] < ld.firsts[b]
	}
	return a < b
}

// pickDrop chooses the replica to remove from an over-replicated group.
// A replica that is not a candidate (down) goes first: it serves nothing,
// and dropping it costs no leader change even when it is listed first.
// Among live ones the first (preferred leader) is kept when possible, then
// the most loaded node (ties: larger id) gives one up.
func pickDrop(replicas []string, isCand func(string) bool, ld load) string {
	best, bestI := "", -1
	for i, r := range replicas {
		if bestI < 0 || dropBefore(ld, isCand, i, r, bestI, best) {
			best, bestI = r, i
		}
	}
	return best
}

func dropBefore(ld load, isCand func(string) bool, i int, a string, j int, b string) bool {
	if ca, cb := isCand(a), isCand(b); ca != cb {
		return !ca
	}
	if (i == 0) != (j == 0) {
		return j == 0
	}
	if ld.replicas[a] != ld.replicas[b] {
		return ld.replicas[a] > ld.replicas[b]
	}
	return a > b
}
