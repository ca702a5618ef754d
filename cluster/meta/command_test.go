package meta

import (
	"errors"
	"reflect"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

func node(id string) Node { return Node{ID: id, Client: id + ":6379", Bus: id + ":16379"} }

// initCmd is the Init of the fixture: groups 1 and 2 on n1..n3, group 3 on
// n4, n5 hosting nothing.
func initCmd() Init {
	return Init{
		Nodes: []Node{node("n3"), node("n1"), node("n5"), node("n2"), node("n4")},
		Groups: []Group{
			{ID: 2, Ranges: []slots.Range{{Start: 8192, End: 16383}}, Replicas: []string{"n2", "n3", "n1"}},
			{ID: 1, Ranges: []slots.Range{{Start: 0, End: 8191}}, Replicas: []string{"n1", "n2", "n3"}},
			{ID: 3, Replicas: []string{"n4"}},
		},
	}
}

// fixture is initCmd applied, then n5 removed (epoch 2).
func fixture(tb testing.TB) *Map {
	tb.Helper()
	m, err := Apply(nil, initCmd())
	if err != nil {
		tb.Fatal(err)
	}
	if m, err = Apply(m, RemoveNode{ID: "n5"}); err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestInitResult(t *testing.T) {
	cmd := initCmd()
	cmd.Nodes[0].Incarnation = 7
	cmd.Nodes[1].State = Removed
	cmd.Groups[0].Changes, cmd.Groups[0].Boot = 9, []string{"x"}
	m, err := Apply(nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	want := &Map{
		Epoch: 1,
		Nodes: []Node{
			{ID: "n1", Client: "n1:6379", Bus: "n1:16379", State: Active, Incarnation: 1},
			{ID: "n2", Client: "n2:6379", Bus: "n2:16379", State: Active, Incarnation: 1},
			{ID: "n3", Client: "n3:6379", Bus: "n3:16379", State: Active, Incarnation: 7},
			{ID: "n4", Client: "n4:6379", Bus: "n4:16379", State: Active, Incarnation: 1},
			{ID: "n5", Client: "n5:6379", Bus: "n5:16379", State: Active, Incarnation: 1},
		},
		Groups: []Group{
			{ID: 1, Ranges: []slots.Range{{Start: 0, End: 8191}}, Replicas: []string{"n1", "n2", "n3"}, Boot: []string{"n1", "n2", "n3"}},
			{ID: 2, Ranges: []slots.Range{{Start: 8192, End: 16383}}, Replicas: []string{"n2", "n3", "n1"}, Boot: []string{"n2", "n3", "n1"}},
			{ID: 3, Replicas: []string{"n4"}, Boot: []string{"n4"}},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("Init gave\n%+v\nwant\n%+v", m, want)
	}
	// The map shares nothing with the command.
	cmd.Groups[1].Replicas[0] = "zz"
	cmd.Groups[1].Ranges[0].End = 1
	cmd.Nodes[2].ID = "zz"
	if !reflect.DeepEqual(m, want) {
		t.Fatal("the map aliases the command's slices")
	}
	if &m.Groups[0].Boot[0] == &m.Groups[0].Replicas[0] {
		t.Fatal("Boot aliases Replicas")
	}
}

func TestInitInvalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Init)
	}{
		{"no groups", func(c *Init) { c.Groups = nil }},
		{"group id 0", func(c *Init) { c.Groups[0].ID = 0 }},
		{"reserved group id", func(c *Init) { c.Groups[0].ID = 0xFFFFFF00 }},
		{"max group id", func(c *Init) { c.Groups[0].ID = 0xFFFFFFFF }},
		{"duplicate group id", func(c *Init) { c.Groups[2].ID = 1 }},
		{"range past the last slot", func(c *Init) { c.Groups[0].Ranges[0].End = slots.Count }},
		{"range backwards", func(c *Init) { c.Groups[2].Ranges = []slots.Range{{Start: 5, End: 4}} }},
		{"ranges overlap across groups", func(c *Init) { c.Groups[2].Ranges = []slots.Range{{Start: 8191, End: 8191}} }},
		{"ranges overlap within a group", func(c *Init) { c.Groups[1].Ranges = []slots.Range{{Start: 0, End: 10}, {Start: 10, End: 20}} }},
		{"same range twice", func(c *Init) { c.Groups[1].Ranges = append(c.Groups[1].Ranges, c.Groups[1].Ranges[0]) }},
		{"replica not a node", func(c *Init) { c.Groups[0].Replicas[1] = "n9" }},
		{"duplicate replica", func(c *Init) { c.Groups[0].Replicas[2] = "n2" }},
		{"no replicas", func(c *Init) { c.Groups[2].Replicas = nil }},
		{"empty node id", func(c *Init) { c.Nodes[0].ID = "" }},
		{"duplicate node id", func(c *Init) { c.Nodes[0].ID = "n1" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := initCmd()
			tt.edit(&cmd)
			m, err := Apply(nil, cmd)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Apply = %v, want ErrInvalid", err)
			}
			if m != nil {
				t.Fatalf("Apply of a failing Init returned %+v, want the old (nil) map", m)
			}
		})
	}
}

// applyAll applies cmds to m in order, failing the test on an error.
func applyAll(tb testing.TB, m *Map, cmds ...Command) *Map {
	tb.Helper()
	for _, cmd := range cmds {
		var err error
		if m, err = Apply(m, cmd); err != nil {
			tb.Fatalf("Apply(%+v): %v", cmd, err)
		}
	}
	return m
}

// applyCase is one command on a start map. want edits a copy of the start
// into the expected map (Epoch aside); a nil want expects no change.
type applyCase struct {
	name  string
	start *Map // nil: the fixture
	cmd   Command
	want  func(m *Map)
	err   error
}

// runApply runs each case: the result, the error, and that neither the
// start map nor, on failure or no change, the epoch moves.
func runApply(t *testing.T, tests []applyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := tt.start
			if start == nil {
				start = fixture(t)
			}
			before := start.Clone()
			got, err := Apply(start, tt.cmd)
			if !reflect.DeepEqual(start.Clone(), before) {
				t.Fatal("Apply modified its input map")
			}
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("Apply = %v, want %v", err, tt.err)
			}
			if err != nil || tt.want == nil {
				if got != start {
					t.Fatalf("Apply returned a new map %+v, want the old one", got)
				}
				return
			}
			want := start.Clone()
			tt.want(want)
			want.Epoch++
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Apply gave\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestApply runs each of the first commands on the fixture.
func TestApply(t *testing.T) {
	tests := []applyCase{
		{name: "init twice", cmd: initCmd(), err: ErrInitialized},
		{name: "init empty", start: &Map{}, cmd: Init{}, err: ErrInvalid},

		{name: "add new node", cmd: AddNode{Node: Node{ID: "n0", Client: "c", Bus: "b", State: Removed, Incarnation: 5}},
			want: func(m *Map) {
				m.Nodes = append([]Node{{ID: "n0", Client: "c", Bus: "b", State: Active, Incarnation: 1}}, m.Nodes...)
			}},
		{name: "add node at the end", cmd: AddNode{Node: Node{ID: "n9", Bus: "b"}},
			want: func(m *Map) { m.Nodes = append(m.Nodes, Node{ID: "n9", Bus: "b", State: Active, Incarnation: 1}) }},
		{name: "add removed node", cmd: AddNode{Node: Node{ID: "n5", Client: "new:1", Bus: "new:2"}},
			want: func(m *Map) {
				m.Nodes[4] = Node{ID: "n5", Client: "new:1", Bus: "new:2", State: Active, Incarnation: 2}
			}},
		{name: "add active node, new client address", cmd: AddNode{Node: Node{ID: "n2", Client: "moved:1", Bus: "n2:16379"}},
			want: func(m *Map) { m.Nodes[1].Client = "moved:1" }},
		{name: "add active node, new bus address", cmd: AddNode{Node: Node{ID: "n2", Client: "n2:6379", Bus: "moved:2"}},
			want: func(m *Map) { m.Nodes[1].Bus = "moved:2" }},
		{name: "add active node, same addresses", cmd: AddNode{Node: node("n2")}},
		{name: "add node without id", cmd: AddNode{Node: Node{Bus: "b"}}, err: ErrInvalid},
		{name: "add node without bus", cmd: AddNode{Node: Node{ID: "n9", Client: "c"}}, err: ErrInvalid},
		{name: "add node before init", start: &Map{}, cmd: AddNode{Node: node("n1")}, err: ErrNotInitialized},

		{name: "remove node of several groups", cmd: RemoveNode{ID: "n2"},
			want: func(m *Map) {
				m.Nodes[1].State = Removed
				m.Groups[0].Replicas, m.Groups[0].Changes = []string{"n1", "n3"}, 1
				m.Groups[1].Replicas, m.Groups[1].Changes = []string{"n3", "n1"}, 1
			}},
		{name: "remove last replica", cmd: RemoveNode{ID: "n4"},
			want: func(m *Map) {
				m.Nodes[3].State = Removed
				m.Groups[2].Replicas, m.Groups[2].Changes = []string{}, 1
			}},
		{name: "remove unknown node", cmd: RemoveNode{ID: "n9"}, err: ErrUnknownNode},
		{name: "remove removed node", cmd: RemoveNode{ID: "n5"}, err: ErrNodeRemoved},
		{name: "remove before init", start: &Map{}, cmd: RemoveNode{ID: "n1"}, err: ErrNotInitialized},

		{name: "set replicas", cmd: SetReplicas{Group: 1, Replicas: []string{"n4", "n1"}, Expect: []string{"n1", "n2", "n3"}},
			want: func(m *Map) { m.Groups[0].Replicas, m.Groups[0].Changes = []string{"n4", "n1"}, 1 }},
		{name: "set replicas, reorder only", cmd: SetReplicas{Group: 2, Replicas: []string{"n1", "n2", "n3"}, Expect: []string{"n2", "n3", "n1"}},
			want: func(m *Map) { m.Groups[1].Replicas, m.Groups[1].Changes = []string{"n1", "n2", "n3"}, 1 }},
		{name: "set replicas, same as now", cmd: SetReplicas{Group: 1, Replicas: []string{"n1", "n2", "n3"}, Expect: []string{"n1", "n2", "n3"}}},
		{name: "set replicas, expect reordered", cmd: SetReplicas{Group: 1, Replicas: []string{"n4"}, Expect: []string{"n2", "n1", "n3"}}, err: ErrStale},
		{name: "set replicas, expect subset", cmd: SetReplicas{Group: 1, Replicas: []string{"n4"}, Expect: []string{"n1", "n2"}}, err: ErrStale},
		{name: "set replicas, expect empty", cmd: SetReplicas{Group: 1, Replicas: []string{"n4"}}, err: ErrStale},
		{name: "set replicas, unknown group", cmd: SetReplicas{Group: 9, Replicas: []string{"n4"}}, err: ErrUnknownGroup},
		{name: "set replicas, empty", cmd: SetReplicas{Group: 3, Replicas: []string{}, Expect: []string{"n4"}}, err: ErrInvalid},
		{name: "set replicas, duplicate", cmd: SetReplicas{Group: 3, Replicas: []string{"n1", "n1"}, Expect: []string{"n4"}}, err: ErrInvalid},
		{name: "set replicas, removed node", cmd: SetReplicas{Group: 3, Replicas: []string{"n5"}, Expect: []string{"n4"}}, err: ErrInvalid},
		{name: "set replicas, unknown node", cmd: SetReplicas{Group: 3, Replicas: []string{"n9"}, Expect: []string{"n4"}}, err: ErrInvalid},
		{name: "set replicas before init", start: &Map{}, cmd: SetReplicas{Group: 1, Replicas: []string{"n1"}}, err: ErrNotInitialized},
		{name: "set replicas by pointer", cmd: &SetReplicas{Group: 3, Replicas: []string{"n1"}, Expect: []string{"n4"}},
			want: func(m *Map) { m.Groups[2].Replicas, m.Groups[2].Changes = []string{"n1"}, 1 }},
		{name: "nil command", cmd: nil, err: ErrInvalid},
	}
	runApply(t, tests)
}

// A command's slices are copied: editing them later does not reach the map.
func TestSetReplicasCopies(t *testing.T) {
	cmd := SetReplicas{Group: 3, Replicas: []string{"n1"}, Expect: []string{"n4"}}
	m, err := Apply(fixture(t), cmd)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Replicas[0] = "zz"
	if g, _ := m.Group(3); g.Replicas[0] != "n1" {
		t.Fatalf("group 3 replicas %q after editing the command", g.Replicas)
	}
}
