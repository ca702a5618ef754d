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
	c := newTestCluster(t, 3, 3)
	k := keyIn(2, 3, "ttl")
	keep := keyIn(2, 3, "keep")
	c.write(2, "SET", keep, "v")
	start := time.Now()
	c.write(2, "SET", k, "v", "PX", "200")
	raw := func(n *Node, key string) (o *store.Object) {
		_ = grp(n, 2).ReadStale(func(st *fsm.State) {
			st.View(func(s *store.Store) { o = s.GetRaw([]byte(key)) })
		})
		return o
	}
	if o := raw(c.nodes[c.leader(2)], k); o == nil && time.Since(start) < 150*time.Millisecond {
		t.Fatal("key missing right after SET")
	}
	pollUntil(t, "active expiry on every replica", func() bool {
		for _, n := range c.nodes {
			if raw(n, k) != nil {
				return false
			}
		}
		return true
	})
	t.Logf("expired key deleted everywhere %v after SET", time.Since(start))
	for _, n := range c.nodes {
		if raw(n, keep) == nil {
			t.Fatal("a key without expiry was deleted")
		}
	}
}
