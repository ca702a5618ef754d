package transport

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// listFSM records what it applies.
type listFSM struct {
	mu      sync.Mutex
	entries []string
}

func (f *listFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, string(l.Data))
	return len(f.entries)
}

func (f *listFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return listSnapshot(append([]string(nil), f.entries...)), nil
}

func (f *listFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = nil
	if len(b) > 0 {
		f.entries = strings.Split(string(b), "\n")
	}
	return nil
}

func (f *listFSM) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.entries...)
}

type listSnapshot []string

func (s listSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write([]byte(strings.Join(s, "\n"))); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (listSnapshot) Release() {}

// raftNode is one raft of a test cluster and what it runs on.
type raftNode struct {
	id   raft.ServerID
	addr raft.ServerAddress
	r    *raft.Raft
	fsm  *listFSM
}

// logWatch passes a raft's warnings to the test log and notes whether
// raft ever started pipelined replication.
type logWatch struct {
	w          *testWriter
	pipelining atomic.Bool
}

func (lw *logWatch) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("pipelining replication")) {
		lw.pipelining.Store(true)
	}
	if bytes.Contains(b, []byte("[WARN]")) || bytes.Contains(b, []byte("[ERROR]")) {
		return lw.w.Write(b)
	}
	return len(b), nil
}

// startRaft starts a raft node named id whose transport is a RaftTransport
// ("new") or raft.NetworkTransport without pipelining ("msgpack", as
// earlier releases ran it).
func startRaft(t *testing.T, id, kind string, lw *logWatch) *raftNode {
	t.Helper()
	m := newMux(t, id, nil, nil)
	var tr raft.Transport
	if kind == "new" {
		tr = raftTransport(t, m)
	} else {
		tr = netTransport(t, m, 1)
	}
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(id)
	c.HeartbeatTimeout, c.ElectionTimeout = 300*time.Millisecond, 300*time.Millisecond
	c.LeaderLeaseTimeout, c.CommitTimeout = 150*time.Millisecond, 5*time.Millisecond
	c.TrailingLogs, c.SnapshotThreshold, c.SnapshotInterval = 50, 1<<30, time.Hour
	c.Logger = hclog.New(&hclog.LoggerOptions{Name: id, Level: hclog.Info, Output: lw})
	n := &raftNode{id: c.LocalID, addr: tr.LocalAddr(), fsm: &listFSM{}}
	store := raft.NewInmemStore()
	r, err := raft.NewRaft(c, n.fsm, store, store, raft.NewInmemSnapshotStore(), tr)
	if err != nil {
		t.Fatal(err)
	}
	n.r = r
	t.Cleanup(func() { _ = r.Shutdown().Error() })
	return n
}

func startCluster(t *testing.T, kinds []string, lw *logWatch) []*raftNode {
	nodes := make([]*raftNode, len(kinds))
	var servers []raft.Server
	for i, kind := range kinds {
		nodes[i] = startRaft(t, fmt.Sprintf("n%d", i), kind, lw)
		servers = append(servers, raft.Server{ID: nodes[i].id, Address: nodes[i].addr})
	}
	if err := nodes[0].r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func leaderOf(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	var leader *raftNode
	waitFor(t, 10*time.Second, "a leader", func() bool {
		for _, n := range nodes {
			if n.r.State() == raft.Leader {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

// applyAll proposes n entries named prefix-i on leader, all in flight at
// once, and waits for their commit.
func applyAll(t *testing.T, leader *raftNode, prefix string, n int) {
	t.Helper()
	futures := make([]raft.ApplyFuture, n)
	for i := range futures {
		futures[i] = leader.r.Apply([]byte(fmt.Sprintf("%s-%d", prefix, i)), 10*time.Second)
	}
	for i, f := range futures {
		if err := f.Error(); err != nil {
			t.Fatalf("apply %s-%d on %s: %v", prefix, i, leader.id, err)
		}
	}
}

// converged waits until every node has applied want entries, the same ones.
func converged(t *testing.T, nodes []*raftNode, want int) {
	t.Helper()
	waitFor(t, 20*time.Second, fmt.Sprintf("%d entries everywhere", want), func() bool {
		for _, n := range nodes {
			if len(n.fsm.list()) < want {
				return false
			}
		}
		return true
	})
	first := nodes[0].fsm.list()
	for _, n := range nodes[1:] {
		if got := n.fsm.list(); strings.Join(got, ",") != strings.Join(first, ",") {
			t.Fatalf("%s applied a different log than %s", n.id, nodes[0].id)
		}
	}
}

// TestRaftOverNewTransport: three rafts replicate with pipelining on; a
// fourth, added after a snapshot compacted the log, catches up by
// InstallSnapshot; the leader shuts down promptly while writes stream.
func TestRaftOverNewTransport(t *testing.T) {
	lw := &logWatch{w: &testWriter{t: t}}
	t.Cleanup(func() { lw.w.mu.Lock(); lw.w.done = true; lw.w.mu.Unlock() })
	nodes := startCluster(t, []string{"new", "new", "new"}, lw)
	leader := leaderOf(t, nodes)
	for round := range 5 {
		applyAll(t, leader, fmt.Sprint("r", round), 400)
	}
	converged(t, nodes, 2000)
	if !lw.pipelining.Load() {
		t.Fatal("raft never pipelined")
	}

	if err := leader.r.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	n3 := startRaft(t, "n3", "new", lw)
	if err := leader.r.AddVoter(n3.id, n3.addr, 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, n3)
	applyAll(t, leader, "after-snapshot", 100)
	converged(t, nodes, 2100)

	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				leader.r.Apply([]byte(fmt.Sprint("late-", i)), time.Second)
			}
		}
	}()
	defer close(stop)
	done := make(chan error, 1)
	go func() { done <- leader.r.Shutdown().Error() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's Shutdown hangs")
	}
}

// TestRaftMixedReleases is a rolling upgrade caught in the middle: one node
// still runs raft.NetworkTransport as earlier releases did, two run the new
// transport. The group commits with the leader on either kind.
func TestRaftMixedReleases(t *testing.T) {
	lw := &logWatch{w: &testWriter{t: t}}
	t.Cleanup(func() { lw.w.mu.Lock(); lw.w.done = true; lw.w.mu.Unlock() })
	nodes := startCluster(t, []string{"msgpack", "new", "new"}, lw)
	total := 0
	for _, target := range []*raftNode{nodes[0], nodes[1], nodes[0], nodes[2]} {
		leader := leaderOf(t, nodes)
		if leader != target {
			if err := leader.r.LeadershipTransferToServer(target.id, target.addr).Error(); err != nil {
				t.Fatalf("transfer from %s to %s: %v", leader.id, target.id, err)
			}
			waitFor(t, 10*time.Second, string(target.id)+" leading", func() bool { return target.r.State() == raft.Leader })
		}
		applyAll(t, target, "on-"+string(target.id), 300)
		total += 300
		converged(t, nodes, total)
	}
}
