package transport

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// legacyMemory is how long a peer that hung up on our protocol byte is
// spoken to in msgpack before we try ours again: it may have been
// upgraded since. Each retry costs the old node one error in its log.
const legacyMemory = 30 * time.Second

// legacy lets a RaftTransport work with nodes of earlier releases, which
// speak raft.NetworkTransport's msgpack protocol on the same group stream:
// an embedded NetworkTransport serves the msgpack connections the
// acceptor hands it (its RPCs join ours on the consumer channel) and
// carries our RPCs to peers found to speak only msgpack.
type legacy struct {
	t     *RaftTransport
	nt    *raft.NetworkTransport
	ls    *legacyStream
	mu    sync.Mutex
	until map[raft.ServerAddress]time.Time
}

func newLegacy(t *RaftTransport, o TransportOptions) *legacy {
	ls := &legacyStream{s: t.stream, accept: make(chan net.Conn), done: make(chan struct{})}
	o.Logger = o.Logger.Named("msgpack")
	l := &legacy{t: t, ls: ls, nt: newNetworkTransport(ls, o), until: make(map[raft.ServerAddress]time.Time)}
	l.nt.SetHeartbeatHandler(func(rpc raft.RPC) { _ = t.dispatch(rpc, true) })
	go l.forward()
	return l
}

// newNetworkTransport is raft's msgpack transport as earlier releases ran
// it: without pipelining, which can deadlock a leader's Shutdown in
// hashicorp/raft (see raft_pipeline.go).
func newNetworkTransport(s raft.StreamLayer, o TransportOptions) *raft.NetworkTransport {
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: s, MaxPool: o.MaxPool, Timeout: o.Timeout, Logger: o.Logger, MaxRPCsInFlight: 1,
	})
}

// forward moves the embedded transport's RPCs to ours.
func (l *legacy) forward() {
	for {
		select {
		case rpc := <-l.nt.Consumer():
			select {
			case l.t.consume <- rpc:
			case <-l.t.shutdown:
				return
			}
		case <-l.t.shutdown:
			return
		}
	}
}

// handOff gives an accepted msgpack connection to the embedded transport.
func (l *legacy) handOff(c net.Conn) {
	select {
	case l.ls.accept <- c:
	case <-l.ls.done:
		_ = c.Close()
	case <-l.t.shutdown:
		_ = c.Close()
	}
}

// speaks reports whether target is to be spoken to in msgpack for now.
func (l *legacy) speaks(target raft.ServerAddress) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	until, ok := l.until[target]
	if ok && time.Now().After(until) {
		delete(l.until, target)
		return false
	}
	return ok
}

func (l *legacy) remember(target raft.ServerAddress) {
	l.mu.Lock()
	l.until[target] = time.Now().Add(legacyMemory)
	l.mu.Unlock()
	l.t.log.Info("peer hung up on the raft protocol byte: speaking msgpack to it for a while",
		"peer", target, "for", legacyMemory)
}

// call sends req to target with the embedded NetworkTransport.
func (l *legacy) call(id raft.ServerID, target raft.ServerAddress, req, resp any) error {
	switch r := req.(type) {
	case *raft.AppendEntriesRequest:
		return l.nt.AppendEntries(id, target, r, resp.(*raft.AppendEntriesResponse))
	case *raft.RequestVoteRequest:
		return l.nt.RequestVote(id, target, r, resp.(*raft.RequestVoteResponse))
	case *raft.RequestPreVoteRequest:
		return l.nt.RequestPreVote(id, target, r, resp.(*raft.RequestPreVoteResponse))
	case *raft.TimeoutNowRequest:
		return l.nt.TimeoutNow(id, target, r, resp.(*raft.TimeoutNowResponse))
	}
	return fmt.Errorf("transport: no msgpack call for %T", req)
}

func (l *legacy) close() { _ = l.nt.Close() }

// legacyStream is the embedded NetworkTransport's raft.StreamLayer: it
// accepts what the RaftTransport hands it and dials through the group's
// stream without a protocol byte, which is the msgpack protocol.
type legacyStream struct {
	s      *Stream
	accept chan net.Conn
	done   chan struct{}
	once   sync.Once
}

var _ raft.StreamLayer = (*legacyStream)(nil)

func (ls *legacyStream) Accept() (net.Conn, error) {
	select {
	case c := <-ls.accept:
		return c, nil
	case <-ls.done:
		return nil, ErrClosed
	}
}

// Close stops Accept only: the RaftTransport owns the group's stream.
func (ls *legacyStream) Close() error {
	ls.once.Do(func() { close(ls.done) })
	return nil
}

func (ls *legacyStream) Addr() net.Addr { return ls.s.Addr() }

func (ls *legacyStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return ls.s.Dial(addr, timeout)
}

// peekedConn gives back the first byte the acceptor read to tell the
// protocols apart. Only one goroutine reads it.
type peekedConn struct {
	net.Conn
	first byte
	given bool
}

func (c *peekedConn) Read(b []byte) (int, error) {
	if c.given || len(b) == 0 {
		return c.Conn.Read(b)
	}
	c.given = true
	b[0] = c.first
	return 1, nil
}
