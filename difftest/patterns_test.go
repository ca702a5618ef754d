package difftest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster/testcluster"
)

// TestSeedPatterns runs the common usage patterns of lists, hashes and
// sorted sets end to end through go-redis's ClusterClient against a 3-node
// cluster.
func TestSeedPatterns(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitReady(30 * time.Second)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: c.Addrs(), MaxRedirects: 16, DialTimeout: time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
	})
	t.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	t.Run("CappedList", func(t *testing.T) { cappedList(ctx, t, rdb) })
	t.Run("Leaderboard", func(t *testing.T) { leaderboard(ctx, t, rdb) })
	t.Run("RateLimiter", func(t *testing.T) { rateLimiter(ctx, t, rdb) })
	t.Run("Session", func(t *testing.T) { session(ctx, t, rdb) })
	t.Run("ReliableQueue", func(t *testing.T) { reliableQueue(ctx, t, rdb) })
}

// must returns a go-redis command's value, failing the test on an error.
func must[T any](t *testing.T, cmd interface {
	Val() T
	Err() error
}) T {
	t.Helper()
	if err := cmd.Err(); err != nil {
		t.Fatal(err)
	}
	return cmd.Val()
}

// cappedList keeps the last 100 events of several feeds (LPUSH + LTRIM).
func cappedList(ctx context.Context, t *testing.T, rdb *redis.ClusterClient) {
	for f := range 5 {
		key := fmt.Sprintf("feed:%d", f)
		for i := range 250 {
			pipe := rdb.Pipeline()
			pipe.LPush(ctx, key, fmt.Sprintf("event-%d", i))
			pipe.LTrim(ctx, key, 0, 99)
			execPipe(ctx, t, pipe)
		}
		if n := must(t, rdb.LLen(ctx, key)); n != 100 {
			t.Errorf("%s: LLEN %d", key, n)
		}
		got := must(t, rdb.LRange(ctx, key, 0, 2))
		if strings.Join(got, ",") != "event-249,event-248,event-247" {
			t.Errorf("%s: newest %v", key, got)
		}
		if last := must(t, rdb.LIndex(ctx, key, -1)); last != "event-150" {
			t.Errorf("%s: oldest %s", key, last)
		}
	}
}

// leaderboard ranks players by score (ZADD, ZINCRBY, ZREVRANGE, ZREVRANK).
func leaderboard(ctx context.Context, t *testing.T, rdb *redis.ClusterClient) {
	key := "leaderboard:{game1}"
	for i := range 200 {
		must(t, rdb.ZAdd(ctx, key, redis.Z{Score: float64(i * 10), Member: fmt.Sprintf("player%d", i)}))
	}
	must(t, rdb.ZIncrBy(ctx, key, 5000, "player7"))
	top := must(t, rdb.ZRevRangeWithScores(ctx, key, 0, 2))
	if len(top) != 3 || top[0].Member != "player7" || top[0].Score != 5070 || top[1].Member != "player199" || top[2].Member != "player198" {
		t.Errorf("top 3: %v", top)
	}
	if r := must(t, rdb.ZRevRank(ctx, key, "player199")); r != 1 {
		t.Errorf("ZREVRANK player199 = %d", r)
	}
	if r := must(t, rdb.ZRevRank(ctx, key, "player0")); r != 199 {
		t.Errorf("ZREVRANK player0 = %d", r)
	}
	if _, err := rdb.ZRevRank(ctx, key, "nobody").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("ZREVRANK nobody: %v", err)
	}
	if n := must(t, rdb.ZCard(ctx, key)); n != 200 {
		t.Errorf("ZCARD %d", n)
	}
}

// rateLimiter is a sliding-window limiter: 10 requests per 1000 ms per
// user (ZREMRANGEBYSCORE, ZADD, ZCARD), with request times given
// explicitly.
func rateLimiter(ctx context.Context, t *testing.T, rdb *redis.ClusterClient) {
	const window, limit = 1000, 10
	allow := func(user string, now int64, id int) bool {
		key := "ratelimit:{" + user + "}"
		pipe := rdb.Pipeline()
		pipe.ZRemRangeByScore(ctx, key, "-inf", fmt.Sprint(now-window))
		card := pipe.ZCard(ctx, key)
		execPipe(ctx, t, pipe)
		if card.Val() >= limit {
			return false
		}
		pipe = rdb.Pipeline()
		pipe.ZAdd(ctx, key, redis.Z{Score: float64(now), Member: fmt.Sprint(now, "-", id)})
		pipe.PExpire(ctx, key, window*time.Millisecond)
		execPipe(ctx, t, pipe)
		return true
	}
	allowed := 0
	for i := range 30 { // 30 requests 10 ms apart: only the first 10 pass
		if allow("alice", 1_000_000+int64(i)*10, i) {
			allowed++
		}
	}
	if allowed != limit {
		t.Errorf("allowed %d in one window, want %d", allowed, limit)
	}
	if !allow("alice", 1_000_000+1001, 100) { // the first request left the window
		t.Error("request after the window slid was refused")
	}
	if !allow("bob", 1_000_000, 0) {
		t.Error("another user was limited")
	}
}

// session stores a session in a hash whose expiry slides with each access.
func session(ctx context.Context, t *testing.T, rdb *redis.ClusterClient) {
	key := "session:{abc123}"
	must(t, rdb.HSet(ctx, key, "user", "ann", "cart", "3", "theme", "dark"))
	must(t, rdb.Expire(ctx, key, 30*time.Minute))
	for range 3 { // each access reads the session and slides its expiry
		got := must(t, rdb.HGetAll(ctx, key))
		if got["user"] != "ann" || len(got) != 3 {
			t.Fatalf("session %v", got)
		}
		must(t, rdb.HIncrBy(ctx, key, "cart", 1))
		if ok := must(t, rdb.Expire(ctx, key, 30*time.Minute)); !ok {
			t.Fatal("EXPIRE on a live session returned false")
		}
	}
	if ttl := must(t, rdb.TTL(ctx, key)); ttl <= 29*time.Minute {
		t.Errorf("TTL %v after sliding", ttl)
	}
	if v := must(t, rdb.HGet(ctx, key, "cart")); v != "6" {
		t.Errorf("cart %s", v)
	}
	must(t, rdb.PExpire(ctx, key, 50*time.Millisecond))
	deadline := time.Now().Add(5 * time.Second)
	for must(t, rdb.Exists(ctx, key)) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("session did not expire")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := must(t, rdb.HGetAll(ctx, key)); len(got) != 0 {
		t.Errorf("expired session: %v", got)
	}
}

// reliableQueue moves each job to a processing list while it is worked on
// (BLMOVE) and removes it when done (LREM).
func reliableQueue(ctx context.Context, t *testing.T, rdb *redis.ClusterClient) {
	queue, processing := "{jobs}:queue", "{jobs}:processing"
	must(t, rdb.LPush(ctx, queue, "job1", "job2", "job3"))
	for _, want := range []string{"job1", "job2", "job3"} {
		job, err := rdb.BLMove(ctx, queue, processing, "RIGHT", "LEFT", time.Second).Result()
		if err != nil && strings.Contains(err.Error(), "unknown command") {
			t.Skip("BLMOVE is not implemented yet")
		}
		if err != nil || job != want {
			t.Fatalf("BLMOVE: %q %v, want %s", job, err, want)
		}
		if n := must(t, rdb.LRem(ctx, processing, 1, job)); n != 1 {
			t.Fatalf("LREM %s: %d", job, n)
		}
	}
	if _, err := rdb.BLMove(ctx, queue, processing, "RIGHT", "LEFT", 100*time.Millisecond).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("BLMOVE on an empty queue: %v", err)
	}
	if n := must(t, rdb.Exists(ctx, queue, processing)); n != 0 {
		t.Errorf("%d lists left", n)
	}
}

func execPipe(ctx context.Context, t *testing.T, pipe redis.Pipeliner) {
	t.Helper()
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}
