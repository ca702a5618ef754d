package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// TestRollingRestart restarts every node of a 3-node cluster, one at a time,
// each leaving as on SIGTERM (hand off leaderships, wait until no group
// needs it for a quorum), while clients write and read: they see no error
// (redirects are followed by go-redis), and every acknowledged write is
// there at the end.
func TestRollingRestart(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Groups: 3, Replicas: 3})
	c.WaitReady(30 * time.Second)
	rdb := clusterClient(c, 2)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const clients, keysPerClient = 4, 50
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		errMu   sync.Mutex
		errs    []error
		acked   [clients][keysPerClient]atomic.Int64 // last acknowledged value per key
		ops     atomic.Int64
		failure = func(err error) {
			errMu.Lock()
			errs = append(errs, err)
			errMu.Unlock()
		}
	)
	for w := range clients {
		wg.Go(func() {
			for i := int64(1); !stop.Load() && i < 1_000_000; i++ {
				k := int(i) % keysPerClient
				key := fmt.Sprintf("roll:%d:%d", w, k)
				if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
					failure(fmt.Errorf("SET %s: %w", key, err))
					return
				}
				acked[w][k].Store(i)
				got, err := rdb.Get(ctx, key).Int64()
				if err != nil || got != i {
					failure(fmt.Errorf("GET %s = %d, %v; want %d", key, got, err, i))
					return
				}
				ops.Add(2)
			}
		})
	}
	waitOps := func(n int64) {
		deadline := time.Now().Add(30 * time.Second)
		for start := ops.Load(); ops.Load() < start+n; {
			if time.Now().After(deadline) {
				t.Fatalf("clients made no progress: %d ops", ops.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitOps(200)
	for i := range c.Len() {
		lctx, lcancel := context.WithTimeout(ctx, 30*time.Second)
		if err := c.Node(i).Leave(lctx, time.Minute); err != nil {
			t.Errorf("node %d leave: %v", i, err)
		}
		lcancel()
		c.StopNode(i)
		waitOps(200) // the others serve while it is down
		c.RestartNode(i)
		waitOps(200)
	}
	stop.Store(true)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("client errors during the rolling restart (%d ops): %v", ops.Load(), errors.Join(errs...))
	}
	for w := range clients {
		for k := range keysPerClient {
			key := fmt.Sprintf("roll:%d:%d", w, k)
			want := acked[w][k].Load()
			if want == 0 {
				continue
			}
			got, err := rdb.Get(ctx, key).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("final GET %s: %v", key, err)
			}
			if n, _ := strconv.ParseInt(got, 10, 64); n != want {
				t.Errorf("%s = %q, want the last acknowledged %d", key, got, want)
			}
		}
	}
	t.Logf("%d operations through 3 restarts", ops.Load())
}
