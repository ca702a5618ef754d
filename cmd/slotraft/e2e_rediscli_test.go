package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shape of the reshard end-to-end test.
const (
	reshardKeysPerType = 400             // five types: 2,000 keys
	reshardSlots       = 40              // about 5 keys per slot move with them
	reshardTimeout     = 5 * time.Minute // redis-cli --cluster reshard of reshardSlots slots
)

// TestRedisCLIReshardAndMigrate drives slot migration as a Redis Cluster
// operator would: redis-cli --cluster check and reshard against three
// slotraft processes (CLUSTER SETSLOT, MIGRATE, CLUSTER NODES markers),
// then a real MIGRATE of keys to a plain redis-server.
func TestRedisCLIReshardAndMigrate(t *testing.T) {
	cli, c := e2eCluster(t, 3)
	entry := c.nodes[0]
	// Masters spread one per node: then no leadership moves under reshard.
	masters := c.waitMasterPerNode(t, cli, entry)

	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{c.nodes[0].client, c.nodes[1].client, c.nodes[2].client}, Protocol: 2,
		DialTimeout: 2 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
		MaxRedirects: 16,
	})
	defer rdb.Close()
	want := loadReshardKeys(t, c, rdb)
	checkCluster(t, cli, entry)

	from, to := pickMasters(masters)
	before := slotsServedBy(c.clusterSlots(t, cli, entry), masters[to])
	ctx, cancel := context.WithTimeout(context.Background(), reshardTimeout)
	defer cancel()
	host, port, _ := net.SplitHostPort(entry.client)
	out, err := exec.CommandContext(ctx, cli, "--cluster", "reshard", host+":"+port,
		"--cluster-from", from, "--cluster-to", to, "--cluster-slots", strconv.Itoa(reshardSlots), "--cluster-yes").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster reshard: %v\n%s", err, out)
	}
	checkCluster(t, cli, entry)
	c.eventually(t, "the moved slots served by the target", func() error {
		if got := slotsServedBy(c.clusterSlots(t, cli, entry), masters[to]); got != before+reshardSlots {
			return fmt.Errorf("target serves %d slots, want %d", got, before+reshardSlots)
		}
		return nil
	})
	checkReshardKeys(t, c, rdb, want)

	t.Run("MIGRATE to redis-server", func(t *testing.T) {
		target := &testNode{id: "redis-server", client: startRedisServer(t)} // bench_test.go; skips without it
		host, port, _ := net.SplitHostPort(target.client)
		for _, key := range []string{"str:7", "hash:7"} {
			c.eventually(t, "MIGRATE "+key, func() error {
				return c.expect(cli, entry, "OK", "-c", "MIGRATE", host, port, key, "0", "5000")
			})
			if err := c.expect(cli, entry, "0", "-c", "EXISTS", key); err != nil {
				t.Errorf("%s still in slotraft: %v", key, err)
			}
		}
		if err := c.expect(cli, target, want["str:7"], "GET", "str:7"); err != nil {
			t.Error(err)
		}
		if err := c.expect(cli, target, "v1", "HGET", "hash:7", "f1"); err != nil {
			t.Error(err)
		}
	})
}

// waitMasterPerNode waits until CLUSTER NODES on n shows one master per
// node of c (the preferred replicas took their groups over, and no more
// leadership moves), and returns clusterMasters.
func (c *testCluster) waitMasterPerNode(t *testing.T, cli string, n *testNode) map[string]int {
	t.Helper()
	var masters map[string]int
	c.eventually(t, "one master per node", func() error {
		var err error
		masters, err = clusterMasters(cli, n)
		if err == nil && len(masters) != len(c.nodes) {
			err = fmt.Errorf("masters %v, want %d", masters, len(c.nodes))
		}
		return err
	})
	return masters
}

// clusterMasters maps the id of every node CLUSTER NODES shows as a master
// with slots to its client port.
func clusterMasters(cli string, n *testNode) (map[string]int, error) {
	out, err := redisCLI(cli, n, "cluster", "nodes")
	if err != nil {
		return nil, err
	}
	masters := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") {
			continue
		}
		hostPort, _, _ := strings.Cut(f[1], "@")
		_, p, err := net.SplitHostPort(hostPort)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES line %q: %w", line, err)
		}
		masters[f[0]], _ = strconv.Atoi(p)
	}
	return masters, nil
}

// pickMasters returns two distinct master ids, the same ones every run
// for a given cluster (sorted by port).
func pickMasters(masters map[string]int) (from, to string) {
	ids := slices.SortedFunc(maps.Keys(masters), func(a, b string) int { return masters[a] - masters[b] })
	return ids[0], ids[1]
}

func slotsServedBy(entries []slotEntry, port int) int {
	n := 0
	for _, e := range entries {
		if len(e.ports) > 0 && e.ports[0] == port {
			n += e.end - e.start + 1
		}
	}
	return n
}

// checkCluster wants redis-cli --cluster check to pass with every slot covered.
func checkCluster(t *testing.T, cli string, n *testNode) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "--cluster", "check", n.client).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered.") {
		t.Fatalf("redis-cli --cluster check: %v\n%s", err, out)
	}
}

// loadReshardKeys writes strings, hashes, lists, sets and sorted sets and
// returns each key's value as checkReshardKeys renders it.
func loadReshardKeys(t *testing.T, c *testCluster, rdb *redis.ClusterClient) map[string]string {
	t.Helper()
	ctx := context.Background()
	want := map[string]string{}
	for i := range reshardKeysPerType {
		s := strconv.Itoa(i)
		writes := []struct {
			key, value string
			do         func() error
		}{
			{"str:" + s, "value-" + s, func() error { return rdb.Set(ctx, "str:"+s, "value-"+s, 0).Err() }},
			{"hash:" + s, "[f1 v1 f2 " + s + "]", func() error { return rdb.HSet(ctx, "hash:"+s, "f1", "v1", "f2", s).Err() }},
			{"list:" + s, "[a " + s + " c]", func() error { return rdb.RPush(ctx, "list:"+s, "a", s, "c").Err() }},
			{"set:" + s, "[x y]", func() error { return rdb.SAdd(ctx, "set:"+s, "x", "y").Err() }},
			{"zset:" + s, "[m1 " + s + "]", func() error { return rdb.ZAdd(ctx, "zset:"+s, redis.Z{Score: float64(i), Member: "m1"}).Err() }},
		}
		for _, w := range writes {
			c.eventually(t, "write "+w.key, w.do)
			want[w.key] = w.value
		}
	}
	return want
}

// checkReshardKeys reads every key back through the cluster client.
func checkReshardKeys(t *testing.T, c *testCluster, rdb *redis.ClusterClient, want map[string]string) {
	t.Helper()
	ctx := context.Background()
	for key, value := range want {
		c.eventually(t, "read "+key, func() error {
			got, err := readReshardKey(ctx, rdb, key)
			if err == nil && got != value {
				err = fmt.Errorf("%s = %s, want %s", key, got, value)
			}
			return err
		})
	}
}

func readReshardKey(ctx context.Context, rdb *redis.ClusterClient, key string) (string, error) {
	typ, _, _ := strings.Cut(key, ":")
	var v any
	var err error
	switch typ {
	case "str":
		v, err = rdb.Get(ctx, key).Result()
	case "hash":
		var f []any
		if f, err = rdb.HMGet(ctx, key, "f1", "f2").Result(); err == nil {
			v = []any{"f1", f[0], "f2", f[1]}
		}
	case "list":
		v, err = rdb.LRange(ctx, key, 0, -1).Result()
	case "set":
		v, err = rdb.Sort(ctx, key, &redis.Sort{Alpha: true}).Result()
	case "zset":
		var z []redis.Z
		z, err = rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if len(z) == 1 {
			v = []any{z[0].Member, strconv.FormatFloat(z[0].Score, 'f', -1, 64)}
		}
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprint(v), nil
}
