package testcluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/transport"
)

// Options shape a test cluster; zero values take the defaults.
type Options struct {
	Groups   int // slot groups (default 3)
	Replicas int // replicas per group (default 3, capped at the node count)
	// Faults, if set, is shared by every node's transport so tests can cut links.
	Faults *transport.Faults
	// Logger receives the nodes' logs; default: discarded, or stderr at debug
	// level when SLOTRAFT_TEST_LOG is set.
	Logger *slog.Logger
	// DeadAfter is how long a node may be down before its replicas are
	// replaced (default: the cluster's 30 s).
	DeadAfter time.Duration
	// GroupsPerNode: create slot groups as nodes join (cluster.Config).
	GroupsPerNode int
	// MoveParallel: slots a source group moves at once (cluster.Config).
	MoveParallel int
	// ConfigFile, if set, is a Redis config file every node's server
	// starts with (as slotraft server --config), for immutable parameters
	// such as enable-debug-command.
	ConfigFile string
}

// Cluster is a running in-process cluster.
type Cluster struct {
	t      testing.TB
	opts   Options
	peers  []cluster.Peer
	static int // the first static nodes were started with the peer list
	base   string
	logger *slog.Logger

	mu    sync.Mutex
	nodes []*node
}

type node struct {
	i      int
	peer   cluster.Peer
	joined bool // started by AddNode: --join instead of the static peers
	dir    string
	n      *cluster.Node
	srv    *server.Server
	served chan error
}

// Test timing: hashicorp/raft's defaults for heartbeat and election. CI runs
// every package at once under -race on 2 cores; with 250 ms timeouts a busy
// machine flapped leaders in tests that have no fault in them (a blocked
// XREAD was unblocked by a leader change, a WATCH client saw CLUSTERDOWN).
// Failover tests wait for the new leader with a deadline, so slower elections
// cost them time, not correctness.
const (
	heartbeat   = 1000 * time.Millisecond
	election    = 1000 * time.Millisecond
	leaderLease = 500 * time.Millisecond
	commit      = 5 * time.Millisecond
)

// New starts n nodes and registers their shutdown with t.Cleanup. It does not
// wait for leaders: call WaitLeaders.
func New(t testing.TB, n int, opts Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, opts: opts, logger: opts.Logger}
	if c.logger == nil {
		c.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		if os.Getenv("SLOTRAFT_TEST_LOG") != "" {
			c.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	clientLns := make([]net.Listener, n)
	busLns := make([]net.Listener, n)
	for i := range n {
		clientLns[i] = listen(t, "127.0.0.1:0")
		busLns[i] = listen(t, "127.0.0.1:0")
		c.peers = append(c.peers, cluster.Peer{
			ID:         fmt.Sprintf("node%d", i+1),
			ClientAddr: clientLns[i].Addr().String(),
			BusAddr:    busLns[i].Addr().String(),
		})
	}
	c.base, c.static = t.TempDir(), n
	for i := range n {
		c.nodes = append(c.nodes, &node{i: i, peer: c.peers[i], dir: filepath.Join(c.base, c.peers[i].ID)})
	}
	t.Cleanup(c.Close)
	for i := range n {
		if err := c.start(i, clientLns[i], busLns[i]); err != nil {
			t.Fatalf("testcluster: start node %d: %v", i, err)
		}
	}
	return c
}

func listen(t testing.TB, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("testcluster: listen %s: %v", addr, err)
	}
	return ln
}

func (c *Cluster) config(i int, bus net.Listener) cluster.Config {
	p := c.peers[i]
	peers, join := c.peers[:c.static], []string(nil)
	if c.nodes[i].joined {
		peers = nil
		for _, sp := range c.peers[:c.static] {
			join = append(join, sp.BusAddr)
		}
	}
	return cluster.Config{
		ID: p.ID, ClientBind: p.ClientAddr, ClientAdvertise: p.ClientAddr,
		BusBind: p.BusAddr, BusAdvertise: p.BusAddr, BusListener: bus,
		DataDir: c.nodes[i].dir, Peers: peers, Join: join, DeadAfter: c.opts.DeadAfter,
		Groups: c.opts.Groups, Replicas: c.opts.Replicas, GroupsPerNode: c.opts.GroupsPerNode, MoveParallel: c.opts.MoveParallel,
		Logger:        c.logger.With("node", p.ID),
		RaftHeartbeat: heartbeat, RaftElection: election, RaftLeaderLease: leaderLease, RaftCommit: commit,
		Faults: c.opts.Faults, GossipFast: true,
	}
}

func (c *Cluster) start(i int, clientLn, busLn net.Listener) error {
	nd := c.nodes[i]
	n, err := cluster.NewNode(c.config(i, busLn))
	if err != nil {
		clientLn.Close()
		return err
	}
	srv := server.New(n, c.logger.With("node", nd.peer.ID))
	if c.opts.ConfigFile != "" {
		f, err := server.ReadConfigFile(c.opts.ConfigFile, nil)
		if err == nil {
			err = srv.UseConfigFile(f)
		}
		if err != nil {
			clientLn.Close()
			return errors.Join(err, srv.Close(), n.Close())
		}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(clientLn) }()
	c.mu.Lock()
	nd.n, nd.srv, nd.served = n, srv, served
	c.mu.Unlock()
	return nil
}

// AddNode starts a new node that joins the cluster by gossip (--join with
// the static nodes' bus addresses) and returns its index. The placement
// controller gives it replicas.
func (c *Cluster) AddNode() int {
	c.t.Helper()
	clientLn := listen(c.t, "127.0.0.1:0")
	busLn := listen(c.t, "127.0.0.1:0")
	c.mu.Lock()
	i := len(c.nodes)
	p := cluster.Peer{ID: fmt.Sprintf("node%d", i+1), ClientAddr: clientLn.Addr().String(), BusAddr: busLn.Addr().String()}
	c.peers = append(c.peers, p)
	c.nodes = append(c.nodes, &node{i: i, peer: p, joined: true, dir: filepath.Join(c.base, p.ID)})
	c.mu.Unlock()
	if err := c.start(i, clientLn, busLn); err != nil {
		c.t.Fatalf("testcluster: start node %d: %v", i, err)
	}
	return i
}

// Dir is node i's data directory.
func (c *Cluster) Dir(i int) string { return c.nodes[i].dir }

// Addrs are the client addresses of all nodes, running or not, in node order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.peers))
	for i, p := range c.peers {
		out[i] = p.ClientAddr
	}
	return out
}

// Peers are the nodes' peers, in node order.
func (c *Cluster) Peers() []cluster.Peer { return append([]cluster.Peer(nil), c.peers...) }

// Len is the number of nodes.
func (c *Cluster) Len() int { return len(c.nodes) }

// Node is node i, or nil while it is stopped.
func (c *Cluster) Node(i int) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].n
}

// Running reports whether node i is running.
func (c *Cluster) Running(i int) bool { return c.Node(i) != nil }

// IndexOf is the index of the node with id, or -1.
func (c *Cluster) IndexOf(id string) int {
	for i, p := range c.peers {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// StopNode stops node i's server and node (as a crash would, but cleanly
// closing files). It is a no-op on a stopped node.
func (c *Cluster) StopNode(i int) {
	c.t.Helper()
	if err := c.stop(i); err != nil {
		c.t.Errorf("testcluster: stop node %d: %v", i, err)
	}
}

func (c *Cluster) stop(i int) error {
	c.mu.Lock()
	nd := c.nodes[i]
	n, srv, served := nd.n, nd.srv, nd.served
	nd.n, nd.srv, nd.served = nil, nil, nil
	c.mu.Unlock()
	if n == nil {
		return nil
	}
	var errs []error
	if err := srv.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := <-served; err != nil && !errors.Is(err, server.ErrClosed) {
		errs = append(errs, fmt.Errorf("serve: %w", err))
	}
	if err := n.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// RestartNode starts a stopped node i again on its data directory and ports.
func (c *Cluster) RestartNode(i int) {
	c.t.Helper()
	if c.Running(i) {
		c.t.Fatalf("testcluster: node %d is running", i)
	}
	p := c.peers[i]
	clientLn := relisten(c.t, p.ClientAddr)
	busLn := relisten(c.t, p.BusAddr)
	if err := c.start(i, clientLn, busLn); err != nil {
		busLn.Close()
		c.t.Fatalf("testcluster: restart node %d: %v", i, err)
	}
}

// relisten listens on a port this process used before; the OS may take a
// moment to release it.
func relisten(t testing.TB, addr string) net.Listener {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			t.Fatalf("testcluster: listen %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitLeaders polls until every group has a leader on a running node and
// every running node knows it, or fails the test after timeout.
func (c *Cluster) WaitLeaders(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := c.leadersKnown()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testcluster: no stable leaders after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) leadersKnown() error {
	first := c.firstRunning()
	if first == nil {
		return errors.New("no node is running")
	}
	if len(first.Groups()) == 0 {
		return errors.New("the cluster map is not known yet")
	}
	for gi, g := range first.Groups() {
		var leaderID string
		for i := range c.nodes {
			n := c.Node(i)
			if n == nil {
				continue
			}
			grp := groupAt(n, gi)
			if grp == nil {
				return fmt.Errorf("node %s does not know the map yet", c.peers[i].ID)
			}
			p, ok := n.Leader(grp)
			if !ok {
				return fmt.Errorf("group %d: node %s knows no leader", g.ID(), c.peers[i].ID)
			}
			if leaderID == "" {
				leaderID = p.ID
			} else if p.ID != leaderID {
				return fmt.Errorf("group %d: nodes disagree on the leader (%s, %s)", g.ID(), leaderID, p.ID)
			}
		}
		li := c.IndexOf(leaderID)
		if li < 0 || !c.Running(li) {
			return fmt.Errorf("group %d: leader %s is not running", g.ID(), leaderID)
		}
		if !groupAt(c.Node(li), gi).IsLeader() {
			return fmt.Errorf("group %d: %s is not leader yet", g.ID(), leaderID)
		}
	}
	return nil
}

// WaitReady waits for the state tests start from: every group led by its
// own node (leader spreading done, so no transfer moves a leader under the
// test's feet) and every node agreeing on the leaders.
func (c *Cluster) WaitReady(timeout time.Duration) {
	c.t.Helper()
	c.WaitLeaders(timeout)
	c.WaitSpread(timeout)
	c.WaitLeaders(timeout)
}

// WaitSpread polls until every group is led by a different running node
// and, where its preferred replica runs, by that replica: the state leader
// spreading converges to, so no transfer moves a leader during the test.
// It fails the test after timeout. It needs at least as many running nodes
// as groups.
func (c *Cluster) WaitSpread(timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		leaders := map[int]bool{}
		groups, settled := 0, true
		if n := c.firstRunning(); n != nil {
			groups = len(n.Groups())
			for gi := range groups {
				li := c.LeaderIndex(gi)
				if li >= 0 {
					leaders[li] = true
				}
				if pi := c.preferredIndex(gi); pi >= 0 && pi != li {
					settled = false
				}
			}
		}
		if groups > 0 && len(leaders) == groups && settled {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testcluster: %d groups led by %d distinct nodes after %v", groups, len(leaders), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) firstRunning() *cluster.Node {
	for i := range c.nodes {
		if n := c.Node(i); n != nil {
			return n
		}
	}
	return nil
}

// preferredIndex is the index of group gi's preferred leader as a running
// node that hosts the group sees it, or -1 if that node is not running.
func (c *Cluster) preferredIndex(gi int) int {
	for i := range c.nodes {
		if n := c.Node(i); n != nil && groupAt(n, gi).Local() {
			if pi := c.IndexOf(groupAt(n, gi).PreferredLeader()); pi >= 0 && c.Running(pi) {
				return pi
			}
			return -1
		}
	}
	return -1
}

// LeaderIndex is the index of the node leading group index gi (0-based, in
// Groups() order), or -1 when no running node leads it.
func (c *Cluster) LeaderIndex(gi int) int {
	for i := range c.nodes {
		if n := c.Node(i); n != nil && groupAt(n, gi).IsLeader() {
			return i
		}
	}
	return -1
}

// LeaderOf is the index of the node leading group id gid, or -1 when no
// running node leads it.
func (c *Cluster) LeaderOf(gid uint32) int {
	for i := range c.nodes {
		n := c.Node(i)
		if n == nil {
			continue
		}
		for _, g := range n.Groups() {
			if g.ID() == gid && g.IsLeader() {
				return i
			}
		}
	}
	return -1
}

// groupAt is n's group at index gi of Groups(), nil while n does not know
// the map.
func groupAt(n *cluster.Node, gi int) *cluster.Group {
	gs := n.Groups()
	if gi >= len(gs) {
		return nil
	}
	return gs[gi]
}

// Close stops every node; t.Cleanup calls it.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for i := range c.nodes {
		wg.Go(func() {
			if err := c.stop(i); err != nil {
				c.t.Errorf("testcluster: stop node %d: %v", i, err)
			}
		})
	}
	wg.Wait()
}
