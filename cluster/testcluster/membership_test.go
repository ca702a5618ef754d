package testcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/cluster/transport"
)

// waitStatus polls node i's cluster status until check returns nil.
func waitStatus(t *testing.T, c *testcluster.Cluster, i int, timeout time.Duration, what string, check func(cluster.ClusterStatus) error) cluster.ClusterStatus {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st := c.Node(i).Status(ctx)
		cancel()
		err := check(st)
		if err == nil {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %v: %v\nstatus: %+v", what, timeout, err, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// healthy: n nodes listed, every group at `replicas` replicas, each a
// Leader or Follower not far behind, none on a node in `not`, group
// leaders on distinct nodes, and replicas spread evenly over the nodes.
func healthy(nodes, replicas int, not ...string) func(cluster.ClusterStatus) error {
	return func(st cluster.ClusterStatus) error {
		if len(st.Nodes) != nodes {
			return fmt.Errorf("%d nodes listed, want %d", len(st.Nodes), nodes)
		}
		leaders, perNode := map[string]bool{}, map[string]int{}
		for _, g := range st.Groups {
			if len(g.Replicas) != replicas || g.Leader == "" || leaders[g.Leader] {
				return fmt.Errorf("group %d: leader %q, %d replicas %+v (leaders so far %v)", g.ID, g.Leader, len(g.Replicas), g.Replicas, leaders)
			}
			leaders[g.Leader] = true
			for _, r := range g.Replicas {
				perNode[r.Node]++
				if slices.Contains(not, r.Node) || (r.State != "Leader" && r.State != "Follower") || r.Lag > 1024 {
					return fmt.Errorf("group %d: replica %+v", g.ID, r)
				}
			}
		}
		lo, hi := len(st.Groups)*replicas/nodes, (len(st.Groups)*replicas+nodes-1)/nodes
		for _, ns := range st.Nodes {
			if c := perNode[ns.ID]; c < lo || c > hi {
				return fmt.Errorf("replicas per node %v, want %d-%d each", perNode, lo, hi)
			}
		}
		return nil
	}
}

// writeUntil sets w:<i> = <i> for i = 0, 1, … until ctx ends (bounded to
// 100,000 writes) and returns the writes acknowledged; an error is
// retried on the next key, as its outcome is unknown.
func writeUntil(ctx context.Context, rdb *redis.ClusterClient) map[string]string {
	acked := map[string]string{}
	for i := 0; i < 100_000 && ctx.Err() == nil; i++ {
		k, v := "w:"+strconv.Itoa(i), strconv.Itoa(i)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if rdb.Set(wctx, k, v, 0).Err() == nil {
			acked[k] = v
		}
		cancel()
	}
	return acked
}

// checkAcked reads back every write the writer saw acknowledged.
func checkAcked(t *testing.T, rdb *redis.ClusterClient, written map[string]string, during string) {
	t.Helper()
	if len(written) == 0 {
		t.Fatal("the writer got no write acknowledged")
	}
	for k, v := range written {
		if got, err := rdb.Get(context.Background(), k).Result(); err != nil || got != v {
			t.Fatalf("acknowledged %s=%s, read %q, %v", k, v, got, err)
		}
	}
	t.Logf("%d writes acknowledged %s", len(written), during)
}

// TestJoinAndReplace is issue #3's scenario: start 3 nodes, join 2 more by
// gossip, stop one for good; every group ends back at 3 replicas on live
// nodes with leaders spread and no key lost; the stopped node, restarted
// later, learns it was removed, keeps its old data aside and rejoins as a
// new member.
func TestJoinAndReplace(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Groups: 3, Replicas: 3, DeadAfter: 3 * time.Second})
	c.WaitReady(30 * time.Second)
	ctx := context.Background()
	rdb := clusterClient(c, 2)
	defer rdb.Close()
	const keys = 300
	if err := parallel(keys, func(i int) error {
		return rdb.Set(ctx, "key:"+strconv.Itoa(i), "v"+strconv.Itoa(i), 0).Err()
	}); err != nil {
		t.Fatal(err)
	}

	// A writer runs through the joins, moves and the replacement: every
	// write it saw acknowledged must be there at the end.
	wctx, stopWriter := context.WithCancel(ctx)
	acked := make(chan map[string]string, 1)
	go func() { acked <- writeUntil(wctx, rdb) }()

	c.AddNode()
	c.AddNode()
	waitStatus(t, c, 0, 60*time.Second, "5 nodes, groups at 3 replicas spread", healthy(5, 3))

	const victim = 1 // node2, one of the first three
	victimID := c.Peers()[victim].ID
	c.StopNode(victim)
	waitStatus(t, c, 0, 60*time.Second, "groups back at 3 replicas without "+victimID, healthy(4, 3, victimID))
	if nd, _ := c.Node(0).Map().Node(victimID); nd.State != meta.Removed {
		t.Fatalf("map entry of %s = %+v, want removed", victimID, nd)
	}
	if err := readBack(ctx, rdb, keys); err != nil {
		t.Fatalf("after replacing %s: %v", victimID, err)
	}
	stopWriter()
	checkAcked(t, rdb, <-acked, "during the joins and the replacement")
	nodes, err := redis.NewClient(&redis.Options{Addr: c.Addrs()[0]}).ClusterNodes(ctx).Result()
	if err != nil || strings.Contains(nodes, server.NodeID(victimID)) {
		t.Fatalf("CLUSTER NODES still lists %s (%v):\n%s", victimID, err, nodes)
	}

	c.RestartNode(victim)
	waitStatus(t, c, 0, 60*time.Second, victimID+" back as a new member", func(st cluster.ClusterStatus) error {
		nd, _ := c.Node(0).Map().Node(victimID)
		if nd.State != meta.Active || nd.Incarnation != 2 {
			return fmt.Errorf("map entry %+v", nd)
		}
		return healthy(5, 3)(st)
	})
	kept, _ := filepath.Glob(filepath.Join(c.Dir(victim), "groups", "*.removed-*"))
	if len(kept) == 0 {
		entries, _ := os.ReadDir(filepath.Join(c.Dir(victim), "groups"))
		t.Errorf("the removed node's old group data was not kept aside: %v", entries)
	}
	if err := readBack(ctx, rdb, keys); err != nil {
		t.Fatalf("after %s rejoined: %v", victimID, err)
	}
}

// TestPartitionLongerThanDeadAfter: a node cut off from the others (its
// process keeps running) for longer than --dead-after is removed and its
// replicas are rebuilt on the 4 others; when the partition heals it learns
// it was removed, stops its old replicas (kept aside) and rejoins as a new
// member that gets replicas again. No acknowledged write is lost.
func TestPartitionLongerThanDeadAfter(t *testing.T) {
	faults := transport.NewFaults()
	c := testcluster.New(t, 3, testcluster.Options{Groups: 3, Replicas: 3, DeadAfter: 3 * time.Second, Faults: faults})
	c.WaitReady(30 * time.Second)
	c.AddNode()
	c.AddNode()
	waitStatus(t, c, 0, 60*time.Second, "5 nodes, groups at 3 replicas spread", healthy(5, 3))
	ctx := context.Background()
	rdb := clusterClient(c, 2)
	defer rdb.Close()
	wctx, stopWriter := context.WithCancel(ctx)
	acked := make(chan map[string]string, 1)
	go func() { acked <- writeUntil(wctx, rdb) }()

	const cut = 2 // node3
	cutID := c.Peers()[cut].ID
	faults.Isolate(cutID)
	waitStatus(t, c, 0, 60*time.Second, "groups rebuilt without "+cutID, healthy(4, 3, cutID))
	faults.HealAll()
	waitStatus(t, c, 0, 60*time.Second, cutID+" back as a new member", func(st cluster.ClusterStatus) error {
		if nd, _ := c.Node(0).Map().Node(cutID); nd.State != meta.Active || nd.Incarnation != 2 {
			return fmt.Errorf("map entry %+v", nd)
		}
		return healthy(5, 3)(st)
	})
	stopWriter()
	checkAcked(t, rdb, <-acked, "across the partition")
}
