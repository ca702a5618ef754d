package cluster

import (
	"testing"
	"time"
)

func TestHistogramSnapshotCumulative(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{30 * time.Microsecond, 2 * time.Millisecond, 2 * time.Millisecond, time.Minute} {
		h.Observe(d)
	}
	s := h.Snapshot()
	if s.Count != 4 {
		t.Fatalf("count %d, want 4", s.Count)
	}
	for bound, want := range map[float64]uint64{0.00005: 1, 0.001: 1, 0.0025: 3, 10: 3} {
		if got := s.Buckets[bound]; got != want {
			t.Errorf("bucket ≤%gs holds %d, want %d", bound, got, want)
		}
	}
	if want := 60.00403; s.Sum < want-1e-9 || s.Sum > want+1e-9 {
		t.Errorf("sum %v, want %v", s.Sum, want)
	}
}

// The stats of a group read its Raft and what the wrappers timed: the
// leader applied and appended the writes, a follower names the leader it
// hears from and catches up, and a save is measured.
func TestGroupStats(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	c.LeadersSpread() // else a hand-off to the preferred leader may move group 1 mid-test
	l := c.Leader(1)
	for i := range 5 {
		c.Set(1, KeyIn(1, 3, "stats"+string(rune('a'+i))), "v")
	}
	find := func(n *Node) GroupStats {
		for _, gs := range n.GroupStats() {
			if gs.Group == 1 {
				return gs
			}
		}
		t.Fatalf("group 1 not in the stats of %s", n.Self().ID)
		return GroupStats{}
	}
	ls := find(c.Nodes[l])
	if ls.State != "Leader" || ls.Leader != c.Peers[l].ID || ls.Term == 0 {
		t.Fatalf("leader's stats %+v", ls)
	}
	if ls.Apply.Count < 5 || ls.LogStore.Count == 0 || ls.LeaderChanges == 0 {
		t.Fatalf("leader recorded %d applies, %d appends, %d leader changes", ls.Apply.Count, ls.LogStore.Count, ls.LeaderChanges)
	}
	f := c.Nodes[(l+1)%3]
	PollUntil(t, "the follower catching up", func() bool {
		fs := find(f)
		return fs.State == "Follower" && fs.Leader == ls.Leader && fs.LastContact >= 0 &&
			fs.AppliedIndex >= ls.CommitIndex && fs.CommitIndex >= ls.CommitIndex
	})
	if err := c.Nodes[l].Save(); err != nil {
		t.Fatal(err)
	}
	if s := find(c.Nodes[l]); s.Snapshot.Count == 0 || s.SnapshotBytes == 0 {
		t.Fatalf("after a save: %d snapshots, last of %d bytes", s.Snapshot.Count, s.SnapshotBytes)
	}
}
