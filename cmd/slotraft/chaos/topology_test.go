package chaos

import (
	"slices"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

// TestMergeStatus: groups are known by id with all their ranges, from the
// newest map; the leader is the replica claiming it with the highest term
// in any answer, also when the newest answer cannot reach it.
func TestMergeStatus(t *testing.T) {
	byID := map[string]int{"node1": 0, "node2": 1, "node3": 2, "node6": 5}
	old := cluster.ClusterStatus{Self: "node1", Epoch: 4, Groups: []cluster.GroupStatus{
		{ID: 2, Slots: []string{"5461-10922"}, Leader: "node2", Replicas: []cluster.ReplicaStatus{
			{Node: "node2", State: "Leader", Term: 3}, {Node: "node3", State: "Follower", Term: 3}}},
		{ID: 1, Slots: []string{"0-5460"}, Leader: "node1", Replicas: []cluster.ReplicaStatus{
			{Node: "node1", State: "Leader", Term: 2}, {Node: "node2", State: "Follower", Term: 2}}},
	}}
	newer := cluster.ClusterStatus{Self: "node3", Epoch: 9, Groups: []cluster.GroupStatus{
		{ID: 1, Slots: []string{"0-99", "200-5460", "6000"}, Leader: "", Replicas: []cluster.ReplicaStatus{
			{Node: "node1", State: "unreachable"}, {Node: "node6", State: "Follower", Term: 2}, {Node: "node9", State: "Follower"}}},
		{ID: 2, Slots: []string{"100-199", "5461-5999", "6001-10922"}, Leader: "node3", Replicas: []cluster.ReplicaStatus{
			{Node: "node3", State: "Leader", Term: 5}, {Node: "node2", State: "Follower", Term: 5}}},
		{ID: 3, Slots: nil, Leader: ""},
	}}
	got := mergeStatus([]cluster.ClusterStatus{old, newer}, byID)
	if len(got) != 3 || got[0].id != 1 || got[1].id != 2 || got[2].id != 3 {
		t.Fatalf("groups = %+v, want ids 1, 2, 3", got)
	}
	want1 := []slots.Range{{Start: 0, End: 99}, {Start: 200, End: 5460}, {Start: 6000, End: 6000}}
	if !slices.Equal(got[0].ranges, want1) || !slices.Equal(got[0].replicas, []int{0, 5}) || got[0].leader != 0 {
		t.Errorf("group 1 = %+v, want ranges %v, replicas [0 5], leader 0 (node1, known from the older answer)", got[0], want1)
	}
	if got[1].leader != 2 || len(got[1].ranges) != 3 {
		t.Errorf("group 2 = %+v, want leader 2 (node3, term 5 beats node2's term 3)", got[1])
	}
	if got[2].leader != -1 || len(got[2].ranges) != 0 || got[2].rangesText() != "no slots" {
		t.Errorf("group 3 = %+v, want no leader and no slots", got[2])
	}
}
