package meta

import "testing"

// manualMap is a cluster formed by hand: n1 owns 0-99 in group 1, n2
// 100-199 in group 2 (both also replicated on the other), n3 is a member
// leading nothing; slots from 200 up are unassigned.
func manualMap(tb testing.TB) *Map {
	tb.Helper()
	return applyAll(tb, nil,
		Init{Manual: true, Nodes: []Node{node("n1")}, Groups: []Group{{ID: 1, Ranges: rs(0, 99), Replicas: []string{"n1"}}}},
		Meet{Node: node("n2"), Ranges: rs(100, 199)},
		Meet{Node: node("n3")},
		SetReplicas{Group: 1, Replicas: []string{"n1", "n2"}, Expect: []string{"n1"}},
		SetReplicas{Group: 2, Replicas: []string{"n2", "n1"}, Expect: []string{"n2"}},
	)
}

func TestApplyMeet(t *testing.T) {
	m := manualMap(t)
	if !m.Manual || len(m.Groups) != 2 || !m.IsActive("n3") {
		t.Fatalf("manual map: %+v", m)
	}
	runApply(t, []applyCase{
		{name: "with slots", start: m, cmd: Meet{Node: node("n4"), Ranges: rs(300, 310, 200, 205)},
			want: func(m *Map) {
				m.Nodes = append(m.Nodes, Node{ID: "n4", Client: "n4:6379", Bus: "n4:16379", State: Active, Incarnation: 1})
				m.Groups = append(m.Groups, Group{ID: 3, Ranges: rs(200, 205, 300, 310), Replicas: []string{"n4"}, Boot: []string{"n4"}})
			}},
		{name: "without slots", start: m, cmd: Meet{Node: node("n4")},
			want: func(m *Map) {
				m.Nodes = append(m.Nodes, Node{ID: "n4", Client: "n4:6379", Bus: "n4:16379", State: Active, Incarnation: 1})
			}},
		{name: "a member again, more slots", start: m, cmd: Meet{Node: node("n2"), Ranges: rs(200, 200)},
			want: func(m *Map) { m.Groups[1].Ranges = rs(100, 200) }},
		{name: "a member again, nothing new", start: m, cmd: Meet{Node: node("n2")}},
		{name: "slots owned", start: m, cmd: Meet{Node: node("n4"), Ranges: rs(150, 250)}, err: ErrInvalid},
		{name: "bad range", start: m, cmd: Meet{Node: node("n4"), Ranges: rs(300, 20000)}, err: ErrInvalid},
		{name: "no bus", start: m, cmd: Meet{Node: Node{ID: "n4"}}, err: ErrInvalid},
		{name: "before init", start: &Map{}, cmd: Meet{Node: node("n4")}, err: ErrNotInitialized},
	})
}

func TestApplyClaimSlots(t *testing.T) {
	m := manualMap(t)
	replica := applyAll(t, m, Replicate{Node: "n3", Master: "n1", Want: 3})
	runApply(t, []applyCase{
		{name: "to the led group", start: m, cmd: ClaimSlots{Node: "n1", Ranges: rs(200, 299)},
			want: func(m *Map) { m.Groups[0].Ranges = rs(0, 99, 200, 299) }},
		{name: "a new group", start: m, cmd: ClaimSlots{Node: "n3", Ranges: rs(500, 500)},
			want: func(m *Map) {
				m.Groups = append(m.Groups, Group{ID: 3, Ranges: rs(500, 500), Replicas: []string{"n3"}, Boot: []string{"n3"}})
			}},
		{name: "an empty group to import into", start: m, cmd: ClaimSlots{Node: "n3"},
			want: func(m *Map) {
				m.Groups = append(m.Groups, Group{ID: 3, Replicas: []string{"n3"}, Boot: []string{"n3"}})
			}},
		{name: "no more empty groups", start: m, cmd: ClaimSlots{Node: "n1"}},
		{name: "slots end a replica", start: replica, cmd: ClaimSlots{Node: "n3", Ranges: rs(500, 500)},
			want: func(m *Map) {
				m.Nodes[2].ReplicaOf = ""
				m.Groups = append(m.Groups, Group{ID: 3, Ranges: rs(500, 500), Replicas: []string{"n3"}, Boot: []string{"n3"}})
			}},
		{name: "busy", start: m, cmd: ClaimSlots{Node: "n3", Ranges: rs(99, 99)}, err: ErrInvalid},
		{name: "unknown node", start: m, cmd: ClaimSlots{Node: "n9"}, err: ErrUnknownNode},
	})
}

func TestApplyReplicate(t *testing.T) {
	m := manualMap(t)
	runApply(t, []applyCase{
		{name: "joins the master's group", start: m, cmd: Replicate{Node: "n3", Master: "n1", Want: 3},
			want: func(m *Map) {
				m.Nodes[2].ReplicaOf = "n1"
				m.Groups[0].Replicas = []string{"n1", "n2", "n3"}
				m.Groups[0].Changes++
			}},
		{name: "takes a place in a full group", start: m, cmd: Replicate{Node: "n3", Master: "n1", Want: 2},
			want: func(m *Map) {
				m.Nodes[2].ReplicaOf = "n1"
				m.Groups[0].Replicas = []string{"n1", "n3"}
				m.Groups[0].Changes++
			}},
		{name: "already a replica", start: m, cmd: Replicate{Node: "n2", Master: "n1", Want: 3}, err: ErrInvalid},
		{name: "itself", start: m, cmd: Replicate{Node: "n3", Master: "n3", Want: 3}, err: ErrInvalid},
		{name: "unknown master", start: m, cmd: Replicate{Node: "n3", Master: "n9", Want: 3}, err: ErrUnknownNode},
	})
}
