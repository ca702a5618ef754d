package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// blockResult is what a blocking call in a goroutine returned.
type blockResult struct {
	val []string
	err error
	at  time.Time
}

func blpopAsync(ctx context.Context, rdb *redis.ClusterClient, key string) <-chan blockResult {
	ch := make(chan blockResult, 1)
	go func() {
		v, err := rdb.BLPop(ctx, 0, key).Result()
		ch <- blockResult{v, err, time.Now()}
	}()
	return ch
}

// namedClient is a cluster client whose connections are named name.
func namedClient(c *testcluster.Cluster, name string) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), ClientName: name, MaxRedirects: 16, ReadTimeout: 5 * time.Second,
		ClusterStateReloadInterval: time.Second,
	})
}

// waitBlocked polls CLIENT LIST on every running node until a connection
// named name has sent cmd (it is then blocked in it or done with it).
func waitBlocked(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, name, cmd string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := false
		_ = rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			list, _ := m.ClientList(ctx).Result()
			for _, l := range strings.Split(list, "\n") {
				if strings.Contains(l, " name="+name+" ") && strings.Contains(l, " cmd="+cmd+" ") {
					found = true
				}
			}
			return nil
		})
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection named %s is blocked in %s", name, cmd)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBlockingCommands(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 2)
	defer rdb.Close()

	t.Run("woken by a push from another client", func(t *testing.T) {
		key, _ := keyInGroup(t, c, 1, "bl:wake:")
		// The pusher only knows another node: it learns the map there.
		other := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.Addrs()[(c.LeaderIndex(1)+1)%3]}, MaxRedirects: 16})
		defer other.Close()
		var lat []time.Duration
		for i := range 5 {
			ch := blpopAsync(ctx, rdb, key)
			time.Sleep(50 * time.Millisecond)
			pushed := time.Now()
			if err := other.LPush(ctx, key, "v"+strconv.Itoa(i)).Err(); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-ch:
				if r.err != nil || fmt.Sprint(r.val) != fmt.Sprintf("[%s v%d]", key, i) {
					t.Fatalf("BLPOP = %v, %v", r.val, r.err)
				}
				lat = append(lat, r.at.Sub(pushed))
			case <-time.After(10 * time.Second):
				t.Fatal("BLPOP not woken by LPUSH")
			}
		}
		t.Logf("wake-up latency (LPUSH sent to BLPOP answered): %v", lat)
	})

	t.Run("timeout", func(t *testing.T) {
		key, _ := keyInGroup(t, c, 0, "bl:timeout:")
		start := time.Now()
		err := rdb.Do(ctx, "BLPOP", key, "0.2").Err()
		took := time.Since(start)
		if !errors.Is(err, redis.Nil) || took < 200*time.Millisecond {
			t.Fatalf("BLPOP 0.2 = %v after %v, want nil after >= 200ms", err, took)
		}
		t.Logf("BLPOP with a 0.2 s timeout answered nil after %v", took)
		start = time.Now()
		err = rdb.Do(ctx, "BRPOPLPUSH", key, key, "0.15").Err()
		if took := time.Since(start); !errors.Is(err, redis.Nil) || took < 150*time.Millisecond {
			t.Fatalf("BRPOPLPUSH 0.15 = %v after %v", err, took)
		}
		if err := rdb.Do(ctx, "BLPOP", key, "-1").Err(); err == nil || err.Error() != "ERR timeout is negative" {
			t.Fatalf("negative timeout: %v", err)
		}
	})

	t.Run("fifo", func(t *testing.T) {
		key, _ := keyInGroup(t, c, 2, "bl:fifo:")
		var chans []<-chan blockResult
		for i := range 3 {
			name := "fifo" + strconv.Itoa(i)
			cl := namedClient(c, name)
			defer cl.Close()
			chans = append(chans, blpopAsync(ctx, cl, key))
			waitBlocked(t, ctx, rdb, name, "blpop")
		}
		if err := rdb.RPush(ctx, key, "a", "b", "c").Err(); err != nil {
			t.Fatal(err)
		}
		for i, ch := range chans {
			select {
			case r := <-ch:
				if want := fmt.Sprintf("[%s %c]", key, 'a'+i); r.err != nil || fmt.Sprint(r.val) != want {
					t.Fatalf("client %d got %v, %v; want %s", i, r.val, r.err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("client %d not served", i)
			}
		}
	})

	t.Run("reliable queue", func(t *testing.T) {
		const jobs = 20
		done := make(chan error, 1)
		go func() {
			for i := range jobs {
				//lint:ignore SA1019 BRPOPLPUSH is the command under test.
				job, err := rdb.BRPopLPush(ctx, "{q}pending", "{q}processing", 0).Result()
				if err != nil || job != "job"+strconv.Itoa(i) {
					done <- fmt.Errorf("job %d: %q, %v", i, job, err)
					return
				}
				if n, err := rdb.LRem(ctx, "{q}processing", 1, job).Result(); err != nil || n != 1 {
					done <- fmt.Errorf("LREM %s: %d, %v", job, n, err)
					return
				}
			}
			done <- nil
		}()
		for i := range jobs {
			if err := rdb.LPush(ctx, "{q}pending", "job"+strconv.Itoa(i)).Err(); err != nil {
				t.Fatal(err)
			}
			if i%3 == 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("worker stuck")
		}
		if n, err := rdb.Exists(ctx, "{q}pending", "{q}processing").Result(); err != nil || n != 0 {
			t.Fatalf("queues left: %d, %v", n, err)
		}
	})

	t.Run("leader stopped while blocked", func(t *testing.T) {
		key, _ := keyInGroup(t, c, 0, "bl:failover:")
		victim := c.LeaderIndex(0)
		bctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cl := namedClient(c, "failover")
		defer cl.Close()
		ch := blpopAsync(bctx, cl, key)
		waitBlocked(t, ctx, rdb, "failover", "blpop")
		c.StopNode(victim)
		defer c.RestartNode(victim)
		// The client gets an error (connection closed, or write outcome
		// unknown: never a redirect, the BLPOP is in the log): never a hang. Push
		// until a new leader takes writes, which also serves a re-block.
		deadline := time.Now().Add(30 * time.Second)
		for {
			wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
			err := rdb.LPush(wctx, key, "after").Err()
			wcancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no write after failover: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		select {
		case r := <-ch:
			if errors.Is(r.err, context.DeadlineExceeded) {
				t.Fatalf("BLPOP hung until the context deadline")
			}
			t.Logf("blocked client after its leader stopped: %v, %v", r.val, r.err)
		case <-bctx.Done():
			t.Fatal("BLPOP still blocked after failover")
		}
	})
}
