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

	"github.com/slotraft/slotraft/cluster/transport"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Shortened Raft timing for tests (cf. Nomad's TestServer), generous enough
// for -race on two busy cores.
const (
	TestHeartbeat = 250 * time.Millisecond
	TestElection  = 250 * time.Millisecond
	TestLease     = 150 * time.Millisecond
	TestCommit    = 20 * time.Millisecond
	TestWait      = 15 * time.Second // deadline for polled conditions
)

func TestLogger() *slog.Logger {
	if os.Getenv("SLOTRAFT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestCluster is an in-process static cluster of nodes on loopback ports.
type TestCluster struct {
	t        testing.TB
	Faults   *transport.Faults // link faults between the nodes
	Peers    []Peer
	Dirs     []string
	Nodes    []*Node // nil while stopped
	replicas int
	// LogStore is the nodes' Config.LogStore from their next (re)start.
	LogStore string
	secret   transport.Secret // the nodes' Config.ClusterSecret
	groups   int              // slot groups at bootstrap
}

func NewTestCluster(t testing.TB, size, replicas int) *TestCluster {
	t.Helper()
	return newTestClusterLog(t, size, replicas, "")
}

// NewTestClusterGroups is NewTestCluster with groups slot groups instead
// of 3 (1: the Sentinel shape, every slot in one group).
func NewTestClusterGroups(t testing.TB, size, replicas, groups int) *TestCluster {
	t.Helper()
	return newTestCluster(t, size, replicas, groups, "", nil)
}

// newTestClusterLog is NewTestCluster whose nodes start with LogStore logStore.
func newTestClusterLog(t testing.TB, size, replicas int, logStore string) *TestCluster {
	t.Helper()
	return newTestClusterWith(t, size, replicas, logStore, nil)
}

// newTestClusterWith is NewTestCluster whose nodes start with LogStore
// logStore and cluster secret secret (nil: none).
func newTestClusterWith(t testing.TB, size, replicas int, logStore string, secret transport.Secret) *TestCluster {
	t.Helper()
	return newTestCluster(t, size, replicas, 3, logStore, secret)
}

func newTestCluster(t testing.TB, size, replicas, groups int, logStore string, secret transport.Secret) *TestCluster {
	t.Helper()
	c := &TestCluster{t: t, Faults: transport.NewFaults(), Nodes: make([]*Node, size), replicas: replicas,
		LogStore: logStore, secret: secret, groups: groups}
	lns := make([]net.Listener, size)
	for i := range size {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.Peers = append(c.Peers, Peer{
			ID:         fmt.Sprintf("n%d", i+1),
			ClientAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i),
			BusAddr:    ln.Addr().String(),
		})
		c.Dirs = append(c.Dirs, t.TempDir())
	}
	for i := range size {
		c.startWith(i, lns[i])
	}
	t.Cleanup(c.CloseAll)
	for i := range size {
		c.WaitMap(i)
	}
	return c
}

// WaitMap waits until node i follows the cluster map.
func (c *TestCluster) WaitMap(i int) {
	c.t.Helper()
	PollUntil(c.t, fmt.Sprintf("node %d to know the cluster map", i), func() bool {
		return c.Nodes[i].ready.Load()
	})
}

// grp is node n's object for group gid; nil while n does not know the map.
func grp(n *Node, gid uint32) *Group {
	g, _ := n.Group(gid)
	return g
}

func (c *TestCluster) config(i int, ln net.Listener) Config {
	return Config{
		ID: c.Peers[i].ID, DataDir: c.Dirs[i], Peers: c.Peers, Groups: c.groups, Replicas: c.replicas, LogStore: c.LogStore,
		Logger: TestLogger(), BusListener: ln, Faults: c.Faults, ClusterSecret: c.secret,
		RaftHeartbeat: TestHeartbeat, RaftElection: TestElection, RaftLeaderLease: TestLease, RaftCommit: TestCommit,
		SnapshotThreshold: 64, SnapshotInterval: 500 * time.Millisecond, TrailingLogs: 32,
	}
}

func (c *TestCluster) startWith(i int, ln net.Listener) {
	c.t.Helper()
	n, err := NewNode(c.config(i, ln))
	if err != nil {
		c.t.Fatalf("node %d: %v", i, err)
	}
	c.Nodes[i] = n
}

// Stop closes node i; restart reopens it on the same data dir and address.
func (c *TestCluster) Stop(i int) {
	c.t.Helper()
	if err := c.Nodes[i].Close(); err != nil {
		c.t.Errorf("close node %d: %v", i, err)
	}
	c.Nodes[i] = nil
}

func (c *TestCluster) Restart(i int) {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.Peers[i].BusAddr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.startWith(i, ln)
	c.WaitMap(i)
}

func (c *TestCluster) CloseAll() {
	for i, n := range c.Nodes {
		if n != nil {
			c.Stop(i)
		}
	}
}

func (c *TestCluster) Index(id string) int {
	return slices.IndexFunc(c.Peers, func(p Peer) bool { return p.ID == id })
}

// Leader polls until exactly one node among those given (all running nodes
// if none) leads group gid, and returns its index.
func (c *TestCluster) Leader(gid uint32, among ...int) int {
	c.t.Helper()
	if len(among) == 0 {
		for i := range c.Nodes {
			among = append(among, i)
		}
	}
	found := -1
	PollUntil(c.t, "a single leader of group "+fmt.Sprint(gid), func() bool {
		found = -1
		for _, i := range among {
			n := c.Nodes[i]
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

func PollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(TestWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// KeyIn returns a key whose slot belongs to group gid.
func KeyIn(gid uint32, groups int, prefix string) string {
	r := slots.Split(groups)[gid-1]
	for i := 0; ; i++ {
		k := fmt.Sprintf("%s%d", prefix, i)
		if r.Contains(slots.Of([]byte(k))) {
			return k
		}
	}
}

func Argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// Write proposes one command to group gid through its current leader,
// retrying while the leader moves (ErrNotLeader is never proposed).
func (c *TestCluster) Write(gid uint32, args ...string) resp.Value {
	c.t.Helper()
	return c.WriteAmong(gid, nil, args...)
}

// Set writes key=value to group gid, retrying while the leader moves —
// also after an outcome-unknown error, since SET may be applied twice.
func (c *TestCluster) Set(gid uint32, key, value string) {
	c.t.Helper()
	c.propose(gid, nil, true, "SET", key, value)
}

// WriteAmong is write with the leader looked for among the given nodes.
func (c *TestCluster) WriteAmong(gid uint32, among []int, args ...string) resp.Value {
	c.t.Helper()
	return c.propose(gid, among, false, args...)
}

// propose proposes args to gid's leader among the given nodes, retrying
// while the leader moves (and after an unknown outcome if idempotent).
func (c *TestCluster) propose(gid uint32, among []int, idempotent bool, args ...string) resp.Value {
	c.t.Helper()
	var v resp.Value
	PollUntil(c.t, "write "+args[0], func() bool {
		i := c.Leader(gid, among...)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		vs, err := grp(c.Nodes[i], gid).Propose(ctx, [][][]byte{Argv(args...)})
		if errors.Is(err, ErrNotLeader) || (idempotent && errors.Is(err, resp.ErrOutcomeUnknown)) {
			return false
		}
		if err != nil {
			c.t.Fatalf("propose %q: %v", args, err)
		}
		v = vs[0].Reply
		return true
	})
	return v
}

// ReadOn runs a read command linearizably on node i.
func ReadOn(n *Node, gid uint32, args ...string) (resp.Value, error) {
	var v resp.Value
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c := fsm.Lookup([]byte(args[0]))
	err := grp(n, gid).Read(ctx, func(st fsm.Reader) {
		v = st.Read(max(time.Now().UnixMilli(), st.LastNow()), c, Argv(args...)).Reply
	})
	return v, err
}

// StaleGet reads key from node n's replica of gid without any check.
func StaleGet(n *Node, gid uint32, key string) (string, bool) {
	var o *store.Object
	_ = grp(n, gid).ReadStale(func(st fsm.Reader) {
		st.View(func(s store.Reader) { o = s.Get([]byte(key), time.Now().UnixMilli()) })
	})
	if o == nil {
		return "", false
	}
	return string(o.Str), true
}

func ValueText(v resp.Value) string {
	if v.Kind != resp.KindBulk && v.Kind != resp.KindStatus {
		return fmt.Sprintf("<kind %d %q %d>", v.Kind, v.Str, v.Int)
	}
	return string(v.Str)
}

// CheckNoLeaks fails if goroutines started since before do not end soon.
func CheckNoLeaks(t testing.TB, before int) {
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

func KeySlot(k string) uint16 { return slots.Of([]byte(k)) }

// LeadersSpread waits until each group is led by its preferred replica.
func (c *TestCluster) LeadersSpread() {
	c.t.Helper()
	PollUntil(c.t, "every group led by its preferred leader", func() bool {
		for gid := uint32(1); gid <= uint32(c.groups); gid++ {
			g0 := grp(c.Nodes[0], gid)
			if g0 == nil {
				return false
			}
			want := c.Nodes[c.Index(g0.layout().replicas[0].ID)]
			if want == nil || !grp(want, gid).IsLeader() {
				return false
			}
		}
		return true
	})
}
