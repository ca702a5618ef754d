package cluster

import (
	"context"
	"sync"
	"testing"

	"github.com/slotraft/slotraft/fsm"
)

// TestTrackedKeysEveryReplica: with tracking on, every replica reports
// what each entry touched, the leader with the origins its proposals were
// tagged with (by position in the batch), followers without; with it off,
// nothing is reported.
func TestTrackedKeysEveryReplica(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	const gid = 1
	c.LeadersSpread() // no transfer moves the leader under the test
	li := c.Leader(gid)
	var mu sync.Mutex
	got := make([][]TrackEvent, len(c.Nodes))
	for i, n := range c.Nodes {
		n.HandleTrackedKeys(func(ev TrackEvent) {
			mu.Lock()
			got[i] = append(got[i], ev)
			mu.Unlock()
		})
	}
	g, _ := c.Nodes[li].Group(gid)
	key := KeyIn(gid, 3, "tr")
	if _, err := g.Propose(context.Background(), [][][]byte{{[]byte("SET"), []byte(key), []byte("off")}}); err != nil {
		t.Fatal(err)
	}
	applied := g.AppliedIndex()
	for _, n := range c.Nodes { // every replica applied it with tracking off
		r, _ := n.Group(gid)
		PollUntil(t, "the replica caught up", func() bool { return r.AppliedIndex() >= applied })
		n.SetTracking(true)
	}
	// Two callers' proposals, one tagged, batched or not.
	var wg sync.WaitGroup
	for _, origin := range []uint64{0, 42} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if origin != 0 {
				ctx = WithOrigin(ctx, origin)
			}
			if _, err := g.Propose(ctx, [][][]byte{{[]byte("SET"), []byte(key), []byte("v")}}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	events := func(i int) []TrackEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]TrackEvent(nil), got[i]...)
	}
	for i := range c.Nodes {
		var origins []uint64
		PollUntil(t, "both writes reported", func() bool {
			origins = origins[:0]
			for _, ev := range events(i) {
				for _, k := range ev.Touched {
					if ev.Group != gid || k.Kind != fsm.KeyModified || string(k.Key) != key {
						t.Fatalf("node %d: report %+v", i, ev)
					}
					origins = append(origins, ev.OriginOf(k))
				}
			}
			return len(origins) >= 2
		})
		if len(origins) != 2 {
			t.Errorf("node %d: %d keys reported, want the 2 writes' (not the one made with tracking off)", i, len(origins))
		}
		want := 0
		if i == li {
			want = 42 // only the leader knows who proposed
		}
		found := false
		for _, o := range origins {
			found = found || o == 42
			if o != 0 && o != 42 {
				t.Errorf("node %d: origin %d", i, o)
			}
		}
		if found != (want == 42) {
			t.Errorf("node %d (leader %d): origins %v", i, li, origins)
		}
	}
	g.origins.mu.Lock()
	defer g.origins.mu.Unlock()
	if n := len(g.origins.m); n != 0 {
		t.Errorf("%d entries' origins kept after their outcome", n)
	}
}
