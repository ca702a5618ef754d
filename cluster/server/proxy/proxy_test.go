package proxy_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/server/proxy"
)

// TestProxy runs a plain client against a proxy of a 3-node, 3-group
// cluster: every command of a key is served, whatever node leads it.
func TestProxy(t *testing.T) {
	c := newCluster(t)
	tp := startProxy(t, c, 0, proxy.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rdb := tp.client(t)
	eventually(t, "first SET", func() error { return rdb.Set(ctx, "warm", "1", 0).Err() })

	t.Run("types", func(t *testing.T) { checkTypes(ctx, t, rdb) })
	t.Run("pipeline", func(t *testing.T) { checkPipeline(ctx, t, rdb) })
	t.Run("split", func(t *testing.T) { checkSplit(ctx, t, rdb) })
	t.Run("keyless", func(t *testing.T) { checkKeyless(ctx, t, rdb) })
	t.Run("errors", func(t *testing.T) { checkErrors(ctx, t, rdb) })
	t.Run("scripts", func(t *testing.T) { checkScripts(ctx, t, rdb) })
	t.Run("transactions", func(t *testing.T) { checkTransactions(ctx, t, tp) })
	t.Run("blocking", func(t *testing.T) { checkBlocking(ctx, t, tp, blockedClients(ctx, t, c)) })
	t.Run("pubsub", func(t *testing.T) { checkPubSub(ctx, t, tp) })
	t.Run("session", func(t *testing.T) { checkSession(ctx, t, c, tp) })
	t.Run("resp3", func(t *testing.T) {
		r3 := tp.client(t, func(o *redis.Options) { o.Protocol = 3 })
		checkTypes(ctx, t, r3)
		checkSplit(ctx, t, r3)
	})
	t.Run("scan", func(t *testing.T) { checkScan(ctx, t, rdb) })
	t.Run("shard move", func(t *testing.T) { checkShardMove(ctx, t, c, tp) }) // last: it stops a node
}

// checkTypes runs a command of every data type on keys of every group.
func checkTypes(ctx context.Context, t *testing.T, rdb *redis.Client) {
	for i, k := range keysInSlots("type", 6) {
		p := rdb.Pipeline()
		p.Set(ctx, k+":s", "v"+strconv.Itoa(i), 0)
		p.Incr(ctx, k+":n")
		p.RPush(ctx, k+":l", "a", "b", "c")
		p.HSet(ctx, k+":h", "f", "v")
		p.SAdd(ctx, k+":set", "m1", "m2")
		p.ZAdd(ctx, k+":z", redis.Z{Score: 1, Member: "one"}, redis.Z{Score: 2, Member: "two"})
		p.XAdd(ctx, &redis.XAddArgs{Stream: k + ":x", ID: "1-1", Values: []string{"f", "v"}})
		p.PFAdd(ctx, k+":hll", "a", "b")
		p.SetBit(ctx, k+":bits", 7, 1)
		p.GeoAdd(ctx, k+":geo", &redis.GeoLocation{Name: "p", Longitude: 13.36, Latitude: 38.11})
		if _, err := p.Exec(ctx); err != nil {
			t.Fatalf("writes of %s: %v", k, err)
		}
		checks := []struct {
			name string
			got  func() (any, error)
			want any
		}{
			{"get", func() (any, error) { return rdb.Get(ctx, k+":s").Result() }, "v" + strconv.Itoa(i)},
			{"lrange", func() (any, error) { return rdb.LRange(ctx, k+":l", 0, -1).Result() }, []string{"a", "b", "c"}},
			{"hget", func() (any, error) { return rdb.HGet(ctx, k+":h", "f").Result() }, "v"},
			{"scard", func() (any, error) { return rdb.SCard(ctx, k+":set").Result() }, int64(2)},
			{"zrange", func() (any, error) { return rdb.ZRange(ctx, k+":z", 0, -1).Result() }, []string{"one", "two"}},
			{"xlen", func() (any, error) { return rdb.XLen(ctx, k+":x").Result() }, int64(1)},
			{"pfcount", func() (any, error) { return rdb.PFCount(ctx, k+":hll").Result() }, int64(2)},
			{"getbit", func() (any, error) { return rdb.GetBit(ctx, k+":bits", 7).Result() }, int64(1)},
			{"geopos", func() (any, error) {
				p, err := rdb.GeoPos(ctx, k+":geo", "p").Result()
				if err != nil || len(p) != 1 || p[0] == nil {
					return nil, fmt.Errorf("geopos %v %v", p, err)
				}
				return int(p[0].Longitude), nil
			}, 13},
		}
		for _, ch := range checks {
			got, err := ch.got()
			if err != nil || fmt.Sprint(got) != fmt.Sprint(ch.want) {
				t.Fatalf("%s %s = %v, %v; want %v", ch.name, k, got, err, ch.want)
			}
		}
	}
}

// checkPipeline sends a pipeline over every group and wants the replies
// in order, each command run after the ones before it on its key.
func checkPipeline(ctx context.Context, t *testing.T, rdb *redis.Client) {
	keys := keysInSlots("pipe", 8)
	p := rdb.Pipeline()
	var incrs []*redis.IntCmd
	for i := range 400 {
		incrs = append(incrs, p.Incr(ctx, keys[i%len(keys)]))
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, cmd := range incrs {
		if want := int64(i/len(keys) + 1); cmd.Val() != want {
			t.Fatalf("INCR #%d of %s = %d, want %d", i, keys[i%len(keys)], cmd.Val(), want)
		}
	}
}

// checkSplit runs multi-key commands over keys of several slots.
func checkSplit(ctx context.Context, t *testing.T, rdb *redis.Client) {
	keys := keysInSlots("split", 7)
	pairs := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		pairs = append(pairs, k, "v"+strconv.Itoa(i))
	}
	if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
		t.Fatalf("MSET: %v", err)
	}
	mget := append(slices.Clone(keys), "split:missing", keys[0])
	vals, err := rdb.MGet(ctx, mget...).Result()
	if err != nil {
		t.Fatalf("MGET: %v", err)
	}
	for i, v := range vals {
		want := any(nil)
		switch {
		case i < len(keys):
			want = "v" + strconv.Itoa(i)
		case i == len(keys)+1:
			want = "v0"
		}
		if v != want {
			t.Fatalf("MGET[%d] = %v, want %v (all: %v)", i, v, want, vals)
		}
	}
	for _, tc := range []struct {
		name string
		run  func() (int64, error)
		want int64
	}{
		{"EXISTS", func() (int64, error) { return rdb.Exists(ctx, append(keys, keys[1], "nope")...).Result() }, int64(len(keys) + 1)},
		{"TOUCH", func() (int64, error) { return rdb.Touch(ctx, keys...).Result() }, int64(len(keys))},
		{"UNLINK", func() (int64, error) { return rdb.Unlink(ctx, keys[:3]...).Result() }, 3},
		{"DEL", func() (int64, error) { return rdb.Del(ctx, append(keys, "nope")...).Result() }, int64(len(keys) - 3)},
	} {
		if got, err := tc.run(); err != nil || got != tc.want {
			t.Fatalf("%s = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	err = rdb.MSetNX(ctx, keys[0], "a", keys[1], "b").Err()
	wantErr(t, "MSETNX across slots", err, "CROSSSLOT Keys in request don't hash to the same slot")
	err = rdb.SInterStore(ctx, keys[0], keys[1], keys[2]).Err()
	wantErr(t, "SINTERSTORE across slots", err, "CROSSSLOT Keys in request don't hash to the same slot")
}

// checkKeyless runs the commands without keys: the home node's, or every
// leader's merged.
func checkKeyless(ctx context.Context, t *testing.T, rdb *redis.Client) {
	if v, err := rdb.Ping(ctx).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING = %q, %v", v, err)
	}
	if v, err := rdb.Echo(ctx, "hi").Result(); err != nil || v != "hi" {
		t.Fatalf("ECHO = %q, %v", v, err)
	}
	if err := rdb.Do(ctx, "SELECT", "0").Err(); err != nil {
		t.Fatalf("SELECT 0: %v", err)
	}
	wantErr(t, "SELECT 1", rdb.Do(ctx, "SELECT", "1").Err(), "ERR SELECT is not allowed in cluster mode")
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	keys := keysInSlots("ks", 9)
	for _, k := range keys {
		if err := rdb.Set(ctx, k, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != int64(len(keys)) {
		t.Fatalf("DBSIZE = %d, %v; want %d", n, err, len(keys))
	}
	got, err := rdb.Keys(ctx, "ks:*").Result()
	slices.Sort(got)
	want := slices.Clone(keys)
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("KEYS = %v, %v; want %v", got, err, want)
	}
	if k, err := rdb.RandomKey(ctx).Result(); err != nil || !slices.Contains(keys, k) {
		t.Fatalf("RANDOMKEY = %q, %v", k, err)
	}
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after FLUSHALL = %d, %v", n, err)
	}
	if err := rdb.RandomKey(ctx).Err(); err != redis.Nil {
		t.Fatalf("RANDOMKEY of nothing: %v, want nil", err)
	}
}

// checkScan walks every key with SCAN through the proxy.
func checkScan(ctx context.Context, t *testing.T, rdb *redis.Client) {
	if err := rdb.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	p := rdb.Pipeline()
	for i := range 300 {
		k := "scan:" + strconv.Itoa(i)
		want[k] = true
		p.Set(ctx, k, "v", 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	cursor := uint64(0)
	for calls := 0; ; calls++ {
		keys, next, err := rdb.Scan(ctx, cursor, "scan:*", 25).Result()
		if err != nil {
			t.Fatalf("SCAN %d: %v", cursor, err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
		if calls > 1000 {
			t.Fatal("SCAN does not end")
		}
	}
	for k := range want {
		if !seen[k] {
			t.Fatalf("SCAN missed %s (saw %d of %d)", k, len(seen), len(want))
		}
	}
	wantErr(t, "SCAN bad cursor", rdb.Do(ctx, "SCAN", "x").Err(), "ERR invalid cursor")
}

// checkErrors wants Redis's texts for what a client gets wrong.
func checkErrors(ctx context.Context, t *testing.T, rdb *redis.Client) {
	wantErr(t, "GET without a key", rdb.Do(ctx, "GET").Err(), "ERR wrong number of arguments for 'get' command")
	wantErr(t, "MGET without a key", rdb.Do(ctx, "MGET").Err(), "ERR wrong number of arguments for 'mget' command")
	wantErr(t, "unknown", rdb.Do(ctx, "NOSUCH", "a").Err(), "ERR unknown command 'NOSUCH', with args beginning with: 'a' ")
	wantErr(t, "EXEC", rdb.Do(ctx, "EXEC").Err(), "ERR EXEC without MULTI")
	wantErr(t, "MONITOR", rdb.Do(ctx, "MONITOR").Err(), "ERR 'monitor' is not served through the slotraft proxy: it would show one node's commands only")
	rdb.Set(ctx, "wrongtype", "x", 0)
	wantErr(t, "WRONGTYPE", rdb.LPush(ctx, "wrongtype", "a").Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
}

// checkScripts runs scripts by their keys, and SCRIPT LOAD everywhere.
func checkScripts(ctx context.Context, t *testing.T, rdb *redis.Client) {
	const body = "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])"
	sha, err := rdb.ScriptLoad(ctx, body).Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	for i, k := range keysInSlots("script", 6) {
		v := "s" + strconv.Itoa(i)
		if got, err := rdb.EvalSha(ctx, sha, []string{k}, v).Result(); err != nil || got != v {
			t.Fatalf("EVALSHA on %s = %v, %v", k, got, err)
		}
		if got, err := rdb.Eval(ctx, body, []string{k}, v+"e").Result(); err != nil || got != v+"e" {
			t.Fatalf("EVAL on %s = %v, %v", k, got, err)
		}
	}
	if ex, err := rdb.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result(); err != nil || !slices.Equal(ex, []bool{true, false}) {
		t.Fatalf("SCRIPT EXISTS = %v, %v", ex, err)
	}
	if got, err := rdb.Eval(ctx, "return 7", nil).Result(); err != nil || got != int64(7) {
		t.Fatalf("EVAL without keys = %v, %v", got, err)
	}
}
