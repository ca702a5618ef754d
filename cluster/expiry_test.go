package cluster

import (
	"testing"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/store"
)

// TestActiveExpiry: a key set with PX 200 is deleted from every replica's
// store by a proposed EntryExpire (GetRaw sees expired-but-present keys,
// so only a real deletion satisfies the wait).
func TestActiveExpiry(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	k := KeyIn(2, 3, "ttl")
	keep := KeyIn(2, 3, "keep")
	c.Write(2, "SET", keep, "v")
	start := time.Now()
	c.Write(2, "SET", k, "v", "PX", "200")
	raw := func(n *Node, key string) (o *store.Object) {
		_ = grp(n, 2).ReadStale(func(st fsm.Reader) {
			st.View(func(s store.Reader) { o = s.GetRaw([]byte(key)) })
		})
		return o
	}
	if o := raw(c.Nodes[c.Leader(2)], k); o == nil && time.Since(start) < 150*time.Millisecond {
		t.Fatal("key missing right after SET")
	}
	PollUntil(t, "active expiry on every replica", func() bool {
		for _, n := range c.Nodes {
			if raw(n, k) != nil {
				return false
			}
		}
		return true
	})
	t.Logf("expired key deleted everywhere %v after SET", time.Since(start))
	for _, n := range c.Nodes {
		if raw(n, keep) == nil {
			t.Fatal("a key without expiry was deleted")
		}
	}
}
