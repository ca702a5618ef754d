package meta

import (
	"reflect"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

// drained is the fixture with n3 (a replica of groups 1 and 2) draining.
func drained(tb testing.TB) *Map {
	tb.Helper()
	return applyAll(tb, fixture(tb), DrainNode{ID: "n3"})
}

func TestApplyAddGroup(t *testing.T) {
	gapped := applyAll(t, nil, Init{Nodes: []Node{node("n1")}, Groups: []Group{
		{ID: 5, Ranges: rs(0, 16383), Replicas: []string{"n1"}}, {ID: 1, Replicas: []string{"n1"}}}})
	runApply(t, []applyCase{
		{name: "add", cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n4", "n1"}}},
			want: func(m *Map) {
				m.Groups = append(m.Groups, Group{ID: 4, Replicas: []string{"n4", "n1"}, Boot: []string{"n4", "n1"}})
				m.Rebalance = true
			}},
		{name: "boot and changes are not read", cmd: &AddGroup{Group: Group{ID: 9, Replicas: []string{"n2"}, Boot: []string{"x"}, Changes: 4}},
			want: func(m *Map) {
				m.Groups = append(m.Groups, Group{ID: 9, Replicas: []string{"n2"}, Boot: []string{"n2"}})
				m.Rebalance = true
			}},
		{name: "kept in id order", start: gapped, cmd: AddGroup{Group: Group{ID: 3, Replicas: []string{"n1"}}},
			want: func(m *Map) {
				m.Groups = []Group{m.Groups[0], {ID: 3, Replicas: []string{"n1"}, Boot: []string{"n1"}}, m.Groups[1]}
				m.Rebalance = true
			}},
		{name: "while rebalancing already", start: applyAll(t, fixture(t), SetRebalance{On: true}),
			cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n1"}}},
			want: func(m *Map) {
				m.Groups = append(m.Groups, Group{ID: 4, Replicas: []string{"n1"}, Boot: []string{"n1"}})
			}},
		{name: "id in use", cmd: AddGroup{Group: Group{ID: 3, Replicas: []string{"n1"}}}, err: ErrInvalid},
		{name: "id 0", cmd: AddGroup{Group: Group{Replicas: []string{"n1"}}}, err: ErrInvalid},
		{name: "reserved id", cmd: AddGroup{Group: Group{ID: maxGroupID, Replicas: []string{"n1"}}}, err: ErrInvalid},
		{name: "with slots", cmd: AddGroup{Group: Group{ID: 4, Ranges: rs(5, 5), Replicas: []string{"n1"}}}, err: ErrInvalid},
		{name: "with an empty range list", cmd: AddGroup{Group: Group{ID: 4, Ranges: []slots.Range{}, Replicas: []string{"n1"}}},
			want: func(m *Map) {
				m.Groups = append(m.Groups, Group{ID: 4, Replicas: []string{"n1"}, Boot: []string{"n1"}})
				m.Rebalance = true
			}},
		{name: "no replicas", cmd: AddGroup{Group: Group{ID: 4}}, err: ErrInvalid},
		{name: "replica twice", cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n1", "n1"}}}, err: ErrInvalid},
		{name: "removed replica", cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n5"}}}, err: ErrInvalid},
		{name: "unknown replica", cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n9"}}}, err: ErrInvalid},
		{name: "draining replica", start: drained(t), cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n1", "n3"}}}, err: ErrInvalid},
		{name: "before init", start: &Map{}, cmd: AddGroup{Group: Group{ID: 4, Replicas: []string{"n1"}}}, err: ErrNotInitialized},
	})
}

func TestApplySetRebalance(t *testing.T) {
	on := applyAll(t, fixture(t), SetRebalance{On: true})
	runApply(t, []applyCase{
		{name: "on", cmd: SetRebalance{On: true}, want: func(m *Map) { m.Rebalance = true }},
		{name: "off", start: on, cmd: &SetRebalance{}, want: func(m *Map) { m.Rebalance = false }},
		{name: "on when on", start: on, cmd: SetRebalance{On: true}},
		{name: "off when off", cmd: SetRebalance{}},
		{name: "before init", start: &Map{}, cmd: SetRebalance{On: true}, err: ErrNotInitialized},
	})
}

func TestApplyDrain(t *testing.T) {
	dr := drained(t)
	runApply(t, []applyCase{
		{name: "drain", cmd: DrainNode{ID: "n3"}, want: func(m *Map) { m.Nodes[2].State = Draining }},
		{name: "drain a node hosting nothing", cmd: &DrainNode{ID: "n4"}, want: func(m *Map) { m.Nodes[3].State = Draining }},
		{name: "drain again", start: dr, cmd: DrainNode{ID: "n3"}},
		{name: "drain removed node", cmd: DrainNode{ID: "n5"}, err: ErrNodeRemoved},
		{name: "drain unknown node", cmd: DrainNode{ID: "n9"}, err: ErrUnknownNode},
		{name: "drain before init", start: &Map{}, cmd: DrainNode{ID: "n1"}, err: ErrNotInitialized},

		// A draining node is alive and announces itself: that keeps the drain.
		{name: "draining node announces itself", start: dr, cmd: AddNode{Node: node("n3")}},
		{name: "draining node moves", start: dr, cmd: AddNode{Node: Node{ID: "n3", Client: "new:1", Bus: "new:2"}},
			want: func(m *Map) { m.Nodes[2].Client, m.Nodes[2].Bus = "new:1", "new:2" }},
		{name: "remove draining node", start: dr, cmd: RemoveNode{ID: "n3"},
			want: func(m *Map) {
				m.Nodes[2].State, m.Nodes[2].Drained = Removed, true
				m.Groups[0].Replicas, m.Groups[0].Changes = []string{"n1", "n2"}, 1
				m.Groups[1].Replicas, m.Groups[1].Changes = []string{"n2", "n1"}, 1
			}},
		{name: "removed draining node comes back active", start: applyAll(t, dr, RemoveNode{ID: "n3"}), cmd: AddNode{Node: node("n3")},
			want: func(m *Map) { m.Nodes[2].State, m.Nodes[2].Incarnation, m.Nodes[2].Drained = Active, 2, false }},

		// A draining node keeps its replicas until moved, but gets no new one.
		{name: "draining replica dropped", start: dr, cmd: SetReplicas{Group: 1, Replicas: []string{"n1", "n2"}, Expect: []string{"n1", "n2", "n3"}},
			want: func(m *Map) { m.Groups[0].Replicas, m.Groups[0].Changes = []string{"n1", "n2"}, 1 }},
		{name: "draining replica kept while adding", start: dr, cmd: SetReplicas{Group: 1, Replicas: []string{"n1", "n2", "n3", "n4"}, Expect: []string{"n1", "n2", "n3"}},
			want: func(m *Map) { m.Groups[0].Replicas, m.Groups[0].Changes = []string{"n1", "n2", "n3", "n4"}, 1 }},
		{name: "draining replica added", start: dr, cmd: SetReplicas{Group: 3, Replicas: []string{"n4", "n3"}, Expect: []string{"n4"}}, err: ErrInvalid},
	})
}

func TestDrainingIsMember(t *testing.T) {
	m := drained(t)
	if !m.IsActive("n3") || !m.IsDraining("n3") {
		t.Fatal("a draining node is not an active member")
	}
	if m.IsDraining("n1") || m.IsDraining("n5") || m.IsDraining("n9") {
		t.Fatal("IsDraining of an active, removed or unknown node")
	}
	var ids []string
	for _, nd := range m.ActiveNodes() {
		ids = append(ids, nd.ID)
	}
	if want := []string{"n1", "n2", "n3", "n4"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ActiveNodes = %q, want %q", ids, want)
	}
	var none *Map
	if none.IsDraining("n1") {
		t.Fatal("a nil map has a draining node")
	}
}
