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
)

// The scripts users copy, run through a go-redis ClusterClient.

// Compare-and-delete release of a lock taken with SET key token NX PX.
var unlockScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
else
  return 0
end`)

// Rolling-window rate limiter: at most ARGV[2] requests per ARGV[1] ms;
// ARGV[3] is the client's clock (ms), ARGV[4] a unique request id.
var rateLimitScript = redis.NewScript(`
local window, limit, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  return 1
end
return 0`)

// The retry-after variant: {allowed, ms to wait before the next request can pass}.
var rateLimitRetryScript = redis.NewScript(`
local window, limit, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}`)

// Token bucket: capacity ARGV[1], ARGV[2] tokens per second, now ARGV[3] (ms),
// cost ARGV[4]; returns {allowed, tokens left}.
var tokenBucketScript = redis.NewScript(`
local capacity, rate, now, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(b[1]), tonumber(b[2])
if tokens == nil then tokens, ts = capacity, now end
tokens = math.min(capacity, tokens + (now - ts) * rate / 1000)
local allowed = 0
if tokens >= cost then tokens = tokens - cost; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return {allowed, math.floor(tokens)}`)

func TestScripting(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 2)
	defer rdb.Close()

	t.Run("script cache", func(t *testing.T) {
		body := "return redis.call('incr', KEYS[1])"
		sha, err := rdb.ScriptLoad(ctx, body).Result()
		if err != nil || len(sha) != 40 {
			t.Fatalf("SCRIPT LOAD = %q, %v", sha, err)
		}
		ex, err := rdb.ScriptExists(ctx, sha, strings.Repeat("0", 40)).Result()
		if err != nil || len(ex) != 2 || !ex[0] || ex[1] {
			t.Fatalf("SCRIPT EXISTS = %v, %v", ex, err)
		}
		// Every group has it: EVALSHA works for keys in every slot group.
		for gi := range 3 {
			k, _ := keyInGroup(t, c, gi, "sc:")
			if n, err := rdb.EvalSha(ctx, sha, []string{k}).Int(); err != nil || n != 1 {
				t.Fatalf("EVALSHA in group %d = %d, %v", gi, n, err)
			}
		}
		err = rdb.EvalSha(ctx, strings.Repeat("f", 40), []string{"k"}).Err()
		if err == nil || err.Error() != "NOSCRIPT No matching script. Please use EVAL." {
			t.Fatalf("unknown sha: %v", err)
		}
		if err := rdb.Do(ctx, "SCRIPT", "KILL").Err(); err == nil || err.Error() != "NOTBUSY No scripts in execution right now." {
			t.Fatalf("SCRIPT KILL: %v", err)
		}
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if ex, _ := rdb.ScriptExists(ctx, sha).Result(); len(ex) != 1 || ex[0] {
			t.Fatalf("after SCRIPT FLUSH: %v", ex)
		}
		// Keyless scripts run; they may not touch keys.
		if v, err := rdb.Eval(ctx, "return ARGV[1]", nil, "x").Text(); err != nil || v != "x" {
			t.Fatalf("keyless EVAL = %q, %v", v, err)
		}
		err = rdb.Eval(ctx, "return redis.call('get', 'k')", nil).Err()
		if err == nil || !strings.Contains(err.Error(), "non local key") {
			t.Fatalf("keyless script touching a key: %v", err)
		}
		if err := rdb.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
			t.Fatalf("cross-slot keys: %v", err)
		}
		if err := rdb.Do(ctx, "EVAL", "return 1", "-1").Err(); err == nil || err.Error() != "ERR Number of keys can't be negative" {
			t.Fatalf("negative numkeys: %v", err)
		}
		// EVAL_RO reads and refuses writes.
		rdb.Set(ctx, "ro:k", "v", 0)
		if v, err := rdb.EvalRO(ctx, "return redis.call('get', KEYS[1])", []string{"ro:k"}).Text(); err != nil || v != "v" {
			t.Fatalf("EVAL_RO = %q, %v", v, err)
		}
		err = rdb.EvalRO(ctx, "return redis.call('set', KEYS[1], 'x')", []string{"ro:k"}).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR Write commands are not allowed from read-only scripts.") {
			t.Fatalf("EVAL_RO write: %v", err)
		}
		// Script.Run: EVALSHA, then EVAL on NOSCRIPT, then EVALSHA again.
		s := redis.NewScript("return redis.call('set', KEYS[1], ARGV[1])")
		for i := range 3 {
			if err := s.Run(ctx, rdb, []string{"run:k"}, i).Err(); err != nil {
				t.Fatalf("Script.Run %d: %v", i, err)
			}
		}
	})

	t.Run("lock with fencing tokens", func(t *testing.T) {
		const clients, rounds = 8, 25
		var acquired atomic.Int64
		var holders atomic.Int64
		var lastToken atomic.Int64
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for ci := range clients {
			wg.Go(func() {
				for r := 0; r < rounds; r++ {
					token := fmt.Sprintf("c%d-r%d", ci, r)
					ok, err := rdb.SetNX(ctx, "{lock}:res", token, 5*time.Second).Result()
					if err != nil || !ok {
						if err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
						time.Sleep(time.Millisecond)
						continue
					}
					if holders.Add(1) != 1 {
						mu.Lock()
						errs = append(errs, errors.New("two holders at once"))
						mu.Unlock()
					}
					fence, err := rdb.Incr(ctx, "{lock}:fence").Result()
					if err == nil && fence <= lastToken.Load() {
						err = fmt.Errorf("fencing token %d after %d", fence, lastToken.Load())
					}
					lastToken.Store(fence)
					acquired.Add(1)
					holders.Add(-1)
					n, err2 := unlockScript.Run(ctx, rdb, []string{"{lock}:res"}, token).Int()
					if err == nil && (err2 != nil || n != 1) {
						err = fmt.Errorf("unlock = %d, %v", n, err2)
					}
					// Releasing with a stale token does nothing.
					if n, _ := unlockScript.Run(ctx, rdb, []string{"{lock}:res"}, token).Int(); n != 0 {
						err = fmt.Errorf("second unlock = %d", n)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("%d errors, first: %v", len(errs), errs[0])
		}
		fence, _ := rdb.Get(ctx, "{lock}:fence").Int64()
		if acquired.Load() == 0 || fence != acquired.Load() {
			t.Fatalf("fence %d, acquisitions %d", fence, acquired.Load())
		}
	})

	t.Run("rate limiter", func(t *testing.T) {
		const limit, window = 10, 1000
		now := time.Now().UnixMilli()
		var allowed atomic.Int64
		err := parallel(40, func(i int) error {
			n, err := rateLimitScript.Run(ctx, rdb, []string{"rl:{user1}"}, window, limit, now, "req"+strconv.Itoa(i)).Int()
			allowed.Add(int64(n))
			return err
		})
		if err != nil || allowed.Load() != limit {
			t.Fatalf("allowed %d of 40 (limit %d), %v", allowed.Load(), limit, err)
		}
		// A window later the limiter lets requests through again.
		n, err := rateLimitScript.Run(ctx, rdb, []string{"rl:{user1}"}, window, limit, now+window+1, "late").Int()
		if err != nil || n != 1 {
			t.Fatalf("next window: %d, %v", n, err)
		}
		// Retry-after: the 4th request within the window waits for the first to age out.
		for i := range 3 {
			r, err := rateLimitRetryScript.Run(ctx, rdb, []string{"rl:{user2}"}, window, 3, now+int64(i*100), "r"+strconv.Itoa(i)).Int64Slice()
			if err != nil || r[0] != 1 || r[1] != 0 {
				t.Fatalf("request %d: %v, %v", i, r, err)
			}
		}
		r, err := rateLimitRetryScript.Run(ctx, rdb, []string{"rl:{user2}"}, window, 3, now+250, "r3").Int64Slice()
		if err != nil || r[0] != 0 || r[1] != window-250 {
			t.Fatalf("retry-after: %v, %v", r, err)
		}
	})

	t.Run("token bucket", func(t *testing.T) {
		now := time.Now().UnixMilli()
		got := []int64{}
		for i := range 7 {
			r, err := tokenBucketScript.Run(ctx, rdb, []string{"tb:{api}"}, 5, 10, now, 1).Int64Slice()
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			got = append(got, r[0])
		}
		if fmt.Sprint(got) != "[1 1 1 1 1 0 0]" {
			t.Fatalf("burst: %v", got)
		}
		// 10 tokens/s: 300 ms later 3 requests pass.
		r, err := tokenBucketScript.Run(ctx, rdb, []string{"tb:{api}"}, 5, 10, now+300, 3).Int64Slice()
		if err != nil || r[0] != 1 || r[1] != 0 {
			t.Fatalf("after refill: %v, %v", r, err)
		}
	})

	t.Run("failover atomicity", func(t *testing.T) { testScriptFailover(t, c, rdb) })
}

// testScriptFailover runs a script that sets 10 keys while the leader of
// their group is stopped: each run is applied fully or not at all, and no
// acknowledged run is lost (atomicUnderFailover).
func testScriptFailover(t *testing.T, c *testcluster.Cluster, rdb *redis.ClusterClient) {
	ctx := context.Background()
	k0, _ := keyInGroup(t, c, 1, "fo:")
	tag := "{" + k0 + "}"
	keys := make([]string, 10)
	for i := range keys {
		keys[i] = tag + ":c" + strconv.Itoa(i)
	}
	script := redis.NewScript(`for _, k in ipairs(KEYS) do redis.call('SET', k, ARGV[1]) end return #KEYS`)
	victim := atomicUnderFailover(t, c, rdb, 1, keys, "script runs", func(cctx context.Context, i int64) error {
		return script.Run(cctx, rdb, keys, i).Err()
	})
	c.RestartNode(victim)
	c.WaitLeaders(20 * time.Second)
	// The restarted node's replica has the script cache (from its log or a
	// snapshot): EVALSHA works wherever the group's leader is.
	sha := script.Hash()
	if err := rdb.EvalSha(ctx, sha, keys, 0).Err(); err != nil {
		t.Fatalf("EVALSHA after restart: %v", err)
	}
}

// TestScriptingOneNodeManyGroups: a node leading several groups answers
// for all of them, as one Redis Cluster master does for its slots: a
// script cached by EVAL in one group runs by EVALSHA on keys of another.
func TestScriptingOneNodeManyGroups(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Groups: 3})
	c.WaitLeaders(20 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 3)
	defer rdb.Close()
	body := "return redis.call('set', KEYS[1], ARGV[1])"
	k0, _ := keyInGroup(t, c, 0, "one:")
	k2, _ := keyInGroup(t, c, 2, "one:")
	if err := rdb.Eval(ctx, body, []string{k0}, "a").Err(); err != nil {
		t.Fatal(err)
	}
	sha := redis.NewScript(body).Hash()
	if ex, err := rdb.ScriptExists(ctx, sha).Result(); err != nil || !ex[0] {
		t.Fatalf("SCRIPT EXISTS after EVAL: %v, %v", ex, err)
	}
	if err := rdb.EvalSha(ctx, sha, []string{k2}, "b").Err(); err != nil {
		t.Fatalf("EVALSHA in another group: %v", err)
	}
	if v, err := rdb.EvalShaRO(ctx, redis.NewScript("return redis.call('get', KEYS[1])").Hash(), []string{k2}).Result(); err == nil {
		t.Fatalf("EVALSHA_RO of an unknown script: %v", v)
	}
	if v, _ := rdb.Get(ctx, k2).Result(); v != "b" {
		t.Fatalf("%s = %q", k2, v)
	}
	// RESP3: a script's map and double replies reach the client as such.
	m, err := rdb.Eval(ctx, "return {map={a=1}}", nil).Result()
	if mm, ok := m.(map[interface{}]interface{}); err != nil || !ok || mm["a"] != int64(1) {
		t.Fatalf("map reply: %#v, %v", m, err)
	}
	d, err := rdb.Eval(ctx, "return {double=1.5}", nil).Result()
	if err != nil || d != 1.5 {
		t.Fatalf("double reply: %#v, %v", d, err)
	}
	// Latency of one EVALSHA (lock release) against one SET, sequentially.
	const n = 500
	start := time.Now()
	for i := 0; i < n; i++ {
		rdb.Set(ctx, k0, "tok", 0)
	}
	set := time.Since(start) / n
	start = time.Now()
	for i := 0; i < n; i++ {
		unlockScript.Run(ctx, rdb, []string{k0}, "tok")
	}
	t.Logf("sequential latency: SET %v, EVALSHA unlock %v", set, time.Since(start)/n)
}
