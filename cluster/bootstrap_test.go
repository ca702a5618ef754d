package cluster

import (
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
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

// TestBootstrapExpectBesideCluster: a node that starts empty with
// --bootstrap-expect while a cluster exists (a scale-up, or a pod that
// lost its volume) never bootstraps a second cluster, even with the
// smallest id: gossip shows it members of the existing one, and it is
// added to that cluster instead.
func TestBootstrapExpectBesideCluster(t *testing.T) {
	lns := []net.Listener{listenLocal(t), listenLocal(t), listenLocal(t), listenLocal(t)}
	var seeds []string
	for _, ln := range lns[1:] {
		seeds = append(seeds, ln.Addr().String())
	}
	nodes := make([]*Node, 4)
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	for i := 1; i <= 3; i++ {
		nodes[i] = dynNode(t, fmt.Sprintf("e%d", i), t.TempDir(), lns[i], func(c *Config) {
			c.BootstrapExpect, c.Join = 3, seeds
		})
	}
	PollUntil(t, "one map of 3 nodes", func() bool { return fullMap(nodes[1], 3) && fullMap(nodes[2], 3) && fullMap(nodes[3], 3) })
	epoch := nodes[1].Map().Epoch
	// e0 sorts first: before, it bootstrapped a meta group of e0, e1, e2.
	var logs syncBuffer
	nodes[0] = dynNode(t, "e0", t.TempDir(), lns[0], func(c *Config) {
		c.BootstrapExpect, c.Join = 3, seeds
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	PollUntil(t, "e0 added to the existing cluster", func() bool {
		return fullMap(nodes[0], 4) && fullMap(nodes[1], 4)
	})
	if got := nodes[0].Map().Epoch; got <= epoch {
		t.Fatalf("e0's map is at epoch %d, the cluster's was %d before it came: a second map", got, epoch)
	}
	// Usually the meta leader adds e0 before its loop sees three alive
	// peers; the guard covers the other order, which this cannot force.
	if out := logs.String(); strings.Contains(out, "bootstrapped the meta group") {
		t.Fatalf("e0 bootstrapped a meta group beside the cluster:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLostDataDirRejoins: a node that comes back under its id with an
// empty data directory (a lost volume) is not taken for its old self: the
// map records each node's data directory id, placement removes the old
// incarnation as soon as gossip shows the new id, and the node is added
// again as a new member that receives every group it is given.
func TestLostDataDirRejoins(t *testing.T) {
	lns := []net.Listener{listenLocal(t), listenLocal(t), listenLocal(t)}
	var seeds []string
	for _, ln := range lns {
		seeds = append(seeds, ln.Addr().String())
	}
	start := func(i int, ln net.Listener) *Node {
		return dynNode(t, fmt.Sprintf("e%d", i+1), t.TempDir(), ln, func(c *Config) {
			c.BootstrapExpect, c.Join = 3, seeds
		})
	}
	nodes := make([]*Node, 3)
	defer func() {
		for _, n := range nodes {
			if n != nil {
				_ = n.Close()
			}
		}
	}()
	for i := range nodes {
		nodes[i] = start(i, lns[i])
	}
	PollUntil(t, "3 nodes whose data directory ids the map records", func() bool {
		m := nodes[0].Map()
		for _, n := range nodes {
			if nd, ok := m.Node(n.self.ID); !ok || nd.UID != n.uid {
				return false
			}
		}
		return fullMap(nodes[0], 3)
	})
	old := nodes[2].uid
	if err := nodes[2].Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", seeds[2])
	if err != nil {
		t.Fatal(err)
	}
	nodes[2] = start(2, ln) // a new, empty data directory under the same id
	if nodes[2].uid == old {
		t.Fatal("a new data directory got the old one's id")
	}
	PollUntil(t, "e3 a member again under its new data directory, every group whole", func() bool {
		nd, ok := nodes[0].Map().Node("e3")
		return ok && nd.UID == nodes[2].uid && nd.Incarnation >= 2 && fullMap(nodes[0], 3) && fullMap(nodes[2], 3)
	})
	for _, g := range nodes[0].Map().Groups {
		if !slices.Contains(g.Replicas, "e3") {
			continue
		}
		PollUntil(t, fmt.Sprintf("group %d hosted on the new e3", g.ID), func() bool {
			gr := grp(nodes[2], g.ID)
			return gr != nil && gr.local
		})
	}
}
