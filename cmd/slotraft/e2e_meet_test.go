package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/internal/testports"
)

// redisCLIToolTimeout bounds one redis-cli --cluster run of the meet test.
const redisCLIToolTimeout = 3 * time.Minute

// TestRedisCLIClusterTools forms and changes a cluster the way a Redis
// Cluster operator does, with the real redis-cli against slotraft processes
// started with --meet: create, check, info, add-node (a master, then a
// replica), rebalance onto the empty master, fix, and del-node, with keys
// written before that must all be there after.
func TestRedisCLIClusterTools(t *testing.T) {
	cli := lookRedisCLI(t)
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	c := &testCluster{bin: buildSlotraft(t)}
	dir := t.TempDir()
	var all []*testNode
	ports := testports.Free(t, 10) // distinct, before any node binds one
	for i := range 5 {
		n := meetNode(c.bin, dir, i, ports[2*i], ports[2*i+1])
		all = append(all, n)
		n.start(t)
	}
	c.nodes = all
	// Every node is stopped, whichever c.nodes lists by then.
	t.Cleanup(func() { c.nodes = all; c.stop(t) })
	n1, n4, n5 := c.nodes[0], c.nodes[3], c.nodes[4]
	c.eventually(t, "the nodes answer", func() error {
		for _, n := range c.nodes {
			if err := c.expect(cli, n, "PONG", "ping"); err != nil {
				return err
			}
		}
		return nil
	})

	t.Run("MEET refusals", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(n5.client)
		_, bus, _ := net.SplitHostPort(n5.bus)
		for _, tc := range []struct{ args []string }{
			{[]string{"cluster", "meet", host, "x"}},
			{[]string{"cluster", "meet", "not-an-ip", port}},
			{[]string{"cluster", "meet", host, port, "99999"}},
			{[]string{"cluster", "meet", host, port, bus}}, // neither node claims slots
		} {
			out, _ := redisCLI(cli, n4, tc.args...)
			if !strings.HasPrefix(out, "ERR ") {
				t.Errorf("%v = %q, want an error", tc.args, out)
			}
		}
		if err := c.expect(cli, n4, "ERR Unknown node 0123", "cluster", "replicate", "0123"); err != nil {
			t.Error(err)
		}
	})

	out := runRedisCLITool(t, cli, "create", n1.client, c.nodes[1].client, c.nodes[2].client, "--cluster-yes")
	if !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("create:\n%s", out)
	}
	c.nodes = c.nodes[:3]
	c.waitOK(t)
	keys := writeMeetKeys(t, c, cli, n1, 60)
	checkCluster(t, cli, n1)
	if out := runRedisCLITool(t, cli, "info", n1.client); !strings.Contains(out, "60 keys in 3 masters") {
		t.Errorf("info:\n%s", out)
	}

	// An empty master, given slots by rebalance (a small weight keeps the
	// move short).
	runRedisCLITool(t, cli, "add-node", n4.client, n1.client)
	c.nodes = append(c.nodes, n4)
	id4 := nodeID(t, cli, n4)
	c.eventually(t, "the new master is known everywhere", func() error { return agreeOnMaster(cli, c, id4) })
	c.eventually(t, "the nodes agree", func() error { return clusterAgrees(cli, n1) })
	runRedisCLITool(t, cli, "rebalance", n1.client, "--cluster-use-empty-masters", "--cluster-weight", id4+"=0.005")
	c.eventually(t, "the new master serves slots", func() error {
		if n := slotsServedBy(c.clusterSlots(t, cli, n1), portOf(n4)); n == 0 {
			return fmt.Errorf("node 4 serves no slots")
		}
		return nil
	})
	checkCluster(t, cli, n1)

	// A replica of node 1, then deleted again.
	runRedisCLITool(t, cli, "add-node", n5.client, n1.client, "--cluster-slave", "--cluster-master-id", nodeID(t, cli, n1))
	id5 := nodeID(t, cli, n5)
	c.eventually(t, "node 5 replicates node 1", func() error {
		line, err := nodeLine(cli, n1, id5)
		if err == nil && !strings.Contains(line, " slave "+nodeID(t, cli, n1)+" ") {
			err = fmt.Errorf("node 5 is %q", line)
		}
		return err
	})
	runRedisCLITool(t, cli, "del-node", n1.client, id5)
	c.eventually(t, "node 5 removed", func() error {
		if line, err := nodeLine(cli, n1, id5); err == nil {
			return fmt.Errorf("node 5 still listed: %q", line)
		}
		return nil
	})
	if out := runRedisCLITool(t, cli, "fix", n1.client); !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Errorf("fix:\n%s", out)
	}
	checkCluster(t, cli, n1)
	for k, v := range keys {
		if err := c.expect(cli, n1, v, "-c", "get", k); err != nil {
			t.Error(err)
		}
	}
}

// meetNode is node i of the meet test: started with --meet, as a Redis
// Cluster node starts, alone and without slots.
func meetNode(bin, dir string, i, client, bus int) *testNode {
	n := processNodeOn(bin, dir, i, client, bus)
	n.args = []string{"server", "--id", n.id, "--bind", n.client, "--bus-bind", n.bus, "--bus-advertise", n.bus,
		"--data-dir", filepath.Join(dir, n.id), "--meet", "--log-level", "info"}
	return n
}

// runRedisCLITool runs redis-cli --cluster <args> and wants it to succeed.
func runRedisCLITool(t *testing.T, cli string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), redisCLIToolTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, append([]string{"--cluster"}, args...)...).CombinedOutput()
	if err != nil || strings.Contains(string(out), "[ERR]") {
		t.Fatalf("redis-cli --cluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func nodeID(t *testing.T, cli string, n *testNode) string {
	t.Helper()
	id, err := redisCLI(cli, n, "cluster", "myid")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func portOf(n *testNode) int {
	_, p, _ := net.SplitHostPort(n.client)
	port, _ := strconv.Atoi(p)
	return port
}

// nodeLine is id's CLUSTER NODES line as n renders it.
func nodeLine(cli string, n *testNode, id string) (string, error) {
	out, err := redisCLI(cli, n, "cluster", "nodes")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, id+" ") {
			return line, nil
		}
	}
	return "", fmt.Errorf("%s not in CLUSTER NODES of %s", id, n.id)
}

// agreeOnMaster: every node lists id as a master.
func agreeOnMaster(cli string, c *testCluster, id string) error {
	for _, n := range c.nodes {
		line, err := nodeLine(cli, n, id)
		if err != nil {
			return err
		}
		if !strings.Contains(line, "master") {
			return fmt.Errorf("%s on %s: %q", id, n.id, line)
		}
	}
	return nil
}

// clusterAgrees: redis-cli --cluster check finds every node's CLUSTER NODES
// alike (a node that just joined learns the leaders of the groups it does
// not host a moment later), as an operator waits before the next step.
func clusterAgrees(cli string, n *testNode) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, "--cluster", "check", n.client).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") {
		return fmt.Errorf("redis-cli --cluster check: %v\n%s", err, out)
	}
	return nil
}

// writeMeetKeys writes n keys through redis-cli -c and returns them.
func writeMeetKeys(t *testing.T, c *testCluster, cli string, via *testNode, n int) map[string]string {
	keys := map[string]string{}
	for i := range n {
		k, v := "meet:"+strconv.Itoa(i), "v"+strconv.Itoa(i)
		c.eventually(t, "SET "+k, func() error { return c.expect(cli, via, "OK", "-c", "set", k, v) })
		keys[k] = v
	}
	return keys
}
