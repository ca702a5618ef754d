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

// TestStreamJobQueue is the reliable-queue pattern through go-redis's
// ClusterClient on a 3-node cluster: producers XADD jobs, three consumers
// of one group XREADGROUP them and XACK, one consumer dies holding jobs it
// never acknowledges, another XAUTOCLAIMs them, and the leader of the
// stream's group is stopped in the middle. Every job is processed at least
// once and every entry acknowledged exactly once: XACK answers 1 once per
// ID across all consumers (an XACK whose outcome is unknown, because the
// leader went away, may have been the one: such IDs must end up no longer
// pending).
// noRetryInt is a command go-redis does not send again after a network
// error (whose outcome is unknown).
type noRetryInt struct{ *redis.IntCmd }

func (noRetryInt) NoRetry() bool { return true }

func TestStreamJobQueue(t *testing.T) {
	const jobs = 400
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 3)
	defer rdb.Close()
	key, _ := keyInGroup(t, c, 0, "jobs:")
	const group = "workers"
	if err := rdb.XGroupCreateMkStream(ctx, key, group, "0").Err(); err != nil {
		t.Fatal(err)
	}

	var (
		mu        sync.Mutex
		processed = map[string]int{} // job -> times processed
		acks      = map[string]int{} // entry ID -> XACK replies of 1
		uncertain = map[string]bool{}
		seen      = map[string][]string{} // entry ID -> how it was delivered (diagnostics)
		produced  atomic.Int64
		stop      = make(chan struct{})
	)
	start := time.Now()
	ack := func(id string) {
		for {
			// Not retried by go-redis after a connection error: a retried
			// XACK whose first try was applied answers 0, which would hide
			// that the first one acknowledged the ID.
			cmd := noRetryInt{redis.NewIntCmd(ctx, "XACK", key, group, id)}
			_ = rdb.Process(ctx, cmd)
			n, err := cmd.Result()
			mu.Lock()
			if err == nil {
				if n == 1 {
					acks[id]++
				}
				seen[id] = append(seen[id], "xack "+strconv.FormatInt(n, 10)+" at "+time.Since(start).String())
				mu.Unlock()
				return
			}
			uncertain[id] = true
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	handle := func(how string, msgs []redis.XMessage) {
		for _, m := range msgs {
			mu.Lock()
			seen[m.ID] = append(seen[m.ID], how+" at "+time.Since(start).String())
			mu.Unlock()
			if job, ok := m.Values["job"].(string); ok {
				mu.Lock()
				processed[job]++
				mu.Unlock()
			}
			ack(m.ID)
		}
	}

	// Producers.
	var prod sync.WaitGroup
	for p := range 2 {
		prod.Go(func() {
			for i := p; i < jobs; i += 2 {
				for {
					err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []string{"job", strconv.Itoa(i)}}).Err()
					if err == nil {
						produced.Add(1)
						break
					}
					time.Sleep(20 * time.Millisecond) // retried: a job may be added twice
				}
				time.Sleep(time.Millisecond)
			}
		})
	}

	// Consumers: c3 takes one batch and dies without acknowledging it.
	var cons sync.WaitGroup
	died := make(chan struct{})
	cons.Go(func() {
		for {
			res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c3",
				Streams: []string{key, ">"}, Count: 5, Block: 200 * time.Millisecond}).Result()
			if err == nil && len(res) > 0 && len(res[0].Messages) > 0 {
				mu.Lock()
				for _, m := range res[0].Messages {
					seen[m.ID] = append(seen[m.ID], "c3 (dies)")
				}
				mu.Unlock()
				close(died)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	for _, name := range []string{"c1", "c2"} {
		cons.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: name,
					Streams: []string{key, ">"}, Count: 10, Block: 200 * time.Millisecond}).Result()
				if err != nil {
					if !errors.Is(err, redis.Nil) {
						time.Sleep(20 * time.Millisecond)
					}
				} else {
					for _, s := range res {
						handle("xreadgroup "+name, s.Messages)
					}
				}
				if name != "c1" {
					continue
				}
				// c1 also reclaims what stayed pending too long (c3's jobs,
				// and deliveries whose replies were lost in the failover).
				msgs, _, err := rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: group,
					Consumer: name, MinIdle: 300 * time.Millisecond, Start: "0", Count: 50}).Result()
				if err == nil {
					handle("xautoclaim", msgs)
				}
			}
		})
	}

	// Stop the stream group's leader once some work is done.
	select {
	case <-died:
	case <-time.After(30 * time.Second):
		t.Fatal("c3 never got a job")
	}
	for produced.Load() < jobs/3 {
		time.Sleep(10 * time.Millisecond)
	}
	victim := c.LeaderIndex(0)
	stoppedAt := time.Since(start)
	c.StopNode(victim)
	defer c.RestartNode(victim)
	t.Logf("stopped at %v, stop returned at %v", stoppedAt, time.Since(start))
	t.Logf("stopped node %d (leader of the stream's group) after %d jobs", victim, produced.Load())
	prod.Wait()

	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		done := len(processed) == jobs
		mu.Unlock()
		if done {
			// Nothing pending, and every entry delivered (a job added twice
			// by a retried XADD has a second entry to consume too).
			p, err := rdb.XPending(ctx, key, group).Result()
			last, err2 := rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
			gs, err3 := rdb.XInfoGroups(ctx, key).Result()
			if err == nil && err2 == nil && err3 == nil && p.Count == 0 && len(last) == 1 &&
				len(gs) == 1 && gs[0].LastDeliveredID == last[0].ID {
				break
			}
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("not done: %d of %d jobs processed", len(processed), jobs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	cons.Wait()

	mu.Lock()
	defer mu.Unlock()
	for i := range jobs {
		if processed[strconv.Itoa(i)] == 0 {
			t.Errorf("job %d never processed", i)
		}
	}
	entries, err := rdb.XRange(ctx, key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	again := 0
	for _, e := range entries {
		switch n := acks[e.ID]; {
		case n > 1:
			t.Errorf("entry %s acknowledged %d times", e.ID, n)
		case n == 0 && !uncertain[e.ID]:
			t.Errorf("entry %s (%v) never acknowledged; delivered: %v", e.ID, e.Values, seen[e.ID])
		}
	}
	for _, n := range processed {
		again += n - 1
	}
	t.Logf("%d entries for %d jobs, %d jobs processed more than once, %d acks of unknown outcome",
		len(entries), jobs, again, len(uncertain))
}

// XREAD … BLOCK through a cluster client: it waits for an XADD from another
// client (and `$` means "after the last entry when it blocked"), and a short
// BLOCK with nothing new returns nil after its timeout.
func TestStreamXReadBlock(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, protocol := range []int{2, 3} {
		rdb := clusterClient(c, protocol)
		defer rdb.Close()
		key := fmt.Sprintf("{xb%d}s", protocol)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-1", Values: []string{"f", "old"}}).Err(); err != nil {
			t.Fatal(err)
		}
		got := make(chan []redis.XStream, 1)
		errs := make(chan error, 1)
		go func() {
			res, err := rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{key, "$"}, Block: 0}).Result()
			if err != nil {
				errs <- err
				return
			}
			got <- res
		}()
		writer := clusterClient(c, 2)
		defer writer.Close()
		// Add entries until the blocked reader reports one: it may block
		// after the first XADD, and `$` then skips that one.
		var res []redis.XStream
		for i := 2; res == nil; i++ {
			if err := writer.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: fmt.Sprintf("%d-1", i), Values: []string{"f", "new"}}).Err(); err != nil {
				t.Fatal(err)
			}
			select {
			case res = <-got:
			case err := <-errs:
				t.Fatalf("RESP%d XREAD BLOCK: %v", protocol, err)
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				t.Fatalf("RESP%d XREAD BLOCK never returned", protocol)
			}
		}
		if len(res) != 1 || res[0].Stream != key || len(res[0].Messages) != 1 || res[0].Messages[0].Values["f"] != "new" {
			t.Fatalf("RESP%d XREAD BLOCK = %+v, want one new entry of %s", protocol, res, key)
		}
		start := time.Now()
		_, err := rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{key, "$"}, Block: 200 * time.Millisecond}).Result()
		if !errors.Is(err, redis.Nil) {
			t.Fatalf("RESP%d XREAD BLOCK 200 with nothing new: %v, want nil", protocol, err)
		}
		if waited := time.Since(start); waited < 200*time.Millisecond {
			t.Fatalf("RESP%d XREAD BLOCK 200 returned after %v", protocol, waited)
		}
	}
}
