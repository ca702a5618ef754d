package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
)

// Shape of the membership end-to-end test's cluster.
const (
	joinGroups   = 3
	joinReplicas = 3
	joinKeys     = 300
	// joinMaxLag is how far behind its group's leader a replica may be for
	// the group to count as healthy (the placement controller's own bound).
	joinMaxLag = 1024
)

// TestJoinGrowAndReplaceDeadNode is issue #3's "done when" with real
// processes: a cluster started with --bootstrap and --join grows from 3 to 5
// nodes, loses one of its first nodes for good (SIGKILL), and by itself
// replaces that node's replicas after --dead-after, drops it from the map and
// spreads the leaders again, without losing a key.
func TestJoinGrowAndReplaceDeadNode(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bin := buildSlotraft(t)
	dir := t.TempDir()
	c := &testCluster{bin: bin}
	t.Cleanup(func() { c.stop(t) })
	t.Cleanup(func() { c.logDecisions(t) }) // runs first, nodes still up
	newNode := func(i int, mode ...string) *testNode {
		// Ports are taken just before the node starts: one reserved a
		// minute earlier may have been handed out meanwhile (an outgoing
		// connection's port), and the node could not bind it.
		n := processNode(t, bin, dir, i)
		n.args = append([]string{"server", "--id", n.id, "--bind", n.client,
			"--bus-bind", n.bus, "--bus-advertise", n.bus, "--data-dir", filepath.Join(dir, n.id),
			"--groups", strconv.Itoa(joinGroups), "--replicas", strconv.Itoa(joinReplicas),
			"--groups-per-node", "0", // replica moves only (scale-out: TestScaleOutRebalance)
			"--dead-after", "3s", "--log-level", "info"}, mode...)
		c.nodes = append(c.nodes, n)
		n.start(t)
		return n
	}

	// Three nodes: the first creates the cluster, the others join it.
	first := newNode(0, "--bootstrap")
	for i := 1; i < 3; i++ {
		newNode(i, "--join", first.bus)
	}
	waitHealthy(t, first, 3, "")

	// go-redis reloads its slot map on MOVED/ASK, not when a master it knows
	// refuses connections (killed): it would wait its 60 s default reload
	// interval before it learns the new masters.
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{c.nodes[0].client, c.nodes[1].client, c.nodes[2].client}, Protocol: 2,
		DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		ClusterStateReloadInterval: 2 * time.Second,
	})
	defer rdb.Close()
	for i := range joinKeys {
		key, val := fmt.Sprintf("key:%d", i), fmt.Sprintf("value:%d", i)
		c.eventually(t, "set "+key, func() error { return rdb.Set(context.Background(), key, val, 0).Err() })
	}

	// Two more nodes join through any running node: groups spread onto them.
	for i := 3; i < 5; i++ {
		newNode(i, "--join", c.nodes[1].bus+","+c.nodes[2].bus)
	}
	waitHealthy(t, first, 5, "")

	// One of the first three dies for good: first, the bootstrap node and
	// the seed the second and third joined through.
	victim := first
	st := c.status(t, c.nodes[1])
	t.Logf("kill -9 %s (pid %d); meta leader before: %s, epoch %d", victim.id, victim.cmd.Process.Pid, st.MetaLeader, st.Epoch)
	victim.kill(t)
	survivor := c.nodes[1]
	waitHealthy(t, survivor, 4, victim.id)

	// CLUSTER NODES no longer lists it either, on any survivor.
	deadID := server.NodeID(victim.id)
	for _, n := range c.nodes {
		if n == victim {
			continue
		}
		cli := redis.NewClient(&redis.Options{Addr: n.client, Protocol: 2, DisableIdentity: true})
		c.eventually(t, "CLUSTER NODES from "+n.id+" without "+victim.id, func() error {
			out, err := cli.ClusterNodes(context.Background()).Result()
			if err != nil {
				return err
			}
			if lines := strings.Count(strings.TrimSpace(out), "\n") + 1; strings.Contains(out, deadID) || lines != 4 {
				return fmt.Errorf("%d lines, want 4 without %s (%s):\n%s", lines, victim.id, deadID, out)
			}
			return nil
		})
		c.eventually(t, "CLUSTER SLOTS from "+n.id+" without "+victim.id, func() error {
			//lint:ignore SA1019 CLUSTER SLOTS is still what go-redis routes by.
			slots, err := cli.ClusterSlots(context.Background()).Result()
			if err != nil {
				return err
			}
			for _, s := range slots {
				for _, sn := range s.Nodes {
					if sn.ID == deadID || sn.Addr == victim.client {
						return fmt.Errorf("slots %d-%d still on %s: %+v", s.Start, s.End, victim.id, slots)
					}
				}
			}
			return nil
		})
		cli.Close()
	}

	// No key lost.
	for i := range joinKeys {
		key, want := fmt.Sprintf("key:%d", i), fmt.Sprintf("value:%d", i)
		c.eventually(t, "get "+key, func() error {
			got, err := rdb.Get(context.Background(), key).Result()
			if errors.Is(err, redis.Nil) {
				t.Fatalf("%s is lost after %s died", key, victim.id)
			}
			if err != nil {
				return err
			}
			if got != want {
				t.Fatalf("get %s = %q, want %q", key, got, want)
			}
			return nil
		})
	}
}

// decisionLog matches the log lines that tell how the cluster map and the
// groups' memberships changed, and what went wrong.
var decisionLog = regexp.MustCompile(`level=(WARN|ERROR)|placement|membership|meta group|cluster map|hosting group|replica|gossip: node state|bootstrap|removed`)

// logDecisions prints, when the test failed, the last lines of each node's
// log that decisionLog matches: the controller's and the groups' decisions
// next to the errors, which the plain tail (testCluster.stop) drowns in
// Raft's retries.
func (c *testCluster) logDecisions(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, n := range c.nodes {
		b, err := os.ReadFile(n.logPath)
		if err != nil {
			t.Logf("%s: %v", n.id, err)
			continue
		}
		var lines []string
		for line := range strings.Lines(string(b)) {
			if decisionLog.MatchString(line) && !strings.Contains(line, "failed to make requestVote RPC") && !strings.Contains(line, "failed to appendEntries") && !strings.Contains(line, "failed to heartbeat") {
				lines = append(lines, strings.TrimRight(line, "\n"))
			}
		}
		t.Logf("decisions and errors of %s (last 60 of %d):\n%s", n.id, len(lines), strings.Join(lines[max(0, len(lines)-60):], "\n"))
	}
}

// status is SLOTRAFT STATUS from n through `slotraft admin status --json`.
func (c *testCluster) status(t *testing.T, n *testNode) cluster.ClusterStatus {
	t.Helper()
	st, _, err := adminStatusJSON(n.client, "5s")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitHealthy polls `slotraft admin status --json` on from until the
// cluster is the wanted shape: nodes active nodes, all reachable, none of
// them dead; every group led, with joinReplicas replicas, all Leader or
// Follower and at most joinMaxLag behind, none on dead; and, past the
// first three nodes (which the first groups fill), spread: every node
// hosts a replica and every group is led by a different node. It fails
// the test with the last status after e2eDeadline.
func waitHealthy(t *testing.T, from *testNode, nodes int, dead string) {
	t.Helper()
	what := fmt.Sprintf("%d healthy nodes with %d groups of %d replicas", nodes, joinGroups, joinReplicas)
	if dead != "" {
		what += " without " + dead
	}
	if nodes > 3 {
		what += ", spread"
	}
	start := time.Now()
	deadline := start.Add(e2eDeadline)
	for {
		st, raw, err := adminStatusJSON(from.client, "5s")
		if err == nil {
			err = checkHealthy(st, nodes, dead)
		}
		if err == nil {
			t.Logf("%s after %v (epoch %d, meta leader %s): %s", what, time.Since(start).Round(time.Millisecond), st.Epoch, st.MetaLeader, placement(st))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v: %v\nlast status from %s:\n%s", what, e2eDeadline, err, from.id, raw)
		}
		time.Sleep(250 * time.Millisecond) // poll interval, not a wait for propagation
	}
}

// placement is a one-line summary of the groups' replicas, leader first.
func placement(st cluster.ClusterStatus) string {
	var b strings.Builder
	for _, g := range st.Groups {
		fmt.Fprintf(&b, " group %d:", g.ID)
		for _, r := range g.Replicas {
			b.WriteString(" " + r.Node)
		}
	}
	return strings.TrimSpace(b.String())
}

// checkHealthy says what in st is not yet the wanted shape (waitHealthy).
func checkHealthy(st cluster.ClusterStatus, nodes int, dead string) error {
	if len(st.Nodes) != nodes {
		ids := make([]string, len(st.Nodes))
		for i, n := range st.Nodes {
			ids[i] = n.ID
		}
		return fmt.Errorf("status lists nodes %v, want %d", ids, nodes)
	}
	for _, n := range st.Nodes {
		if n.ID == dead {
			return fmt.Errorf("status still lists dead node %s", dead)
		}
		if !n.Reachable {
			return fmt.Errorf("node %s is unreachable: %s", n.ID, n.Error)
		}
	}
	if len(st.Groups) != joinGroups {
		return fmt.Errorf("%d groups, want %d", len(st.Groups), joinGroups)
	}
	var leaders []string
	hosted := map[string]int{}
	for _, g := range st.Groups {
		if g.Leader == "" {
			return fmt.Errorf("group %d has no leader", g.ID)
		}
		if len(g.Replicas) != joinReplicas {
			return fmt.Errorf("group %d has %d replicas %+v, want %d", g.ID, len(g.Replicas), g.Replicas, joinReplicas)
		}
		for _, r := range g.Replicas {
			hosted[r.Node]++
			switch {
			case r.Node == dead:
				return fmt.Errorf("group %d still has a replica on dead node %s", g.ID, dead)
			case r.State != "Leader" && r.State != "Follower":
				return fmt.Errorf("group %d: replica on %s is %s", g.ID, r.Node, r.State)
			case r.Lag >= joinMaxLag:
				return fmt.Errorf("group %d: replica on %s lags by %d", g.ID, r.Node, r.Lag)
			}
		}
		leaders = append(leaders, g.Leader)
	}
	if nodes <= 3 {
		return nil
	}
	// Spread: joinGroups*joinReplicas replicas over at most as many nodes,
	// at least as many nodes as groups.
	for _, n := range st.Nodes {
		if hosted[n.ID] == 0 {
			return fmt.Errorf("node %s hosts no replica yet: %s", n.ID, placement(st))
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(leaders)))) != len(leaders) {
		return fmt.Errorf("leaders %v are not spread over distinct nodes", leaders)
	}
	return nil
}
