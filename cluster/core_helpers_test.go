package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Shortened Raft timing for tests (cf. Nomad's TestServer), generous enough
// for -race on two busy cores.
const (
	testHeartbeat = 250 * time.Millisecond
	testElection  = 250 * time.Millisecond
	testLease     = 150 * time.Millisecond
	testCommit    = 20 * time.Millisecond
	testWait      = 15 * time.Second // deadline for polled conditions
)

func coreTestLogger() *slog.Logger {
	if os.Getenv("SLOTRAFT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// tcluster is an in-process static cluster of nodes on loopback ports.
type tcluster struct {
	t        *testing.T
	faults   *transport.Faults
	peers    []Peer
	dirs     []string
	nodes    []*Node // nil while stopped
	replicas int
}

func newTestCluster(t *testing.T, size, replicas int) *tcluster {
	t.Helper()
	c := &tcluster{t: t, faults: transport.NewFaults(), nodes: make([]*Node, size), replicas: replicas}
	lns := make([]net.Listener, size)
	for i := range size {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.peers = append(c.peers, Peer{
			ID:         fmt.Sprintf("n%d", i+1),
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i),
			BusAddr:    ln.Addr().String(),
		})
		c.dirs = append(c.dirs, t.TempDir())
	}
	for i := range size {
		c.startWith(i, lns[i])
	}
	t.Cleanup(c.closeAll)
	for i := range size {
		c.waitMap(i)
	}
	return c
}

// waitMap waits until node i follows the cluster map.
func (c *tcluster) waitMap(i int) {
	c.t.Helper()
	pollUntil(c.t, fmt.Sprintf("node %d to know the cluster map", i), func() bool {
		return c.nodes[i].ready.Load()
	})
}

// grp is node n's object for group gid; nil while n does not know the map.
func grp(n *Node, gid uint32) *Group {
	g, _ := n.group(gid)
	return g
}

func (c *tcluster) config(i int, ln net.Listener) Config {
	return Config{
		ID: c.peers[i].ID, DataDir: c.dirs[i], Peers: c.peers, Groups: 3, Replicas: c.replicas,
		Logger: coreTestLogger(), BusListener: ln, Faults: c.faults,
		RaftHeartbeat: testHeartbeat, RaftElection: testElection, RaftLeaderLease: testLease, RaftCommit: testCommit,
		SnapshotThreshold: 64, SnapshotInterval: 500 * time.Millisecond, TrailingLogs: 32,
	}
}

func (c *tcluster) startWith(i int, ln net.Listener) {
	c.t.Helper()
	n, err := NewNode(c.config(i, ln))
	if err != nil {
		c.t.Fatalf("node %d: %v", i, err)
	}
	c.nodes[i] = n
}

// stop closes node i; restart reopens it on the same data dir and address.
func (c *tcluster) stop(i int) {
	c.t.Helper()
	if err := c.nodes[i].Close(); err != nil {
		c.t.Errorf("close node %d: %v", i, err)
	}
	c.nodes[i] = nil
}

func (c *tcluster) restart(i int) {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.peers[i].BusAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.startWith(i, ln)
	c.waitMap(i)
}

func (c *tcluster) closeAll() {
	for i, n := range c.nodes {
		if n != nil {
			c.stop(i)
		}
	}
}

func (c *tcluster) index(id string) int {
	return slices.IndexFunc(c.peers, func(p Peer) bool { return p.ID == id })
}

// leader polls until exactly one node among those given (all running nodes
// if none) leads group gid, and returns its index.
func (c *tcluster) leader(gid uint32, among ...int) int {
	c.t.Helper()
	if len(among) == 0 {
		for i := range c.nodes {
			among = append(among, i)
		}
	}
	found := -1
	pollUntil(c.t, "a single leader of group "+fmt.Sprint(gid), func() bool {
		found = -1
		for _, i := range among {
			n := c.nodes[i]
			if n == nil || !grp(n, gid).IsLeader() {
				continue
			}
			if found >= 0 {
				return false
			}
			found = i
		}
		return found >= 0
	})
	return found
}

func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// keyIn returns a key whose slot belongs to group gid.
func keyIn(gid uint32, groups int, prefix string) string {
	r := slots.Split(groups)[gid-1]
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if r.Contains(slots.Of([]byte(k))) {
			return k
		}
	}
}

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// write proposes one command to group gid through its current leader,
// retrying while the leader moves (ErrNotLeader is never proposed).
func (c *tcluster) write(gid uint32, args ...string) resp.Value {
	c.t.Helper()
	return c.writeAmong(gid, nil, args...)
}

// writeAmong is write with the leader looked for among the given nodes.
func (c *tcluster) writeAmong(gid uint32, among []int, args ...string) resp.Value {
	c.t.Helper()
	var v resp.Value
	pollUntil(c.t, "write "+args[0], func() bool {
		i := c.leader(gid, among...)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		vs, err := grp(c.nodes[i], gid).Propose(ctx, [][][]byte{argv(args...)})
		if errors.Is(err, ErrNotLeader) {
			return false
		}
		if err != nil {
			c.t.Fatalf("propose %q: %v", args, err)
		}
		v = vs[0]
		return true
	})
	return v
}

// readOn runs a read command linearizably on node i.
func readOn(n *Node, gid uint32, args ...string) (resp.Value, error) {
	var v resp.Value
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := fsm.Lookup([]byte(args[0]))
	err := grp(n, gid).Read(ctx, func(st *fsm.State) {
		v = st.Read(max(time.Now().UnixMilli(), st.LastNow()), c, argv(args...))
	})
	return v, err
}

// staleGet reads key from node n's replica of gid without any check.
func staleGet(n *Node, gid uint32, key string) (string, bool) {
	var o *store.Object
	_ = grp(n, gid).ReadStale(func(st *fsm.State) {
		st.View(func(s *store.Store) { o = s.Get([]byte(key), time.Now().UnixMilli()) })
	})
	if o == nil {
		return "", false
	}
	return string(o.Str), true
}

func valueText(v resp.Value) string {
	if v.Kind != resp.KindBulk && v.Kind != resp.KindStatus {
		return fmt.Sprintf("<kind %d %q %d>", v.Kind, v.Str, v.Int)
	}
	return string(v.Str)
}

// checkNoLeaks fails if goroutines started since before do not end soon.
func checkNoLeaks(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func keySlot(k string) uint16 { return slots.Of([]byte(k)) }

var (
	raftErrNotLeader = raft.ErrNotLeader
	raftErrTransfer  = raft.ErrLeadershipTransferInProgress
	raftErrEnqueue   = raft.ErrEnqueueTimeout
	raftErrLost      = raft.ErrLeadershipLost
	raftErrShutdown  = raft.ErrRaftShutdown
	raftErrRestore   = raft.ErrAbortedByRestore
)
