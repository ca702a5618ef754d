package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/slots"
)

// proxyWriter increments one key through the proxy, one command at a
// time, and checks every reply against what it acknowledged before.
type proxyWriter struct {
	key     string
	last    int64 // the last value an INCR returned
	acked   int64 // INCRs that returned a value
	unknown int64 // INCRs answered "outcome unknown"
	slowest time.Duration
	err     error // a wrong answer or an error that is not a stall
}

func (w *proxyWriter) incr(ctx context.Context, rdb *redis.Client) {
	start := time.Now()
	v, err := rdb.Incr(ctx, w.key).Result()
	w.slowest = max(w.slowest, time.Since(start))
	switch {
	case err == nil && (v <= w.last || (v > w.last+1 && w.unknown == 0)):
		w.err = fmt.Errorf("INCR %s = %d after %d with %d unknown outcomes: a wrong answer", w.key, v, w.last, w.unknown)
	case err == nil:
		w.last = v
		w.acked++
	case strings.Contains(err.Error(), "outcome unknown"):
		w.unknown++
	default:
		w.err = fmt.Errorf("INCR %s: %w (a failover must be a stall)", w.key, err)
	}
}

// proxyFailover kills -9 the node leading one writer's key (not the
// proxy's node) while writers increment their keys through the proxy:
// each writer sees a stall, at most the command it had in flight answers
// "outcome unknown", and every acknowledged increment is kept.
func proxyFailover(t *testing.T, c *testCluster, cli, proxy string) {
	entries := c.clusterSlots(t, cli, c.nodes[0])
	var victim *testNode
	var writers []*proxyWriter
	for i := 0; len(writers) < 4; i++ {
		key := "failover:" + strconv.Itoa(i)
		owner := c.nodeByPort(t, masterOf(t, entries, int(slots.Of([]byte(key)))))
		switch {
		case owner == c.nodes[0] && len(writers) < 3:
			writers = append(writers, &proxyWriter{key: key})
		case owner != c.nodes[0] && (victim == nil || owner == victim):
			victim = owner
			writers = append(writers, &proxyWriter{key: key})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	killed := make(chan struct{})
	var wg, warm sync.WaitGroup
	for _, w := range writers {
		rdb := redis.NewClient(&redis.Options{Addr: proxy, MaxRetries: -1, PoolSize: 1, ReadTimeout: time.Minute})
		defer rdb.Close()
		warm.Add(1)
		wg.Go(func() {
			for i := 0; i < 30 && w.err == nil; i++ {
				w.incr(ctx, rdb)
			}
			warm.Done()
			w.incr(ctx, rdb) // in flight, or about to be, at the kill
			<-killed
			for after := 0; after < 50 && w.err == nil && ctx.Err() == nil; after++ {
				w.incr(ctx, rdb)
			}
		})
	}
	warm.Wait()
	victim.kill(t)
	close(killed)
	wg.Wait()
	check := redis.NewClient(&redis.Options{Addr: proxy, MaxRetries: -1})
	defer check.Close()
	for _, w := range writers {
		if w.err != nil {
			t.Fatal(w.err)
		}
		// The command in flight at the kill; and one a leader change of a
		// loaded machine may add (the node's own "write outcome unknown").
		if w.unknown > 2 {
			t.Fatalf("%s: %d outcomes unknown; only the command in flight at the kill may be", w.key, w.unknown)
		}
		v, err := check.Get(ctx, w.key).Int64()
		if err != nil || v < w.last || v > w.acked+w.unknown {
			t.Fatalf("%s = %d (%v): want between the last acknowledged %d and %d acks + %d unknown",
				w.key, v, err, w.last, w.acked, w.unknown)
		}
		t.Logf("%s: %d acks, %d unknown, slowest INCR %v", w.key, w.acked, w.unknown, w.slowest)
	}
}
