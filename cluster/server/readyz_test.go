package server

import (
	"slices"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
)

// Every readiness check fails with its own reason, a group's prefixed by
// the group; a node whose checks pass has none.
func TestReadinessReasons(t *testing.T) {
	hb := time.Second
	follower := func(id uint32) cluster.GroupStats {
		return cluster.GroupStats{Group: id, State: "Follower", Leader: "n2", CommitIndex: 5000, AppliedIndex: 4990,
			LastContact: 100 * time.Millisecond, HeartbeatTimeout: hb}
	}
	leader := cluster.GroupStats{Group: 1, State: "Leader", Leader: "n1", LastContact: 0, HeartbeatTimeout: hb}
	noLeader, stale, never, behind := follower(3), follower(4), follower(5), follower(6)
	noLeader.Leader = ""
	stale.LastContact = 3 * time.Second
	never.LastContact = -1
	behind.AppliedIndex = 1000
	for _, tc := range []struct {
		name string
		h    nodeHealth
		want []string
	}{
		{"ready", nodeHealth{Ready: true, Groups: []cluster.GroupStats{leader, follower(2)}}, nil},
		{"no map", nodeHealth{}, []string{"the cluster map is not known yet, or the groups hosted here are not open"}},
		{"leaving", nodeHealth{Ready: true, Leaving: true, Groups: []cluster.GroupStats{leader}},
			[]string{"the node is leaving (handing off its leaderships)"}},
		{"groups", nodeHealth{Ready: true, Groups: []cluster.GroupStats{
			leader, {Group: 2, State: "Candidate"}, noLeader, stale, never, behind, {Group: 7, State: "Shutdown"}}},
			[]string{
				"group 2: no leader: an election is running",
				"group 3: no known leader",
				"group 4: leader n2 not heard from within 1s",
				"group 5: leader n2 not heard from within 1s",
				"group 6: 4000 committed entries not applied yet (at most 1024)",
				"group 7: the replica is Shutdown",
			}},
	} {
		var got []string
		for _, f := range readiness(tc.h) {
			got = append(got, f.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
