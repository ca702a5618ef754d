package testcluster_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// atomicUnderFailover calls apply(ctx, i) for i = 1, 2, … — each call sets
// every key of keys to i in one atomic operation (a transaction, a script)
// — and stops the leader of group gi while they run. Afterwards every key
// must hold the same value (nothing was applied partly) and that value must
// be at least the last acknowledged i (nothing acknowledged was lost). It
// returns the stopped node, for the caller to restart.
func atomicUnderFailover(t *testing.T, c *testcluster.Cluster, rdb *redis.ClusterClient, gi int, keys []string,
	what string, apply func(ctx context.Context, i int64) error) int {
	t.Helper()
	ctx := context.Background()
	var acked, calls atomic.Int64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := apply(cctx, i)
			cancel()
			calls.Add(1)
			if err == nil {
				acked.Store(i)
			} else {
				time.Sleep(20 * time.Millisecond) // back off while the group elects
			}
		}
	}()
	waitAcked := func(n int64, phase string) {
		deadline := time.Now().Add(30 * time.Second)
		for acked.Load() < n {
			if time.Now().After(deadline) {
				close(stop)
				<-done
				t.Fatalf("%s: %d acknowledged %s", phase, acked.Load(), what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitAcked(20, "before the failover")
	victim := c.LeaderIndex(gi)
	c.StopNode(victim)
	waitAcked(acked.Load()+20, "after stopping node "+strconv.Itoa(victim))
	close(stop)
	<-done
	vals, err := rdb.MGet(ctx, keys...).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v != vals[0] {
			t.Fatalf("key %d = %v, key 0 = %v: %s applied partly", i, v, vals[0], what)
		}
	}
	n, _ := strconv.ParseInt(vals[0].(string), 10, 64)
	if n < acked.Load() {
		t.Fatalf("keys at %d < last acknowledged %d: an acknowledged write was lost", n, acked.Load())
	}
	t.Logf("%s: %d calls, last acknowledged %d, keys at %d after stopping node %d", what, calls.Load(), acked.Load(), n, victim)
	return victim
}
