package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestRDBMigration moves data from redis-server to slotraft and back in
// Redis's RDB format: a redis-server holding every type in its compact
// and large encodings (strings plain, integer and compressible, lists,
// sets of integers and strings, hashes, sorted sets, a stream with groups
// and pending entries, TTLs, a function library) SAVEs; import-rdb loads
// the file into a 3-node cluster, where every key reads the same; then
// export-rdb writes the cluster to a file that a second redis-server
// loads, where every key reads the same again.
func TestRDBMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	ctx := context.Background()
	src := redisAt(t, t.TempDir(), "src.rdb")
	fillRedis(t, ctx, src)
	if err := src.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	dir := redisDir(t, ctx, src)
	bin := buildSlotraft(t)
	c := startTestCluster(t, bin, 3)
	c.waitOK(t)
	if out, code := adminRun(t, "--addr", c.nodes[0].client, "import-rdb", filepath.Join(dir, "src.rdb")); code != 0 {
		t.Fatalf("import-rdb: exit %d\n%s", code, out)
	}
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{c.nodes[1].client}, DisableIdentity: true})
	defer rc.Close()
	sameData(t, ctx, src, rc, "redis-server → slotraft")
	if got, err := rc.Do(ctx, "FCALL", "mylib_one", "0").Int(); err != nil || got != 1 {
		t.Errorf("the imported function library: FCALL = %v, %v", got, err)
	}
	if out, code := adminRun(t, "--addr", c.nodes[0].client, "import-rdb", filepath.Join(dir, "src.rdb")); code != 1 || !strings.Contains(out, "exist already") {
		t.Errorf("a second import without --replace: exit %d\n%s", code, out)
	}
	if out, code := adminRun(t, "--addr", c.nodes[0].client, "import-rdb", "--replace", filepath.Join(dir, "src.rdb")); code != 0 {
		t.Errorf("a second import with --replace: exit %d\n%s", code, out)
	}
	if out, code := adminRun(t, "--addr", c.nodes[0].client, "import-rdb", filepath.Join(dir, "missing.rdb")); code != 1 {
		t.Errorf("a missing file: exit %d\n%s", code, out)
	}

	outDir := t.TempDir()
	if out, code := adminRun(t, "--addr", c.nodes[2].client, "export-rdb", filepath.Join(outDir, "out.rdb")); code != 0 {
		t.Fatalf("export-rdb: exit %d\n%s", code, out)
	}
	dst := redisAt(t, outDir, "out.rdb")
	sameData(t, ctx, rc, dst, "slotraft → redis-server")
}

// redisAt is a client of the redis-server keeping its data in
// dir/dbfile, started for the test (and loaded once it answers PING).
func redisAt(t *testing.T, dir, dbfile string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: startRedisServerIn(t, dir, dbfile), DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for rdb.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not load its file within 30s")
		}
		time.Sleep(50 * time.Millisecond) // poll interval: the server answers LOADING meanwhile
	}
	return rdb
}

func redisDir(t *testing.T, ctx context.Context, rdb *redis.Client) string {
	t.Helper()
	v, err := rdb.ConfigGet(ctx, "dir").Result()
	if err != nil {
		t.Fatal(err)
	}
	return v["dir"]
}

// fillRedis writes every type in its small and large encodings.
func fillRedis(t *testing.T, ctx context.Context, rdb redis.Cmdable) {
	t.Helper()
	big := strings.Repeat("compressible ", 200)
	cmds := [][]any{
		{"SET", "s:int", "12345"}, {"SET", "s:neg", "-70000"}, {"SET", "s:plain", "hello world"}, {"SET", "s:big", big},
		{"SET", "s:ttl", "soon", "PX", "3600000"},
		{"RPUSH", "l:small", "a", "b", "1", "2"}, {"SADD", "set:ints", "1", "2", "3", "100000"},
		{"SADD", "set:strs", "x", "y", "z"}, {"HSET", "h:small", "f1", "v1", "f2", "2"},
		{"ZADD", "z:small", "1", "a", "2.5", "b", "-3", "c"},
		{"XADD", "st", "1-1", "a", "1"}, {"XADD", "st", "1-2", "b", "2"}, {"XADD", "st", "2-0", "c", "3"},
		{"XGROUP", "CREATE", "st", "g", "0"}, {"XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "st", ">"},
		{"FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('mylib_one', function(keys, args) return 1 end)"},
	}
	for i := range 600 {
		n := strconv.Itoa(i)
		cmds = append(cmds, []any{"RPUSH", "l:big", "item" + n}, []any{"SADD", "set:big", "m" + n},
			[]any{"HSET", "h:big", "f" + n, big[:i%50]}, []any{"ZADD", "z:big", n, "m" + n})
		if i < 100 {
			cmds = append(cmds, []any{"SET", "k:" + n, n, "EX", strconv.Itoa(3600 + i)})
		}
	}
	// A command a cluster answered CLUSTERDOWN (a leadership moving just
	// after the start) was not run: it is sent again.
	deadline := time.Now().Add(e2eDeadline)
	for len(cmds) > 0 {
		pipe := rdb.Pipeline()
		sent := make([]*redis.Cmd, len(cmds))
		for i, c := range cmds {
			sent[i] = pipe.Do(ctx, c...)
		}
		_, _ = pipe.Exec(ctx)
		var again [][]any
		for i, c := range sent {
			switch err := c.Err(); {
			case err == nil:
			case strings.HasPrefix(err.Error(), "CLUSTERDOWN") && time.Now().Before(deadline):
				again = append(again, cmds[i])
			default:
				t.Fatalf("filling: %v: %v", cmds[i], err)
			}
		}
		cmds = again
	}
}

// sameData compares every key of from with to: type, value, and a TTL
// within 10 s.
func sameData(t *testing.T, ctx context.Context, from, to redis.Cmdable, what string) {
	t.Helper()
	keys := allKeys(t, ctx, from)
	if len(keys) < 100 {
		t.Fatalf("%s: only %d keys in the source", what, len(keys))
	}
	if n := len(allKeys(t, ctx, to)); n != len(keys) {
		t.Errorf("%s: %d keys, the source has %d", what, n, len(keys))
	}
	for _, k := range keys {
		want, got := readValue(ctx, from, k), readValue(ctx, to, k)
		if want != got {
			t.Errorf("%s: key %s:\n  source: %.300s\n  copy:   %.300s", what, k, want, got)
		}
		wt, gt := from.PTTL(ctx, k).Val(), to.PTTL(ctx, k).Val()
		if (wt > 0) != (gt > 0) || (wt-gt).Abs() > 10*time.Second {
			t.Errorf("%s: key %s: TTL %v, the source's %v", what, k, gt, wt)
		}
	}
}

// allKeys SCANs every key (every master's, for a cluster).
func allKeys(t *testing.T, ctx context.Context, c redis.Cmdable) []string {
	t.Helper()
	var keys []string
	var mu sync.Mutex // ForEachMaster scans the masters at once
	scan := func(ctx context.Context, n *redis.Client) error {
		it := n.Scan(ctx, 0, "", 500).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	switch cc := c.(type) {
	case *redis.ClusterClient:
		err = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return scan(ctx, n) })
	case *redis.Client:
		err = scan(ctx, cc)
	}
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

// readValue renders a key's type and content canonically.
func readValue(ctx context.Context, c redis.Cmdable, k string) string {
	typ := c.Type(ctx, k).Val()
	var v any
	switch typ {
	case "string":
		v = c.Get(ctx, k).Val()
	case "list":
		v = c.LRange(ctx, k, 0, -1).Val()
	case "set":
		m := c.SMembers(ctx, k).Val()
		sort.Strings(m)
		v = m
	case "hash":
		v = c.HGetAll(ctx, k).Val()
	case "zset":
		v = c.ZRangeWithScores(ctx, k, 0, -1).Val()
	case "stream":
		var pending redis.XPending
		if p := c.XPending(ctx, k, "g").Val(); p != nil {
			pending = *p
		}
		v = []any{c.XRange(ctx, k, "-", "+").Val(), c.XInfoGroups(ctx, k).Val(), pending}
	}
	return typ + " " + strings.ReplaceAll(fmt.Sprint(v), "\n", " ")
}

// TestBackupRestore: a backup of a 3-node cluster taken while a client
// writes holds every key written before it started; it restores into a
// new cluster, where every such key reads the same, and redis-server loads
// it too. restore refuses a cluster with keys and a file that is not a
// slotraft backup.
func TestBackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	ctx := context.Background()
	bin := buildSlotraft(t)
	a := startTestCluster(t, bin, 3)
	a.waitOK(t)
	ra := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.nodes[0].client}, DisableIdentity: true})
	defer ra.Close()
	fillRedis(t, ctx, ra)
	before := allKeys(t, ctx, ra)

	stop, wrote := make(chan struct{}), make(chan int)
	go func() { // writes go on during the backup
		n := 0
		for ; ; n++ {
			select {
			case <-stop:
				wrote <- n
				return
			default:
			}
			_ = ra.Set(ctx, "w:"+strconv.Itoa(n), n, 0).Err()
		}
	}()
	file := filepath.Join(t.TempDir(), "backup.rdb")
	out, code := adminRun(t, "--addr", a.nodes[1].client, "backup", file)
	close(stop)
	t.Logf("%d writes went on during the backup", <-wrote)
	if code != 0 || !strings.Contains(out, "backed up") {
		t.Fatalf("backup: exit %d\n%s", code, out)
	}

	if out, code := adminRun(t, "--addr", a.nodes[0].client, "restore", file); code != 1 || !strings.Contains(out, "must hold no keys") {
		t.Errorf("restore into a cluster with keys: exit %d\n%s", code, out)
	}
	b := startTestCluster(t, bin, 3)
	b.waitOK(t)
	if out, code := adminRun(t, "--addr", b.nodes[2].client, "restore", file); code != 0 {
		t.Fatalf("restore: exit %d\n%s", code, out)
	}
	rb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{b.nodes[0].client}, DisableIdentity: true})
	defer rb.Close()
	for _, k := range before {
		if want, got := readValue(ctx, ra, k), readValue(ctx, rb, k); want != got {
			t.Errorf("key %s after restore:\n  backed up: %.200s\n  restored:  %.200s", k, want, got)
		}
	}
	if got, err := rb.Do(ctx, "FCALL", "mylib_one", "0").Int(); err != nil || got != 1 {
		t.Errorf("the restored function library: FCALL = %v, %v", got, err)
	}
	rs := redisAt(t, filepath.Dir(file), filepath.Base(file))
	if n := rs.DBSize(ctx).Val(); n < int64(len(before)) {
		t.Errorf("redis-server loaded %d keys of the backup, want at least %d", n, len(before))
	}
	plain := filepath.Join(t.TempDir(), "plain.rdb")
	if out, code := adminRun(t, "--addr", a.nodes[0].client, "export-rdb", plain); code != 0 {
		t.Fatalf("export-rdb: %d %s", code, out)
	}
	if out, code := adminRun(t, "--addr", b.nodes[0].client, "restore", plain); code != 1 || !strings.Contains(out, "not a slotraft backup") {
		t.Errorf("restore of a plain RDB file: exit %d\n%s", code, out)
	}
}
