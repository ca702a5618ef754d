package transport

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// appendBudget is how many bytes of entries one AppendEntries carries at
// most (always at least one entry): the sender trims a bigger batch and
// raft sends the rest next, as it does beyond MaxAppendEntries. It keeps
// a frame, and what the follower buffers for it, far below maxFrameSize.
const appendBudget = 64 << 20

// RaftTransport is the raft.Transport of one group on a Mux.
//
// Towards each peer it keeps a small pool of connections for plain RPCs,
// one connection for heartbeats alone (so a heartbeat never waits behind a
// batch of entries or a snapshot on the same socket), one connection per
// AppendEntries pipeline and a fresh one per InstallSnapshot. Every read
// and write has a deadline. It also accepts the msgpack protocol of
// raft.NetworkTransport, and falls back to it towards a peer that does not
// speak this one (see raft_legacy.go), so releases can be mixed.
type RaftTransport struct {
	stream   *Stream
	log      hclog.Logger
	timeout  time.Duration
	maxPool  int
	consume  chan raft.RPC
	shutdown chan struct{}
	once     sync.Once

	hbMu sync.Mutex
	hbFn func(raft.RPC)

	mu        sync.Mutex
	peers     map[raft.ServerAddress]*peerConns
	pipelines map[*raftPipeline]struct{}

	legacy *legacy
}

var (
	_ raft.Transport   = (*RaftTransport)(nil)
	_ raft.WithClose   = (*RaftTransport)(nil)
	_ raft.WithPreVote = (*RaftTransport)(nil)
)

// peerConns are the idle connections to one peer.
type peerConns struct {
	mu   sync.Mutex
	idle []*raftConn
	// hbMu is held for a whole heartbeat: raft sends one at a time per peer.
	hbMu sync.Mutex
	hb   *raftConn
}

func newRaftTransport(s *Stream, o TransportOptions) *RaftTransport {
	t := &RaftTransport{
		stream:    s,
		log:       o.Logger,
		timeout:   o.Timeout,
		maxPool:   o.MaxPool,
		consume:   make(chan raft.RPC),
		shutdown:  make(chan struct{}),
		peers:     make(map[raft.ServerAddress]*peerConns),
		pipelines: make(map[*raftPipeline]struct{}),
	}
	t.legacy = newLegacy(t, o)
	go t.acceptLoop()
	return t
}

// Consumer implements raft.Transport.
func (t *RaftTransport) Consumer() <-chan raft.RPC { return t.consume }

// LocalAddr implements raft.Transport.
func (t *RaftTransport) LocalAddr() raft.ServerAddress {
	return raft.ServerAddress(t.stream.Addr().String())
}

// EncodePeer implements raft.Transport.
func (t *RaftTransport) EncodePeer(_ raft.ServerID, addr raft.ServerAddress) []byte {
	return []byte(addr)
}

// DecodePeer implements raft.Transport.
func (t *RaftTransport) DecodePeer(b []byte) raft.ServerAddress { return raft.ServerAddress(b) }

// SetHeartbeatHandler implements raft.Transport: heartbeats go to fn
// directly instead of queueing on the consumer behind disk-bound RPCs.
func (t *RaftTransport) SetHeartbeatHandler(fn func(raft.RPC)) {
	t.hbMu.Lock()
	defer t.hbMu.Unlock()
	t.hbFn = fn
}

// Close implements raft.WithClose. It never blocks: it closes every
// connection of the group, which unblocks whatever reads or writes them,
// and every wait in the transport also selects on shutdown.
func (t *RaftTransport) Close() error {
	t.once.Do(func() {
		close(t.shutdown)
		t.legacy.close()
		t.mu.Lock()
		pipes := make([]*raftPipeline, 0, len(t.pipelines))
		for p := range t.pipelines {
			pipes = append(pipes, p)
		}
		t.mu.Unlock()
		for _, p := range pipes {
			_ = p.Close()
		}
		_ = t.stream.Close()
	})
	return nil
}

func (t *RaftTransport) closed() bool {
	select {
	case <-t.shutdown:
		return true
	default:
		return false
	}
}

// AppendEntries implements raft.Transport.
func (t *RaftTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if isHeartbeat(args) {
		return t.heartbeat(id, target, args, resp)
	}
	fitBatch(args)
	return t.call(id, target, args, resp)
}

// RequestVote implements raft.Transport.
func (t *RaftTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.call(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t *RaftTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.call(id, target, args, resp)
}

// TimeoutNow implements raft.Transport.
func (t *RaftTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.call(id, target, args, resp)
}

// InstallSnapshot implements raft.Transport: the request, then the
// snapshot's bytes, on a connection of its own, under a deadline scaled to
// the snapshot's size.
func (t *RaftTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	if t.closed() {
		return raft.ErrTransportShutdown
	}
	c, err := t.dial(target)
	if errors.Is(err, errLegacyPeer) {
		return t.legacy.nt.InstallSnapshot(id, target, args, resp, data)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	timeout := snapshotTimeout(t.timeout, args.Size)
	_ = c.SetDeadline(time.Now().Add(timeout))
	kind, err := c.writeRequest(args, timeout)
	if err != nil {
		return fmt.Errorf("install snapshot on %s: %w", target, err)
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := io.Copy(c.Conn, data); err != nil {
		return fmt.Errorf("install snapshot on %s: %w", target, err)
	}
	remote, err := c.readResponse(kind, resp, timeout)
	if err != nil && !remote {
		err = fmt.Errorf("install snapshot on %s: %w", target, err)
	}
	return err
}

// snapshotTimeout: timeout per snapshotTimeoutScale bytes, at least timeout.
func snapshotTimeout(timeout time.Duration, size int64) time.Duration {
	return max(timeout, timeout*time.Duration(size/snapshotTimeoutScale))
}

// isHeartbeat is raft.NetworkTransport's test: raft's heartbeat goroutine
// sends a term and its address and nothing else.
func isHeartbeat(r *raft.AppendEntriesRequest) bool {
	addr := r.Addr
	if len(addr) == 0 {
		//lint:ignore SA1019 raft still fills Leader, and reads it when Addr is empty.
		addr = r.Leader
	}
	return r.Term != 0 && addr != nil && r.PrevLogEntry == 0 && r.PrevLogTerm == 0 &&
		len(r.Entries) == 0 && r.LeaderCommitIndex == 0
}

// fitBatch trims req's entries to appendBudget bytes, keeping at least one.
func fitBatch(req *raft.AppendEntriesRequest) {
	size := 0
	for i, l := range req.Entries {
		if size += encodedLogSize(l); size > appendBudget && i > 0 {
			req.Entries = req.Entries[:i]
			return
		}
	}
}

// call sends req to target on a pooled connection.
func (t *RaftTransport) call(id raft.ServerID, target raft.ServerAddress, req, resp any) error {
	pc := t.peer(target)
	err := t.exchange(target, req, resp, func() *raftConn { return pc.take() }, func(c *raftConn) {
		if !pc.put(c, t.maxPool) {
			_ = c.Close()
		}
	})
	if errors.Is(err, errLegacyPeer) {
		return t.legacy.call(id, target, req, resp)
	}
	return err
}

// heartbeat sends req on target's heartbeat connection.
func (t *RaftTransport) heartbeat(id raft.ServerID, target raft.ServerAddress, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	pc := t.peer(target)
	pc.hbMu.Lock()
	err := t.exchange(target, req, resp, func() *raftConn {
		c := pc.hb
		pc.hb = nil
		if c != nil && time.Since(c.used) >= rpcPoolIdle {
			_ = c.Close()
			return nil
		}
		return c
	}, func(c *raftConn) {
		c.used = time.Now()
		pc.hb = c
	})
	pc.hbMu.Unlock()
	if errors.Is(err, errLegacyPeer) {
		return t.legacy.call(id, target, req, resp)
	}
	return err
}

// exchange does one round trip on the connection take gives (or a new one)
// and hands it to put if it is still in step. A pooled connection the peer
// has closed (it restarted, or dropped it as idle) is replaced once: raft's
// RPCs may be repeated, and otherwise the first heartbeat after a peer's
// restart would fail and back off for nothing.
func (t *RaftTransport) exchange(target raft.ServerAddress, req, resp any, take func() *raftConn, put func(*raftConn)) error {
	for attempt := 0; ; attempt++ {
		if t.closed() {
			return raft.ErrTransportShutdown
		}
		c := take()
		pooled := c != nil
		if !pooled {
			var err error
			if c, err = t.dial(target); err != nil {
				return err
			}
		}
		remote, err := c.roundTrip(req, resp, t.timeout)
		if err == nil || remote {
			put(c)
			return err
		}
		_ = c.Close()
		if !pooled || attempt > 0 || !peerHungUp(err) {
			return fmt.Errorf("raft rpc to %s: %w", target, err)
		}
	}
}

func (t *RaftTransport) peer(target raft.ServerAddress) *peerConns {
	t.mu.Lock()
	defer t.mu.Unlock()
	pc := t.peers[target]
	if pc == nil {
		pc = &peerConns{}
		t.peers[target] = pc
	}
	return pc
}

// take pops the most recently used idle connection; older ones idle for
// rpcPoolIdle are closed (the acceptor drops them after rpcIdle).
func (pc *peerConns) take() *raftConn {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	for len(pc.idle) > 0 {
		c := pc.idle[len(pc.idle)-1]
		pc.idle = pc.idle[:len(pc.idle)-1]
		if time.Since(c.used) < rpcPoolIdle {
			return c
		}
		_ = c.Close()
	}
	return nil
}

func (pc *peerConns) put(c *raftConn, maxPool int) bool {
	c.used = time.Now()
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if len(pc.idle) >= maxPool {
		return false
	}
	pc.idle = append(pc.idle, c)
	return true
}

// dial opens a connection to target in this protocol; errLegacyPeer if
// target is known (or now found) to speak only the msgpack one.
func (t *RaftTransport) dial(target raft.ServerAddress) (*raftConn, error) {
	if t.legacy.speaks(target) {
		return nil, errLegacyPeer
	}
	c, err := t.stream.Dial(target, t.timeout)
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", target, err)
	}
	if err := clientHandshake(c, t.timeout); err != nil {
		_ = c.Close()
		if errors.Is(err, errLegacyPeer) {
			t.legacy.remember(target)
			return nil, err
		}
		return nil, fmt.Errorf("raft dial %s: %w", target, err)
	}
	return newRaftConn(c), nil
}
