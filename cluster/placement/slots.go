package placement

import (
	"cmp"
	"slices"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

// defaultMaxMigrations is Input.MaxMigrations when unset: enough to keep
// the groups busy, few enough that a slot's ASK window stays short.
const defaultMaxMigrations = 16

// Rule 8: while the map has fewer than in.Groups groups, create one, on the
// in.Replicas least loaded candidates, the one leading fewest first. One
// per plan: the next plan sees its load.
func (p *planner) addGroup() bool {
	if p.in.Groups <= len(p.m.Groups) {
		return false
	}
	cands := p.candidates()
	if len(cands) < p.in.Replicas {
		// A group created short of replicas would only wait for repair.
		return false
	}
	ld := loadOf(p.m)
	var reps []string
	for range p.in.Replicas {
		to := pickAdd(reps, cands, ld)
		reps = append(reps, to)
		ld.replicas[to]++
	}
	reps = toFront(reps, p.leastLeading(reps, ld))
	return p.propose(meta.AddGroup{Group: meta.Group{ID: p.nextGroupID(), Replicas: reps}})
}

// nextGroupID is one more than the largest group id.
func (p *planner) nextGroupID() uint32 {
	var top uint32
	for _, g := range p.m.Groups {
		top = max(top, g.ID)
	}
	return top + 1
}

// Rule 9: while the map asks for a rebalance, start slot migrations until
// every group with replicas owns floor(S/G) or ceil(S/G) of their S slots,
// counting recorded migrations as done, and at most MaxMigrations are
// recorded at once. Once balanced with nothing in flight, it clears the
// request. Groups without replicas neither give nor take: nobody could
// move their keys.
func (p *planner) balanceSlots() {
	if !p.m.Rebalance {
		return
	}
	gs := p.slotGroups()
	count := p.projectedCounts()
	if balancedSlots(gs, count) {
		if len(p.m.Migrations) == 0 {
			p.propose(meta.SetRebalance{On: false})
		}
		return
	}
	limit := p.in.MaxMigrations
	if limit <= 0 {
		limit = defaultMaxMigrations
	}
	target := slotTargets(gs, count)
	// Sources and receivers pair up in id order, and a pair goes on until
	// one side is done: a receiver gets long runs of slots from few
	// sources, so its ranges stay few, and the next plan picks up the same
	// pair where this one stopped.
	from, to := 0, 0
	for len(p.m.Migrations) < limit {
		for from < len(gs) && count[gs[from]] <= target[gs[from]] {
			from++
		}
		for to < len(gs) && count[gs[to]] >= target[gs[to]] {
			to++
		}
		if from == len(gs) || to == len(gs) {
			return
		}
		slot, ok := p.topFreeSlot(gs[from])
		if !ok {
			from++ // all it owns is moving already: wait for those
			continue
		}
		if !p.propose(meta.StartMigration{Slot: slot, From: gs[from], To: gs[to]}) {
			return
		}
		count[gs[from]]--
		count[gs[to]]++
	}
}

// slotGroups are the ids, in order, of the groups that have replicas.
func (p *planner) slotGroups() []uint32 {
	var out []uint32
	for _, g := range p.groups() {
		if len(g.Replicas) > 0 {
			out = append(out, g.ID)
		}
	}
	return out
}

// projectedCounts is each group's slot count once the recorded migrations
// are finished.
func (p *planner) projectedCounts() map[uint32]int {
	count := map[uint32]int{}
	for _, g := range p.m.Groups {
		count[g.ID] = p.m.SlotCount(g.ID)
	}
	for _, mg := range p.m.Migrations {
		count[mg.From]--
		count[mg.To]++
	}
	return count
}

// balancedSlots reports whether the groups' counts differ by at most one.
func balancedSlots(gs []uint32, count map[uint32]int) bool {
	if len(gs) == 0 {
		return true
	}
	lo, hi := count[gs[0]], count[gs[0]]
	for _, id := range gs[1:] {
		lo, hi = min(lo, count[id]), max(hi, count[id])
	}
	return hi-lo <= 1
}

// slotTargets gives each group floor(S/G) slots and the remainder, one
// each, to the groups owning the most (ties: smaller id), so that no slot
// moves only to trade a group's extra slot for another's.
func slotTargets(gs []uint32, count map[uint32]int) map[uint32]int {
	total := 0
	for _, id := range gs {
		total += count[id]
	}
	byCount := slices.Clone(gs)
	slices.SortFunc(byCount, func(a, b uint32) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	target := map[uint32]int{}
	for i, id := range byCount {
		target[id] = total / len(gs)
		if i < total%len(gs) {
			target[id]++
		}
	}
	return target
}

// topFreeSlot is the highest slot group gid owns that is not migrating:
// giving slots from the top keeps the source's ranges contiguous.
func (p *planner) topFreeSlot(gid uint32) (uint16, bool) {
	g, _ := p.m.Group(gid)
	rs := slots.Merge(g.Ranges)
	for i := len(rs) - 1; i >= 0; i-- {
		for s := int(rs[i].End); s >= int(rs[i].Start); s-- {
			if _, moving := p.m.Migration(uint16(s)); !moving {
				return uint16(s), true
			}
		}
	}
	return 0, false
}
