package testcluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/slots"
)

const (
	totalKeys = 10000
	workers   = 64
)

func clusterClient(c *testcluster.Cluster, protocol int) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        c.Addrs(),
		Protocol:     protocol,
		MaxRedirects: 16,
		DialTimeout:  time.Second,
		ReadTimeout:  5 * time.Second,
		WriteTimeout: 5 * time.Second,
		PoolSize:     workers,
		// go-redis refreshes its slot map on MOVED/ASK, and otherwise only
		// every ClusterStateReloadInterval (default 60 s): after a node dies,
		// requests for its slots keep failing to dial until then.
		ClusterStateReloadInterval: time.Second,
	})
}

// parallel runs fn(i) for i in [0, n) on a bounded number of goroutines and
// returns the first error.
func parallel(n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs <- fmt.Errorf("item %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func TestGoRedisCluster(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 2)
	defer rdb.Close()

	t.Run("cluster slots", func(t *testing.T) {
		//lint:ignore SA1019 CLUSTER SLOTS is still what go-redis routes by.
		ranges, err := rdb.ClusterSlots(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		next := 0
		masters := map[string]bool{}
		if len(ranges) != 3 {
			t.Fatalf("CLUSTER SLOTS: %d ranges, want 3: %+v", len(ranges), ranges)
		}
		for _, r := range ranges {
			if r.Start != next {
				t.Fatalf("range starts at %d, want %d", r.Start, next)
			}
			next = r.End + 1
			if len(r.Nodes) != 3 {
				t.Errorf("range %d-%d: %d nodes, want a master and 2 replicas", r.Start, r.End, len(r.Nodes))
			}
			masters[r.Nodes[0].ID] = true
		}
		if next != slots.Count {
			t.Errorf("CLUSTER SLOTS covers up to %d, want %d", next, slots.Count)
		}
		if len(masters) != 3 {
			t.Errorf("CLUSTER SLOTS names %d distinct masters, want one per node", len(masters))
		}
	})

	t.Run("cluster shards and nodes", func(t *testing.T) {
		shards, err := rdb.ClusterShards(ctx).Result()
		if err != nil || len(shards) != 3 {
			t.Fatalf("CLUSTER SHARDS = %d shards, %v", len(shards), err)
		}
		for _, sh := range shards {
			roles := map[string]int{}
			for _, n := range sh.Nodes {
				roles[n.Role]++
				if len(n.ID) != 40 || n.Health != "online" {
					t.Errorf("shard node %+v", n)
				}
			}
			if len(sh.Slots) != 1 || roles["master"] != 1 || roles["replica"] != 2 {
				t.Errorf("shard %+v: roles %v", sh.Slots, roles)
			}
		}
		nodes, err := rdb.ClusterNodes(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		lines := splitLines(strings.TrimSpace(nodes))
		myself := 0
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 8 || len(f[0]) != 40 || f[7] != "connected" {
				t.Errorf("CLUSTER NODES line %q", l)
			}
			if strings.Contains(f[2], "myself") {
				myself++
			}
		}
		if len(lines) != 3 || myself != 1 {
			t.Errorf("CLUSTER NODES:\n%s", nodes)
		}
	})

	start := time.Now()
	err := parallel(totalKeys, func(i int) error {
		return rdb.Set(ctx, "key:"+strconv.Itoa(i), "v"+strconv.Itoa(i), 0).Err()
	})
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	writeTime := time.Since(start)
	start = time.Now()
	err = readBack(ctx, rdb, totalKeys)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	t.Logf("%d SETs in %v (%.0f/s), %d GETs in %v (%.0f/s), %d goroutines",
		totalKeys, writeTime, totalKeys/writeTime.Seconds(), totalKeys, time.Since(start), totalKeys/time.Since(start).Seconds(), workers)

	t.Run("dbsize and scan over masters", func(t *testing.T) {
		n, err := rdb.DBSize(ctx).Result()
		if err != nil || n != totalKeys {
			t.Fatalf("DBSIZE over masters = %d, %v; want %d", n, err, totalKeys)
		}
		var mu sync.Mutex
		seen := map[string]bool{}
		err = rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			iter := m.Scan(ctx, 0, "key:*", 500).Iterator()
			for iter.Next(ctx) {
				mu.Lock()
				seen[iter.Val()] = true
				mu.Unlock()
			}
			return iter.Err()
		})
		if err != nil || len(seen) != totalKeys {
			t.Fatalf("SCAN over masters saw %d keys, %v; want %d", len(seen), err, totalKeys)
		}
	})

	t.Run("resp3", func(t *testing.T) {
		r3 := clusterClient(c, 3)
		defer r3.Close()
		if got, err := r3.Get(ctx, "key:42").Result(); err != nil || got != "v42" {
			t.Fatalf("RESP3 GET = %q, %v", got, err)
		}
		if err := r3.Get(ctx, "nosuchkey").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("RESP3 GET missing key: %v, want redis.Nil", err)
		}
		if err := r3.Set(ctx, "resp3", "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if ttl, err := r3.TTL(ctx, "resp3").Result(); err != nil || ttl <= 0 {
			t.Fatalf("TTL = %v, %v", ttl, err)
		}
		info, err := r3.ClusterInfo(ctx).Result()
		if err != nil || !containsLine(info, "cluster_state:ok") {
			t.Fatalf("RESP3 CLUSTER INFO = %q, %v", info, err)
		}
		pipe := r3.Pipeline()
		incrs := make([]*redis.IntCmd, 20)
		for i := range incrs {
			incrs[i] = pipe.Incr(ctx, "{p}counter")
		}
		get := pipe.Get(ctx, "{p}counter")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range incrs {
			if cmd.Val() != int64(i+1) {
				t.Fatalf("pipelined INCR %d = %d", i, cmd.Val())
			}
		}
		if get.Val() != "20" {
			t.Fatalf("GET after pipelined INCRs = %q", get.Val())
		}
	})

	t.Run("failover", func(t *testing.T) {
		testFailover(t, c, rdb)
	})
}

func containsLine(text, line string) bool {
	for _, l := range splitLines(text) {
		if l == line {
			return true
		}
	}
	return false
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		line := s[:i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		out = append(out, line)
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// testFailover stops the node leading group 0, checks that writes to that
// group's slots resume on the new leader, and that every acknowledged write
// (before and after the failover) reads back.
func testFailover(t *testing.T, c *testcluster.Cluster, rdb *redis.ClusterClient) {
	ctx := context.Background()
	victim := c.LeaderIndex(0)
	if victim < 0 {
		t.Fatal("no leader for group 0")
	}
	acked := map[string]string{}
	var keys []string
	for i := 0; len(keys) < 200; i++ {
		k, _ := keyInGroup(t, c, 0, "fo:"+strconv.Itoa(i)+":")
		keys = append(keys, k)
	}
	stopped := time.Now()
	c.StopNode(victim)

	var firstOK time.Duration
	deadline := time.Now().Add(30 * time.Second)
	for i, k := range keys {
		v := "after" + strconv.Itoa(i)
		for {
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err := rdb.Set(wctx, k, v, 0).Err()
			cancel()
			if err == nil {
				acked[k] = v
				if firstOK == 0 {
					firstOK = time.Since(stopped)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("writes to group 0 did not resume after stopping node %d: %v", victim, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("failover: first acknowledged write %v after stopping node %d", firstOK, victim)
	if li := c.LeaderIndex(0); li < 0 || li == victim {
		t.Fatalf("group 0 leader after failover: %d", li)
	}

	for k, want := range acked {
		got, err := rdb.Get(ctx, k).Result()
		if err != nil || got != want {
			t.Fatalf("acknowledged %s=%s reads back %q, %v", k, want, got, err)
		}
	}
	err := readBack(ctx, rdb, totalKeys)
	if err != nil {
		t.Fatalf("reading the first %d keys after the failover: %v", totalKeys, err)
	}

	c.RestartNode(victim)
	c.WaitLeaders(20 * time.Second)
	if got, err := rdb.Get(ctx, keys[0]).Result(); err != nil || got != acked[keys[0]] {
		t.Fatalf("after restart: %q, %v", got, err)
	}
}

// readBack reads key:0 … key:n-1 and checks each holds "v<i>".
func readBack(ctx context.Context, rdb *redis.ClusterClient, n int) error {
	return parallel(n, func(i int) error {
		got, err := rdb.Get(ctx, "key:"+strconv.Itoa(i)).Result()
		if err != nil {
			return err
		}
		if want := "v" + strconv.Itoa(i); got != want {
			return fmt.Errorf("got %q want %q", got, want)
		}
		return nil
	})
}
