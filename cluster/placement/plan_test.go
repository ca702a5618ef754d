package placement

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

const deadAfter = 10 * time.Second

func node(id string) meta.Node {
	return meta.Node{ID: id, Client: id + ":6379", Bus: id + ":16379", State: meta.Active, Incarnation: 1}
}

// mkMap builds a map by hand: nodes "a b c" (all Active), then one group
// per replica list "a b c", numbered from 1.
func mkMap(nodes string, groups ...string) *meta.Map {
	m := &meta.Map{Epoch: 1}
	ids := strings.Fields(nodes)
	slices.Sort(ids)
	for _, id := range ids {
		m.Nodes = append(m.Nodes, node(id))
	}
	for i, g := range groups {
		r := strings.Fields(g)
		m.Groups = append(m.Groups, meta.Group{ID: uint32(i + 1), Replicas: r, Boot: slices.Clone(r)})
	}
	return m
}

func set(group uint32, expect, replicas string) meta.SetReplicas {
	return meta.SetReplicas{Group: group, Replicas: strings.Fields(replicas), Expect: strings.Fields(expect)}
}

func alive(ids string) map[string]bool {
	out := map[string]bool{}
	for _, id := range strings.Fields(ids) {
		out[id] = true
	}
	return out
}

func settled(ids ...uint32) map[uint32]bool {
	out := map[uint32]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

func allSettled(m *meta.Map) map[uint32]bool {
	out := map[uint32]bool{}
	for _, g := range m.Groups {
		out[g.ID] = true
	}
	return out
}

// input is the common shape: factor 3, everything settled.
func input(m *meta.Map, live string) Input {
	return Input{Map: m, Replicas: 3, Alive: alive(live), DeadAfter: deadAfter, Settled: allSettled(m)}
}

func with(in Input, f func(*Input)) Input { f(&in); return in }

// planCase is one input and the plan it must give.
type planCase struct {
	name string
	in   Input
	want []meta.Command
}

func runPlan(t *testing.T, tests []planCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Plan:\n got %s\nwant %s", show(got), show(tt.want))
			}
		})
	}
}

func TestPlan(t *testing.T) {
	three := mkMap("a b c", "a b c", "b c a", "c a b")
	tests := []planCase{
		{"empty input", Input{}, nil},
		{"healthy cluster", input(three, "a b c"), nil},
		{"joiners added in id order", with(input(three, "a b c e d"), func(in *Input) {
			in.Joiners = []meta.Node{{ID: "e", Client: "e:1", Bus: "e:2"}, {ID: "d", Client: "d:1", Bus: "d:2"}}
		}), []meta.Command{
			meta.AddNode{Node: meta.Node{ID: "d", Client: "d:1", Bus: "d:2"}},
			meta.AddNode{Node: meta.Node{ID: "e", Client: "e:1", Bus: "e:2"}},
			// 3/3/3/0/0 after the adds: the planner starts a move at once.
			set(1, "a b c", "a b c d"),
		}},
		{"down less than DeadAfter stays", with(input(mkMap("a b c d", "a b c"), "a b c"), func(in *Input) {
			in.DownFor = map[string]time.Duration{"d": deadAfter - time.Millisecond}
		}), nil},
		{"down exactly DeadAfter removed", with(input(mkMap("a b c d", "a b c"), "a b c"), func(in *Input) {
			in.DownFor = map[string]time.Duration{"d": deadAfter}
		}), []meta.Command{meta.RemoveNode{ID: "d"}}},
		{"down over DeadAfter removed, its group repaired", with(input(mkMap("a b c d", "a b d"), "a b c"), func(in *Input) {
			in.DownFor = map[string]time.Duration{"d": time.Hour}
		}), []meta.Command{meta.RemoveNode{ID: "d"}, set(1, "a b", "a b c")}},
		{"down but unknown duration stays", input(mkMap("a b c d", "a b c"), "a b c"), nil},
		{"alive node never removed", with(input(three, "a b c"), func(in *Input) {
			in.DownFor = map[string]time.Duration{"c": time.Hour}
		}), nil},
		{"last active node kept", with(input(mkMap("a b", "a b"), ""), func(in *Input) {
			in.DownFor = map[string]time.Duration{"a": time.Hour, "b": time.Hour}
		}), []meta.Command{meta.RemoveNode{ID: "a"}}},
		{"zero DeadAfter removes nothing", with(input(mkMap("a b c d", "a b c"), "a b c"), func(in *Input) {
			in.DeadAfter = 0
			in.DownFor = map[string]time.Duration{"d": time.Hour}
		}), nil},
		{"bad factor changes no group", with(input(three, "a b c"), func(in *Input) { in.Replicas = 0 }), nil},
		{"one add per settled group, least loaded", input(mkMap("1 2 3", "1", "1", "1"), "1 2 3"), []meta.Command{
			set(1, "1", "1 2"), set(2, "1", "1 3"), set(3, "1", "1 2"),
		}},
		{"unsettled groups untouched", with(input(mkMap("1 2 3", "1", "1", "1"), "1 2 3"), func(in *Input) {
			in.Settled = settled(2)
		}), []meta.Command{set(2, "1", "1 2")}},
		{"no add beyond the live candidates", input(mkMap("a b c", "a b"), "a b"), nil},
		{"over-replicated drops the dead replica", input(mkMap("a b c d", "a b c d"), "a b c"),
			[]meta.Command{set(1, "a b c d", "a b c")}},
		{"over-replicated drops a dead first replica", input(mkMap("a b c d", "d a b c"), "a b c"),
			[]meta.Command{set(1, "d a b c", "a b c")}},
		{"over-replicated drops the most loaded", input(mkMap("a b c d e f", "a b c d", "c e f"), "a b c d e f"),
			[]meta.Command{set(1, "a b c d", "a b d")}},
		{"over-replicated keeps the first", input(mkMap("a b c d e f", "c a b d", "e c f"), "a b c d e f"),
			[]meta.Command{set(1, "c a b d", "c a b")}},
		{"balance moves one replica to a new node", input(mkMap("1 2 3 4 5", "1 2 3", "2 3 1", "3 1 2"), "1 2 3 4 5"),
			[]meta.Command{set(1, "1 2 3", "1 2 3 4")}},
		{"balance waits for a move in flight", with(input(mkMap("1 2 3 4 5", "1 2 3 4", "2 3 1", "3 1 2"), "1 2 3 4 5"), func(in *Input) {
			in.Settled = settled(2, 3)
		}), nil},
		{"second half of a move drops the heavy node", input(mkMap("1 2 3 4 5", "1 2 3 4", "2 3 1", "3 1 2"), "1 2 3 4 5"),
			[]meta.Command{set(1, "1 2 3 4", "1 2 4")}},
		{"leader moves off a dead first replica", input(mkMap("a b c d", "d a b", "b c a"), "a b c"),
			[]meta.Command{set(1, "d a b", "a d b")}},
		{"leaders spread from an overloaded node", input(mkMap("a b c", "a b c", "a c b", "a b c"), "a b c"),
			[]meta.Command{set(1, "a b c", "b a c")}},
		{"leader handed along a chain", input(mkMap("2 3 4 5 6", "5 2 6", "3 6 4", "4 5 6", "2 3 5", "2 3 4"), "2 3 4 5 6"),
			[]meta.Command{set(4, "2 3 5", "3 2 5")}},
		{"group nobody hosts left alone", input(mkMap("a b c", "a b c", ""), "a b c"), nil},
		{"leader spread skips groups changed in this plan", input(mkMap("a b c d", "a b c d", "a c b", "a b c"), "a b c d"),
			[]meta.Command{set(1, "a b c d", "a b d"), set(2, "a c b", "b a c")}},
	}
	runPlan(t, tests)
}

func show(cmds []meta.Command) string { return fmt.Sprintf("%+v", cmds) }

func TestPlanDeterministic(t *testing.T) {
	m := mkMap("1 2 3 4 5 6", "1 2 3", "1 2", "2 3 4 6", "6 1 5", "1", "3 4 5")
	in := with(input(m, "1 2 3 4 5 7 8"), func(in *Input) {
		in.DownFor = map[string]time.Duration{"6": time.Hour}
		in.Joiners = []meta.Node{{ID: "8", Bus: "8:2"}, {ID: "7", Bus: "7:2"}}
	})
	first := Plan(in)
	if len(first) == 0 {
		t.Fatal("expected a plan")
	}
	for range 20 {
		in.Joiners[0], in.Joiners[1] = in.Joiners[1], in.Joiners[0]
		if got := Plan(in); !reflect.DeepEqual(got, first) {
			t.Fatalf("plans differ:\n%s\n%s", show(got), show(first))
		}
	}
}

// cluster is the simulated world: the map, which gossip members exist,
// which are dead or drained, and the wanted number of groups.
type cluster struct {
	m       *meta.Map
	members []meta.Node
	dead    map[string]bool
	drained map[string]bool // nodes an operator drained
	groups  int
	after   func(m *meta.Map) // if set, checks the map after each plan
}

func (c *cluster) input() Input {
	in := Input{Map: c.m, Replicas: 3, Alive: map[string]bool{}, DownFor: map[string]time.Duration{},
		DeadAfter: deadAfter, Settled: allSettled(c.m), Groups: c.groups}
	for _, nd := range c.members {
		switch {
		case c.drainedAway(nd.ID):
			// It left the cluster: out of gossip, so no joiner.
		case c.dead[nd.ID]:
			in.DownFor[nd.ID] = deadAfter
		case !c.m.IsActive(nd.ID):
			in.Joiners = append(in.Joiners, nd)
			in.Alive[nd.ID] = true
		default:
			in.Alive[nd.ID] = true
		}
	}
	return in
}

// drain drains node id, as an operator would.
func (c *cluster) drain(t *testing.T, id string) {
	t.Helper()
	c.apply(t, meta.DrainNode{ID: id})
	if c.drained == nil {
		c.drained = map[string]bool{}
	}
	c.drained[id] = true
}

// drainedAway reports whether id was drained and then removed: such a
// node shuts down rather than rejoining (the cluster's side of a drain).
func (c *cluster) drainedAway(id string) bool {
	nd, _ := c.m.Node(id)
	return c.drained[id] && nd.State == meta.Removed
}

// converge plans and applies until the plan is empty; after each plan
// every recorded migration finishes, as the groups would move the slots.
func (c *cluster) converge(t *testing.T) {
	t.Helper()
	for range 1000 {
		cmds := Plan(c.input())
		if len(cmds) == 0 {
			return
		}
		checkCalm(t, c.m, cmds)
		c.apply(t, cmds...)
		for _, mg := range c.m.Migrations {
			c.apply(t, meta.FinishMigration(mg))
		}
		if c.after != nil {
			c.after(c.m)
		}
	}
	t.Fatalf("not converged after 1000 plans: %+v", c.m.Groups)
}

func (c *cluster) apply(t *testing.T, cmds ...meta.Command) {
	t.Helper()
	for _, cmd := range cmds {
		m, err := meta.Apply(c.m, cmd)
		if err != nil {
			t.Fatalf("apply %+v: %v", cmd, err)
		}
		c.m = m
	}
}

// checkCalm asserts one SetReplicas per group and at most one move.
func checkCalm(t *testing.T, m *meta.Map, cmds []meta.Command) {
	t.Helper()
	seen, moves := map[uint32]bool{}, 0
	for _, cmd := range cmds {
		sr, ok := cmd.(meta.SetReplicas)
		if !ok {
			continue
		}
		if seen[sr.Group] {
			t.Fatalf("two changes to group %d in %s", sr.Group, show(cmds))
		}
		seen[sr.Group] = true
		if len(sr.Expect) >= 3 && len(sr.Replicas) > len(sr.Expect) {
			moves++
		}
	}
	if moves > 1 {
		t.Fatalf("%d moves in one plan: %s", moves, show(cmds))
	}
}

// checkBalanced asserts full, distinct, Active replica sets and even spread
// of replicas and preferred leaders over the Active nodes.
func checkBalanced(t *testing.T, m *meta.Map) {
	t.Helper()
	ld := loadOf(m)
	want := min(3, len(m.ActiveNodes()))
	for _, g := range m.Groups {
		if len(g.Replicas) != want {
			t.Errorf("group %d has replicas %v", g.ID, g.Replicas)
		}
		for i, r := range g.Replicas {
			if !m.IsActive(r) || slices.Contains(g.Replicas[:i], r) {
				t.Errorf("group %d: bad replica %q in %v", g.ID, r, g.Replicas)
			}
		}
	}
	var reps, firsts []int
	for _, nd := range m.ActiveNodes() {
		reps, firsts = append(reps, ld.replicas[nd.ID]), append(firsts, ld.firsts[nd.ID])
	}
	if slices.Max(reps)-slices.Min(reps) > 1 || slices.Max(firsts)-slices.Min(firsts) > 1 {
		t.Errorf("unbalanced: replicas %v firsts %v, groups %+v", reps, firsts, m.Groups)
	}
}

// threeNodes is a cluster of nodes 1..3 with the three groups of
// redis-cli --cluster create, and gossip members 1..members.
func threeNodes(t *testing.T, members int) *cluster {
	t.Helper()
	init := meta.Init{Nodes: []meta.Node{node("1"), node("2"), node("3")}, Groups: []meta.Group{
		{ID: 1, Ranges: []slots.Range{{Start: 0, End: 5460}}, Replicas: []string{"1", "2", "3"}},
		{ID: 2, Ranges: []slots.Range{{Start: 5461, End: 10922}}, Replicas: []string{"2", "3", "1"}},
		{ID: 3, Ranges: []slots.Range{{Start: 10923, End: slots.Count - 1}}, Replicas: []string{"3", "1", "2"}},
	}}
	m, err := meta.Apply(nil, init)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{m: m, dead: map[string]bool{}}
	for i := 1; i <= members; i++ {
		c.members = append(c.members, node(fmt.Sprint(i)))
	}
	return c
}

func TestSimulation(t *testing.T) {
	c := threeNodes(t, 5)

	c.converge(t)
	checkBalanced(t, c.m)
	if len(c.m.ActiveNodes()) != 5 {
		t.Fatalf("active nodes %+v", c.m.ActiveNodes())
	}

	c.dead["2"] = true
	c.converge(t)
	if nd, _ := c.m.Node("2"); nd.State != meta.Removed {
		t.Fatalf("node 2 is %q", nd.State)
	}
	if len(c.m.HostedBy("2")) != 0 {
		t.Fatalf("node 2 still hosts %v", c.m.HostedBy("2"))
	}
	checkBalanced(t, c.m)

	// Node 2 comes back: it rejoins as a new incarnation and takes load.
	delete(c.dead, "2")
	c.converge(t)
	if nd, _ := c.m.Node("2"); nd.State != meta.Active || nd.Incarnation != 2 {
		t.Fatalf("node 2 is %+v", nd)
	}
	checkBalanced(t, c.m)
}

// TestSimulationSweep grows and shrinks many cluster shapes: every one must
// converge, calmly, to full and balanced groups.
func TestSimulationSweep(t *testing.T) {
	for start := 1; start <= 5; start++ {
		for added := 0; added <= 4; added++ {
			for groups := 1; groups <= 12; groups++ {
				for killed := 0; killed <= 2; killed++ {
					name := fmt.Sprintf("start%d/add%d/groups%d/kill%d", start, added, groups, killed)
					t.Run(name, func(t *testing.T) { sweep(t, start, added, groups, killed) })
				}
			}
		}
	}
}

// sweep starts with start nodes and groups groups (replicas placed round
// robin), adds added nodes, then kills the first killed nodes.
func sweep(t *testing.T, start, added, groups, killed int) {
	c := &cluster{dead: map[string]bool{}}
	for i := 1; i <= start+added; i++ {
		c.members = append(c.members, node(fmt.Sprint(i)))
	}
	init := meta.Init{Nodes: c.members[:start]}
	for g := 1; g <= groups; g++ {
		var reps []string
		for j := range min(3, start) {
			reps = append(reps, fmt.Sprint((g+j)%start+1))
		}
		init.Groups = append(init.Groups, meta.Group{ID: uint32(g), Replicas: reps})
	}
	m, err := meta.Apply(nil, init)
	if err != nil {
		t.Fatal(err)
	}
	c.m = m
	c.converge(t)
	checkBalanced(t, c.m)
	for i := 1; i <= killed && i < start+added; i++ {
		c.dead[fmt.Sprint(i)] = true
	}
	c.converge(t)
	checkBalanced(t, c.m)
}

// TestPlanIdentities: a member that announces another data directory id
// than the map's is removed at once (its replicas are then replaced); one
// whose id the map lacks gets it recorded; an unannounced id changes
// nothing.
func TestPlanIdentities(t *testing.T) {
	three := mkMap("a b c", "a b c", "b c a", "c a b")
	withUIDs := func(uids map[string]string) *meta.Map {
		m := three
		for id, u := range uids {
			var err error
			if m, err = meta.Apply(m, meta.SetUID{ID: id, UID: u}); err != nil {
				t.Fatal(err)
			}
		}
		return m
	}
	known := withUIDs(map[string]string{"a": "ua", "b": "ub", "c": "uc"})
	runPlan(t, []planCase{
		{"ids recorded", with(input(three, "a b c"), func(in *Input) { in.UIDs = map[string]string{"a": "ua", "b": "ub"} }),
			[]meta.Command{meta.SetUID{ID: "a", UID: "ua"}, meta.SetUID{ID: "b", UID: "ub"}}},
		{"same ids", with(input(known, "a b c"), func(in *Input) { in.UIDs = map[string]string{"a": "ua", "b": "ub", "c": "uc"} }), nil},
		{"not announced", with(input(known, "a b c"), func(in *Input) { in.UIDs = map[string]string{"a": "ua"} }), nil},
	})
	got := Plan(with(input(known, "a b c"), func(in *Input) { in.UIDs = map[string]string{"a": "ua", "b": "new", "c": "uc"} }))
	if len(got) == 0 || !reflect.DeepEqual(got[0], meta.RemoveNode{ID: "b"}) {
		t.Fatalf("b came back with another data directory: plan %s, want RemoveNode(b) first", show(got))
	}
	for _, cmd := range got[1:] {
		if sr, ok := cmd.(meta.SetReplicas); ok && slices.Contains(sr.Replicas, "b") {
			t.Errorf("b is given a replica right after its removal: %s", show(got))
		}
	}
}
