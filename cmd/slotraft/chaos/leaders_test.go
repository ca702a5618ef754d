package chaos

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// status fabricates node self's own view: it leads the groups in leads
// (group → term) and follows group 9.
func status(self string, leads map[uint32]uint64) cluster.ClusterStatus {
	cs := cluster.ClusterStatus{Self: self}
	for g, term := range leads {
		cs.Groups = append(cs.Groups, cluster.GroupStatus{ID: g, Replicas: []cluster.ReplicaStatus{
			{Node: self, State: "Leader", Term: term}, {Node: "other", State: "Leader", Term: term},
		}})
	}
	cs.Groups = append(cs.Groups, cluster.GroupStatus{ID: 9, Replicas: []cluster.ReplicaStatus{{Node: self, State: "Follower"}}})
	return cs
}

func TestLeaderSpansAndOverlaps(t *testing.T) {
	p := newLeaderPoller(nil, nil)
	p.observe(status("node1", map[uint32]uint64{1: 2}), 0)
	p.observe(status("node1", map[uint32]uint64{1: 2}), 10)
	p.observe(status("node2", map[uint32]uint64{1: 3}), 10) // node1 still believes it leads
	p.observe(status("node1", nil), 20)                     // node1 has stepped down
	p.observe(status("node2", map[uint32]uint64{1: 3}), 30)
	p.observe(status("node1", map[uint32]uint64{1: 2}), 40) // a new belief: a new span
	got := p.result()
	want := []LeaderSpan{{1, "node1", 2, 0, 10}, {1, "node2", 3, 10, 30}, {1, "node1", 2, 40, 40}}
	if len(got) != len(want) {
		t.Fatalf("spans %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if o := overlaps(got); len(o) != 1 || o[0] != [2]int64{10, 10} {
		t.Errorf("overlaps %v, want [[10 10]]", o)
	}
	html := string(leaderChart(1, got, nil))
	if !strings.Contains(html, "two nodes believe they lead group 1") {
		t.Errorf("the chart does not mark the overlap:\n%s", html)
	}
	// A clean handover overlaps nowhere.
	clean := []LeaderSpan{{1, "node1", 2, 0, 10}, {1, "node2", 3, 11, 30}}
	if o := overlaps(clean); len(o) != 0 {
		t.Errorf("overlaps of a clean handover: %v", o)
	}
	if strings.Contains(string(leaderChart(1, clean, nil)), "stroke=\"#c92a2a\"") {
		t.Error("a clean handover is outlined as an overlap")
	}
}
