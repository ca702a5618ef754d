package cluster

import (
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/slotraft/slotraft/cluster/meta"
)

// dynNode starts a node of a dynamic (non-static) cluster on its own
// listener; tune adjusts the config (start mode).
func dynNode(t *testing.T, id, dir string, ln net.Listener, tune func(*Config)) *Node {
	t.Helper()
	cfg := Config{
		ID: id, DataDir: dir, Groups: 3, Replicas: 3, ClientAdvertise: "127.0.0.1:1",
		Logger: TestLogger(), BusListener: ln, GossipFast: true,
		RaftHeartbeat: TestHeartbeat, RaftElection: TestElection, RaftLeaderLease: TestLease, RaftCommit: TestCommit,
	}
	tune(&cfg)
	n, err := NewNode(cfg)
	if err != nil {
		t.Fatalf("node %s: %v", id, err)
	}
	return n
}

func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// fullMap: the map lists want active nodes and every group has
// min(3, want) replicas led by a leader some node knows.
func fullMap(n *Node, want int) bool {
	m := n.Map()
	if len(m.ActiveNodes()) != want || !m.Initialized() {
		return false
	}
	for _, g := range m.Groups {
		if len(g.Replicas) != min(3, want) {
			return false
		}
		if _, ok := n.Leader(grp(n, g.ID)); !ok {
			return false
		}
	}
	return true
}

// TestBootstrapExpect: three nodes started with --bootstrap-expect 3 and
// each other as --join seeds form one cluster: one map, every group on all
// three; restarted, they do not bootstrap again (the map keeps its epoch
// history instead of a second Init).
func TestBootstrapExpect(t *testing.T) {
	lns := []net.Listener{listenLocal(t), listenLocal(t), listenLocal(t)}
	var seeds []string
	for _, ln := range lns {
		seeds = append(seeds, ln.Addr().String())
	}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	start := func(i int, ln net.Listener) *Node {
		return dynNode(t, fmt.Sprintf("e%d", i+1), dirs[i], ln, func(c *Config) {
			c.BootstrapExpect, c.Join = 3, seeds
		})
	}
	nodes := make([]*Node, 3)
	for i := range nodes {
		nodes[i] = start(i, lns[i])
	}
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	PollUntil(t, "one map of 3 nodes on every node", func() bool {
		return fullMap(nodes[0], 3) && fullMap(nodes[1], 3) && fullMap(nodes[2], 3)
	})
	epoch := nodes[0].Map().Epoch
	for i, n := range nodes {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
		nodes[i] = nil
	}
	for i := range nodes {
		ln, err := net.Listen("tcp", seeds[i])
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = start(i, ln)
	}
	PollUntil(t, "the same map after a full restart", func() bool {
		return fullMap(nodes[0], 3) && fullMap(nodes[1], 3) && fullMap(nodes[2], 3)
	})
	if got := nodes[0].Map().Epoch; got < epoch {
		t.Fatalf("epoch after restart %d, before %d: the map was created again", got, epoch)
	}
}

// TestBootstrapThenJoin: a --bootstrap node alone serves every slot with
// one replica per group; a second node started with --join receives a
// replica of every group, and a restart of the first (still --bootstrap)
// does not create a second cluster.
func TestBootstrapThenJoin(t *testing.T) {
	ln1, ln2 := listenLocal(t), listenLocal(t)
	seed := ln1.Addr().String()
	dir1 := t.TempDir()
	n1 := dynNode(t, "b1", dir1, ln1, func(c *Config) { c.Bootstrap, c.Join = true, []string{seed} })
	defer func() { _ = n1.Close() }()
	PollUntil(t, "a one-node cluster", func() bool { return fullMap(n1, 1) })
	n2 := dynNode(t, "b2", t.TempDir(), ln2, func(c *Config) { c.Join = []string{seed} })
	defer func() { _ = n2.Close() }()
	PollUntil(t, "the joiner replicating every group", func() bool {
		if !fullMap(n1, 2) || !fullMap(n2, 2) {
			return false
		}
		for _, g := range n2.Groups() {
			if !g.Local() || !slices.Contains(g.Replicas(), "b2") {
				return false
			}
		}
		return true
	})
	if nd, _ := n1.Map().Node("b2"); nd.State != meta.Active || nd.Incarnation != 1 {
		t.Fatalf("joiner's map entry %+v", nd)
	}
	if err := n1.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", seed)
	if err != nil {
		t.Fatal(err)
	}
	n1 = dynNode(t, "b1", dir1, ln, func(c *Config) { c.Bootstrap, c.Join = true, []string{seed} })
	PollUntil(t, "the restarted bootstrap node back in the same cluster", func() bool {
		return fullMap(n1, 2) && n1.MetaLeader() != "" && n1.MetaLeader() == n2.MetaLeader()
	})
}
