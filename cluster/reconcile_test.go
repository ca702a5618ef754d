package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
)

// TestMetaCurrentNeedsTheLeadersMap: a meta follower that knows the leader
// but has not yet received its latest entries holds a stale map; it must
// not call that map current (keepAsideStale would move aside the data of a
// group the newer map gives it, which then reopens as an empty voter).
func TestMetaCurrentNeedsTheLeadersMap(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	li := c.metaLeader()
	leader, fi := c.Nodes[li], (li+1)%3
	follower := c.Nodes[fi]
	PollUntil(t, "the follower to have the leader's map", func() bool {
		return follower.meta.fsm.Map().Epoch == leader.meta.fsm.Map().Epoch
	})
	// The leader's entries reach the follower late; heartbeats still do, so
	// it keeps knowing the leader.
	c.Faults.Delay(c.Peers[li].ID, c.Peers[fi].ID, 100*time.Millisecond)
	defer c.Faults.Delay(c.Peers[li].ID, c.Peers[fi].ID, 0)
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := leader.ProposeMeta(ctx, meta.SetRebalance{On: !leader.meta.fsm.Map().Rebalance})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		stale, current := follower.meta.fsm.Map(), leader.meta.fsm.Map()
		if stale.Epoch >= current.Epoch {
			if attempt == 10 {
				t.Fatal("the follower never lagged behind the leader")
			}
			continue // it got the entry already: try again
		}
		if follower.metaCurrent(stale) {
			t.Fatalf("metaCurrent is true on a follower whose map is at epoch %d while the leader's is at %d", stale.Epoch, current.Epoch)
		}
		if leader.metaCurrent(stale) {
			t.Fatalf("metaCurrent is true on the leader for a map at epoch %d while its own is at %d", stale.Epoch, current.Epoch)
		}
		c.Faults.Delay(c.Peers[li].ID, c.Peers[fi].ID, 0)
		PollUntil(t, "the follower's map to be current once it has the leader's entries", func() bool {
			return follower.metaCurrent(follower.meta.fsm.Map())
		})
		return
	}
}
