package placement

import (
	"fmt"
	"slices"
	"testing"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

func TestDrain(t *testing.T) {
	runPlan(t, []planCase{
		{"a candidate joins a group of the draining node; its leadership moves", input(draining(mkMap("a b c d", "a b c", "b c a", "c a b"), "c"), "a b c d"),
			[]meta.Command{set(1, "a b c", "a b c d"), set(3, "c a b", "a c b")}},
		{"then the draining replica is dropped", input(draining(mkMap("a b c d", "a b c d", "b c a", "a c b"), "c"), "a b c d"),
			[]meta.Command{set(1, "a b c d", "a b d")}},
		{"a live draining leader hands over before it is dropped", input(draining(mkMap("a b c d", "c a b d"), "c"), "a b c d"),
			[]meta.Command{set(1, "c a b d", "a c b d")}},
		{"a dead draining leader is dropped at once", input(draining(mkMap("a b c d", "c a b d"), "c"), "a b d"),
			[]meta.Command{set(1, "c a b d", "a b d")}},
		{"one group at a time", input(draining(mkMap("a b c d", "a b c", "b c a", "a c b"), "c"), "a b c d"),
			[]meta.Command{set(1, "a b c", "a b c d")}},
		{"not in an unsettled group", with(input(draining(mkMap("a b c d", "a b c", "b c a"), "c"), "a b c d"), func(in *Input) {
			in.Settled = settled(2)
		}), []meta.Command{set(2, "b c a", "b c a d")}},
		{"no candidate to replace it: it stays", input(draining(mkMap("a b c", "a b c", "b c a"), "c"), "a b c"), nil},
		{"no candidate, but it leads: leadership moves", input(draining(mkMap("a b c", "c a b"), "c"), "a b c"),
			[]meta.Command{set(1, "c a b", "a c b")}},
		{"a short group gets a candidate, not the draining node", input(draining(mkMap("a b c d", "a c"), "c"), "a b c d"),
			[]meta.Command{set(1, "a c", "a c b")}},
		{"announcing itself keeps the drain", with(input(draining(mkMap("a b c", "a b c"), "c"), "a b c"), func(in *Input) {
			in.Joiners = []meta.Node{node("c")}
		}), nil},
		{"drained: removed", input(draining(mkMap("a b c d", "a b d"), "c"), "a b c d"),
			[]meta.Command{meta.RemoveNode{ID: "c"}}},
		{"drained and dead: removed", input(draining(mkMap("a b c d", "a b d"), "c"), "a b d"),
			[]meta.Command{meta.RemoveNode{ID: "c"}}},
		{"drained: waits for the groups to settle", with(input(draining(mkMap("a b c d", "a b d", "b d a"), "c"), "a b c d"), func(in *Input) {
			in.Settled = settled(1)
		}), nil},
		{"drained: waits for a plan without replica changes", input(draining(mkMap("a b c d", "a b"), "c"), "a b c d"),
			[]meta.Command{set(1, "a b", "a b d")}},
		{"drained: a group nobody hosts does not hold it back", with(input(draining(mkMap("a b c d", "a b d", ""), "c"), "a b c d"), func(in *Input) {
			in.Settled = settled(1)
		}), []meta.Command{meta.RemoveNode{ID: "c"}}},
		{"the last member is kept", input(draining(mkMap("a", ""), "a"), "a"), nil},
	})
}

// A drain of one of four nodes: its replicas move one at a time, it is
// removed, and every group ends full and balanced on the other three.
func TestSimulationDrain(t *testing.T) {
	c := threeNodes(t, 4)
	c.converge(t)
	checkBalanced(t, c.m)

	c.drain(t, "2")
	c.convergeFull(t)
	if nd, _ := c.m.Node("2"); nd.State != meta.Removed {
		t.Fatalf("node 2 is %+v", nd)
	}
	checkBalanced(t, c.m)
}

// Drained with no node to take its place: the node stays, serving but
// leading nothing, and the planner goes quiet. A node joining lets the drain
// finish.
func TestSimulationDrainWaits(t *testing.T) {
	c := threeNodes(t, 3)
	c.drain(t, "3")
	c.convergeFull(t)
	if !c.m.IsDraining("3") {
		t.Fatal("node 3 is no longer draining")
	}
	for _, g := range c.m.Groups {
		if len(g.Replicas) != 3 || g.Replicas[0] == "3" {
			t.Fatalf("group %d has replicas %v", g.ID, g.Replicas)
		}
	}

	c.members = append(c.members, node("4"))
	c.convergeFull(t)
	if nd, _ := c.m.Node("3"); nd.State != meta.Removed {
		t.Fatalf("node 3 is %+v", nd)
	}
	checkBalanced(t, c.m)
}

// TestSimulationDrainSweep drains one node of many shapes, with more slot
// groups wanted at the same time: every one converges, keeps its groups
// full, and ends balanced when enough nodes remain.
func TestSimulationDrainSweep(t *testing.T) {
	for nodes := 1; nodes <= 6; nodes++ {
		for groups := 1; groups <= 8; groups++ {
			t.Run(fmt.Sprintf("nodes%d/groups%d", nodes, groups), func(t *testing.T) {
				c := &cluster{m: &meta.Map{}, dead: map[string]bool{}, groups: groups + 2}
				for i := 1; i <= nodes; i++ {
					c.members = append(c.members, node(fmt.Sprint(i)))
				}
				init := meta.Init{Nodes: c.members}
				for g, r := range slots.Split(groups) {
					init.Groups = append(init.Groups, meta.Group{ID: uint32(g + 1), Ranges: []slots.Range{r}, Replicas: []string{"1"}})
				}
				c.apply(t, init)
				c.converge(t)
				c.drain(t, "1")
				c.convergeFull(t)
				if nodes <= 3 {
					return // too few to replace it
				}
				if nd, _ := c.m.Node("1"); nd.State != meta.Removed {
					t.Fatalf("node 1 is %+v", nd)
				}
				checkBalanced(t, c.m)
				checkSlots(t, c.m)
			})
		}
	}
}

// convergeFull converges, checking after every plan that no group has
// fewer replicas than it had before.
func (c *cluster) convergeFull(t *testing.T) {
	t.Helper()
	before := map[uint32]int{}
	for _, g := range c.m.Groups {
		before[g.ID] = len(g.Replicas)
	}
	c.after = func(m *meta.Map) {
		for _, g := range m.Groups {
			if n, ok := before[g.ID]; ok && len(g.Replicas) < min(n, 3) {
				t.Fatalf("group %d down to replicas %v", g.ID, g.Replicas)
			}
		}
	}
	defer func() { c.after = nil }()
	c.converge(t)
	if slices.ContainsFunc(c.m.Groups, func(g meta.Group) bool { return len(g.Replicas) == 0 }) {
		t.Fatalf("a group lost every replica: %+v", c.m.Groups)
	}
}
