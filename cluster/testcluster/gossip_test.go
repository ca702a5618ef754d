package testcluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/cluster/transport"
)

// waitGossip polls until node i sees peer in one of the states.
func waitGossip(t *testing.T, c *testcluster.Cluster, i int, peer string, states ...cluster.GossipState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := c.Node(i).GossipStates()[peer]
		for _, st := range states {
			if got == st {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node%d sees %s as %q, want one of %v", i+1, peer, got, states)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clusterNodesLine is node i's CLUSTER NODES line about peer.
func clusterNodesLine(t *testing.T, c *testcluster.Cluster, i int, peer string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.Addrs()[i]})
	defer rdb.Close()
	out, err := rdb.ClusterNodes(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLUSTER NODES on node%d: %v", i+1, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, server.NodeID(peer)+" ") {
			return line
		}
	}
	t.Fatalf("CLUSTER NODES on node%d has no line for %s:\n%s", i+1, peer, out)
	return ""
}

func TestGossipLiveness(t *testing.T) {
	faults := transport.NewFaults()
	c := testcluster.New(t, 3, testcluster.Options{Groups: 3, Replicas: 3, Faults: faults})
	c.WaitReady(30 * time.Second)
	for i := range 3 {
		for j := range 3 {
			waitGossip(t, c, i, fmt.Sprintf("node%d", j+1), cluster.GossipAlive)
		}
	}
	if line := clusterNodesLine(t, c, 0, "node3"); strings.Contains(line, "fail") || !strings.HasSuffix(strings.Fields(line)[7], "connected") {
		t.Fatalf("healthy node3 in CLUSTER NODES: %q", line)
	}

	// Cut node3 off: the others find it dead by gossip; it comes back alive.
	faults.Isolate("node3")
	waitGossip(t, c, 0, "node3", cluster.GossipDead)
	if line := clusterNodesLine(t, c, 0, "node3"); !strings.Contains(strings.Fields(line)[2], "fail") || strings.Fields(line)[7] != "disconnected" {
		t.Fatalf("isolated node3 in CLUSTER NODES: %q, want fail and disconnected", line)
	}
	if h := shardHealth(t, c, 0, "node3"); h != "failed" {
		t.Fatalf("isolated node3's CLUSTER SHARDS health = %q, want failed", h)
	}
	faults.HealAll()
	waitGossip(t, c, 0, "node3", cluster.GossipAlive)
	if h := shardHealth(t, c, 0, "node3"); h != "online" {
		t.Fatalf("healed node3's CLUSTER SHARDS health = %q, want online", h)
	}
	waitGossip(t, c, 2, "node1", cluster.GossipAlive)

	// A node that stops cleanly leaves: the others see it left, then alive
	// again after its restart.
	c.StopNode(1)
	waitGossip(t, c, 0, "node2", cluster.GossipLeft, cluster.GossipDead)
	c.RestartNode(1)
	waitGossip(t, c, 0, "node2", cluster.GossipAlive)
	waitGossip(t, c, 1, "node1", cluster.GossipAlive)
}

// shardHealth is the health CLUSTER SHARDS on node i gives peer.
func shardHealth(t *testing.T, c *testcluster.Cluster, i int, peer string) string {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.Addrs()[i]})
	defer rdb.Close()
	shards, err := rdb.ClusterShards(context.Background()).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS on node%d: %v", i+1, err)
	}
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.ID == server.NodeID(peer) {
				return n.Health
			}
		}
	}
	t.Fatalf("CLUSTER SHARDS on node%d does not list %s", i+1, peer)
	return ""
}
