package cluster

import (
	"testing"

	"github.com/slotraft/slotraft/cluster/meta"
)

func TestQuorumNeeds(t *testing.T) {
	m := &meta.Map{Groups: []meta.Group{
		{ID: 1, Replicas: []string{"a", "b", "c"}},
		{ID: 2, Replicas: []string{"c", "d", "e"}},
		{ID: 3, Replicas: []string{"a"}},
	}}
	tests := []struct {
		name  string
		node  string
		alive []string
		group uint32
		need  bool
	}{
		{"one of three down: removable", "b", []string{"a", "c", "d", "e"}, 0, false},
		{"two of three down: group 1 needs b", "b", []string{"a", "d", "e"}, 1, true},
		{"node in no group", "z", nil, 0, false},
		{"single-replica group down", "a", []string{"b", "c", "d", "e"}, 3, true},
		{"second group lacks quorum", "c", []string{"a", "b", "d"}, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			alive := map[string]bool{}
			for _, id := range tc.alive {
				alive[id] = true
			}
			g, need := quorumNeeds(m, tc.node, alive)
			if g != tc.group || need != tc.need {
				t.Fatalf("quorumNeeds = %d, %v; want %d, %v", g, need, tc.group, tc.need)
			}
		})
	}
}
