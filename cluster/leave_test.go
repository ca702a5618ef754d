package cluster

import "testing"

func TestQuorumWithout(t *testing.T) {
	g := &Group{id: 1}
	g.lay.Store(&layout{replicas: []Peer{{ID: "a"}, {ID: "b"}, {ID: "c"}}})
	view := func(id, state, leader string, term, last, applied uint64) NodeView {
		return NodeView{ID: id, Replicas: []ReplicaView{{Group: 1, State: state, Leader: leader, Term: term, LastIndex: last, AppliedIndex: applied}}}
	}
	tests := []struct {
		name  string
		views map[string]NodeView
		want  bool
	}{
		{"leader and follower caught up", map[string]NodeView{
			"b": view("b", "Leader", "b", 3, 100, 100), "c": view("c", "Follower", "b", 3, 100, 95)}, true},
		{"other follower unreachable", map[string]NodeView{
			"b": view("b", "Leader", "b", 3, 100, 100)}, false},
		{"no leader among the others (self still leads)", map[string]NodeView{
			"b": view("b", "Follower", "a", 3, 100, 100), "c": view("c", "Follower", "a", 3, 100, 100)}, false},
		{"follower far behind (installing a snapshot)", map[string]NodeView{
			"b": view("b", "Leader", "b", 3, 5000, 5000), "c": view("c", "Follower", "b", 3, 10, 10)}, false},
		{"follower of an older term", map[string]NodeView{
			"b": view("b", "Leader", "b", 4, 100, 100), "c": view("c", "Follower", "a", 3, 100, 100)}, false},
		{"the other node does not host the group", map[string]NodeView{
			"b": view("b", "Leader", "b", 3, 100, 100), "c": {ID: "c"}}, false},
		{"self's own view is ignored", map[string]NodeView{
			"a": view("a", "Leader", "a", 3, 100, 100), "b": view("b", "Follower", "a", 3, 100, 100)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := quorumWithout(g, "a", tc.views); got != tc.want {
				t.Errorf("quorumWithout = %v, want %v", got, tc.want)
			}
		})
	}
}
