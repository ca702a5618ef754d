package placement

import (
	"reflect"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

func rg(pairs ...uint16) []slots.Range {
	var out []slots.Range
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, slots.Range{Start: pairs[i], End: pairs[i+1]})
	}
	return out
}

func addGroup(id uint32, replicas string) meta.AddGroup {
	return meta.AddGroup{Group: meta.Group{ID: id, Replicas: strings.Fields(replicas)}}
}

// starts are the StartMigrations of slots from one group to another.
func starts(from, to uint32, slotList ...uint16) []meta.Command {
	var out []meta.Command
	for _, s := range slotList {
		out = append(out, meta.StartMigration{Slot: s, From: from, To: to})
	}
	return out
}

func mig(slot uint16, from, to uint32) meta.Migration {
	return meta.Migration{Slot: slot, From: from, To: to}
}

func cat(parts ...[]meta.Command) []meta.Command {
	var out []meta.Command
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func wantGroups(n int) func(*Input)    { return func(in *Input) { in.Groups = n } }
func maxMigrations(n int) func(*Input) { return func(in *Input) { in.MaxMigrations = n } }

// draining marks nodes of m Draining.
func draining(m *meta.Map, ids ...string) *meta.Map {
	for i := range m.Nodes {
		for _, id := range ids {
			if m.Nodes[i].ID == id {
				m.Nodes[i].State = meta.Draining
			}
		}
	}
	return m
}

func TestAddGroup(t *testing.T) {
	two := mkMap("a b c d e f", "a b c", "d e f")
	gapped := mkMap("a b c d e f", "a b c", "d e f")
	gapped.Groups[1].ID = 7
	runPlan(t, []planCase{
		{"one group on the least loaded", with(input(two, "a b c d e f"), wantGroups(3)),
			[]meta.Command{addGroup(3, "b c e")}},
		{"one per plan", with(input(two, "a b c d e f"), wantGroups(9)),
			[]meta.Command{addGroup(3, "b c e")}},
		{"the one leading fewest first", with(input(mkMap("a b c d", "c a b", "d a b"), "a b c d"), wantGroups(3)),
			[]meta.Command{addGroup(3, "a c d")}},
		{"id after the largest", with(input(gapped, "a b c d e f"), wantGroups(3)),
			[]meta.Command{addGroup(8, "b c e")}},
		{"as many as wanted", with(input(two, "a b c d e f"), wantGroups(2)), nil},
		{"fewer wanted than there are", with(input(two, "a b c d e f"), wantGroups(1)), nil},
		{"too few live nodes", with(input(mkMap("a b c", "a b c"), "a b"), wantGroups(2)), nil},
		{"draining nodes do not count", with(input(draining(mkMap("a b c", "a b c"), "c"), "a b c"), wantGroups(2)), nil},
		// d also starts taking c's replica of group 1 (after which a, b
		// and d hold one each).
		{"draining and dead nodes get none", with(input(draining(mkMap("a b c d e", "a b c"), "c"), "a b c d"), wantGroups(2)),
			[]meta.Command{set(1, "a b c", "a b c d"), addGroup(2, "b d a")}},
		{"slots wait for the groups", with(input(rebalancing(mkMap("a b c d e f", "a b c", "d e f"), rg(0, 16383)), "a b c d e f"), wantGroups(3)),
			[]meta.Command{addGroup(3, "b c e")}},
	})
}

// rebalancing gives m's groups these ranges, in group order, and asks for
// a rebalance.
func rebalancing(m *meta.Map, ranges ...[]slots.Range) *meta.Map {
	for i, r := range ranges {
		m.Groups[i].Ranges = r
	}
	m.Rebalance = true
	return m
}

// migrating records migrations in m.
func migrating(m *meta.Map, migs ...meta.Migration) *meta.Map {
	m.Migrations = append(m.Migrations, migs...)
	return m
}

func TestBalanceSlots(t *testing.T) {
	// Groups on three nodes spread so that no replica rule fires.
	two := func() *meta.Map { return mkMap("a b c", "a b c", "b c a") }
	three := func() *meta.Map { return mkMap("a b c", "a b c", "b c a", "c a b") }
	four := func() *meta.Map { return mkMap("a b c", "a b c", "b c a", "c a b", "a b c") }
	all := rg(0, slots.Count-1)
	notAsked := two()
	notAsked.Groups[0].Ranges = all
	runPlan(t, []planCase{
		{"not asked", input(notAsked, "a b c"), nil},
		{"top slots to the empty group", with(input(rebalancing(two(), all), "a b c"), maxMigrations(3)),
			starts(1, 2, 16383, 16382, 16381)},
		{"at most 16 by default", input(rebalancing(two(), all), "a b c"),
			starts(1, 2, 16383, 16382, 16381, 16380, 16379, 16378, 16377, 16376, 16375, 16374, 16373, 16372, 16371, 16370, 16369, 16368)},
		{"recorded ones count as done and against the cap", with(input(migrating(rebalancing(two(), all), mig(16383, 1, 2)), "a b c"), maxMigrations(3)),
			starts(1, 2, 16382, 16381)},
		{"cap reached", with(input(migrating(rebalancing(two(), all), mig(1, 1, 2), mig(16383, 1, 2)), "a b c"), maxMigrations(2)), nil},
		{"migrating slots are skipped", input(migrating(rebalancing(three(), rg(0, 9)), mig(9, 1, 2)), "a b c"),
			cat(starts(1, 2, 8, 7), starts(1, 3, 6, 5, 4))},
		{"pairs go in id order until one side is done", input(rebalancing(four(), rg(0, 9), rg(10, 19)), "a b c"),
			cat(starts(1, 3, 9, 8, 7, 6, 5), starts(2, 4, 19, 18, 17, 16, 15))},
		{"the largest keep the extra slots", input(rebalancing(three(), rg(0, 5), rg(6, 10)), "a b c"),
			cat(starts(1, 3, 5, 4), starts(2, 3, 10))},
		{"a source whose slots all move already waits", input(migrating(rebalancing(three(), rg(0, 1), rg(2, 13)),
			mig(0, 1, 3), mig(1, 1, 3), mig(2, 2, 1), mig(3, 2, 1), mig(4, 2, 1), mig(5, 2, 1),
			mig(6, 2, 1), mig(7, 2, 1), mig(8, 2, 1), mig(9, 2, 1)), "a b c"), nil},
		{"groups without replicas neither give nor take", input(rebalancing(mkMap("a b c", "", "a b c", "b c a"), rg(0, 9), rg(10, 13)), "a b c"),
			starts(2, 3, 13, 12)},
		{"balanced: the request is cleared", input(rebalancing(two(), rg(0, 8191), rg(8192, 16383)), "a b c"),
			[]meta.Command{meta.SetRebalance{}}},
		{"within one slot is balanced", input(rebalancing(three(), slots.Split(3)[:1], slots.Split(3)[1:2], slots.Split(3)[2:]), "a b c"),
			[]meta.Command{meta.SetRebalance{}}},
		{"balanced once the recorded ones finish: waits", input(migrating(rebalancing(two(), rg(0, 3)), mig(2, 1, 2), mig(3, 1, 2)), "a b c"), nil},
		{"no slots at all", input(rebalancing(two(), nil), "a b c"), []meta.Command{meta.SetRebalance{}}},
	})
}

// checkSlots asserts every slot owned by exactly one group, the groups'
// counts within one of each other, and no rebalance left. It also asserts
// few ranges: starting from one range a group, the sources keep one each,
// and each source-receiver pair (fewer than the groups) adds at most one.
func checkSlots(t *testing.T, m *meta.Map) {
	t.Helper()
	var owned slots.Set
	var counts []int
	ranges := 0
	for _, g := range m.Groups {
		ranges += len(g.Ranges)
		for _, r := range g.Ranges {
			for s := int(r.Start); s <= int(r.End); s++ {
				if owned.Has(uint16(s)) {
					t.Fatalf("slot %d owned twice", s)
				}
				owned.Add(uint16(s))
			}
		}
		counts = append(counts, m.SlotCount(g.ID))
	}
	if ranges >= 2*len(m.Groups) {
		t.Errorf("%d ranges over %d groups: %+v", ranges, len(m.Groups), m.Groups)
	}
	if owned.Len() != slots.Count {
		t.Fatalf("%d slots owned", owned.Len())
	}
	if lo, hi := minMax(counts); hi-lo > 1 {
		t.Errorf("slot counts %v", counts)
	}
	if m.Rebalance || len(m.Migrations) > 0 {
		t.Errorf("rebalance %v, migrations %v left", m.Rebalance, m.Migrations)
	}
}

func minMax(xs []int) (lo, hi int) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// Three nodes and groups, three nodes join, then six groups are wanted:
// they are created, and the slots spread evenly over them.
func TestSimulationScaleOut(t *testing.T) {
	c := threeNodes(t, 6)
	c.converge(t)
	checkBalanced(t, c.m)

	c.groups = 6
	c.converge(t)
	if len(c.m.Groups) != 6 {
		t.Fatalf("%d groups", len(c.m.Groups))
	}
	checkBalanced(t, c.m)
	checkSlots(t, c.m)
	if c.m.Moved < slots.Count/2-3 {
		t.Fatalf("moved %d slots, want about half", c.m.Moved)
	}
}

// Ties between groups of equal counts, and the maps of the input, must not
// make plans differ.
func TestPlanSlotsDeterministic(t *testing.T) {
	m := mkMap("a b c d e", "a b c", "b c d", "c d e", "d e a", "e a b", "a c e")
	m = migrating(rebalancing(draining(m, "e"), rg(0, 4095), rg(4096, 8191), rg(8192, 12287), rg(12288, 16383)), mig(4095, 1, 5))
	in := with(input(m, "a b c d e"), wantGroups(6))
	first := Plan(in)
	if len(first) < 2 {
		t.Fatalf("expected a plan, got %s", show(first))
	}
	for range 20 {
		if got := Plan(in); !reflect.DeepEqual(got, first) {
			t.Fatalf("plans differ:\n%s\n%s", show(got), show(first))
		}
	}
}
