package difftest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/testcluster"
)

// Client-side caching through real client libraries: go-redis v9's own
// cache (Options.ClientSideCache, CLIENT TRACKING in RESP3), and
// redis-py's (cache_config) when Python has it.

// cachedClient is a go-redis client with its own local cache on addr
// (READONLY when readonly: it reads from a follower's replica).
func cachedClient(t *testing.T, addr string, readonly bool) (*redis.Client, *redis.LocalCache) {
	cache := redis.NewLocalCache(redis.CacheConfig{MaxEntries: 1024})
	opt := &redis.Options{Addr: addr, Protocol: 3, ClientSideCache: cache, DialTimeout: time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	if readonly {
		opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c, cache
}

// TestTrackingGoRedisCache: go-redis's client-side cache against a 3-node
// cluster. A client of the key's leader and a READONLY client of a
// follower cache the key (the second read is a cache hit: no round trip),
// and both see every change soon after it happens — a write through the
// leader, active expiry, FLUSHALL — because the invalidations reach them.
// Without them the cache (no MaxStaleness) would serve the old value for
// ever.
func TestTrackingGoRedisCache(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(30 * time.Second)
	ctx := context.Background()
	const key = "csc:{k}"
	var leader, follower string
	cluster.PollUntil(t, "the key's leader", func() bool {
		leader, follower = "", ""
		for _, a := range c.Addrs() {
			cl := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
			err := cl.Set(ctx, key, "v0", 0).Err()
			cl.Close()
			switch {
			case err == nil:
				leader = a
			case strings.HasPrefix(err.Error(), "MOVED"):
				follower = a
			}
		}
		return leader != "" && follower != ""
	})
	mut := redis.NewClient(&redis.Options{Addr: leader})
	t.Cleanup(func() { mut.Close() })

	for _, tc := range []struct {
		name     string
		addr     string
		readonly bool
	}{{"leader", leader, false}, {"follower", follower, true}} {
		t.Run(tc.name, func(t *testing.T) {
			cl, cache := cachedClient(t, tc.addr, tc.readonly)
			get := func(k string) string {
				v, err := cl.Get(ctx, k).Result()
				if errors.Is(err, redis.Nil) {
					return "(nil)"
				}
				if err != nil {
					t.Fatalf("GET %s: %v", k, err)
				}
				return v
			}
			cur := must[string](t, mut.Get(ctx, key))
			cluster.PollUntil(t, "the replica caught up", func() bool { return get(key) == cur })
			hits := cache.Stats().Hits
			if get(key) != cur || cache.Stats().Hits == hits {
				t.Fatalf("the second GET was not served from the cache (hits %d -> %d)", hits, cache.Stats().Hits)
			}

			must[string](t, mut.Set(ctx, key, cur+"+", 0))
			cluster.PollUntil(t, "the write's invalidation", func() bool { return get(key) == cur+"+" })

			exp := key + ":exp"
			must[string](t, mut.Set(ctx, exp, "short", 400*time.Millisecond))
			cluster.PollUntil(t, "the short-lived key", func() bool { return get(exp) == "short" })
			cluster.PollUntil(t, "active expiry's invalidation", func() bool { return get(exp) == "(nil)" })

			get(key)
			must[string](t, mut.FlushAll(ctx))
			cluster.PollUntil(t, "FLUSHALL's invalidation", func() bool { return get(key) == "(nil)" })
			must[string](t, mut.Set(ctx, key, "v0", 0))
		})
	}
}

// TestTrackingRedisPy runs testdata/csc.py, redis-py's client-side cache
// against slotraft, when Python has redis-py 5.1 or later (cache_config);
// it is skipped, saying why, otherwise: nothing is installed for it.
func TestTrackingRedisPy(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	out, err := exec.Command(py, "-c", "import redis, inspect; print(redis.__version__); "+
		"print('cache_config' in inspect.signature(redis.Redis.__init__).parameters)").CombinedOutput()
	if err != nil {
		t.Skipf("redis-py is not installed (python3 -c 'import redis' fails); Debian's python3-redis, version 5.1 or later, would run this test")
	}
	lines := strings.Fields(string(out))
	if len(lines) < 2 || lines[1] != "True" {
		t.Skipf("redis-py %s has no client-side cache (cache_config, redis-py 5.1+): skipped", lines[0])
	}
	addr := startSlotraft(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "csc.py"))
	cmd := exec.Command(py, script, addr)
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("csc.py: %v\n%s", err, out)
	}
}
