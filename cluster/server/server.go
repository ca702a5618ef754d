package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// Server serves Redis clients for a Node: it reads commands with redcon,
// routes them to the groups this node leads (MOVED otherwise) and runs the
// node commands (CLUSTER, CLIENT, COMMAND, INFO…).
type Server struct {
	n       *cluster.Node
	log     *slog.Logger
	table   *commandTable
	started time.Time
	runID   string

	ctx    context.Context // cancelled by Close: ends in-flight proposals and reads
	cancel context.CancelFunc

	mu      sync.Mutex
	rc      *redcon.Server
	clients map[uint64]*client
	closed  bool
	serving chan struct{} // closed when Serve returns
	conns   sync.WaitGroup

	nextID atomic.Uint64
	stats  serverStats

	watches watchTable // connections readable ahead while blocked (blocking.go)
	ps      *pubsub    // subscriptions, fan-out, output limits (pubsub.go)
}

// serverStats are the counters INFO reports.
type serverStats struct {
	connections atomic.Int64
	commands    atomic.Int64
	netIn       atomic.Int64
	netOut      atomic.Int64
	errors      atomic.Int64
	peakMemory  atomic.Uint64
}

// requestTimeout bounds how long one command waits for its group.
const requestTimeout = 10 * time.Second

// NewServer makes a client server for n. Call Serve to accept clients.
func New(n *cluster.Node, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var id [20]byte
	_, _ = rand.Read(id[:])
	s := &Server{
		n: n, log: logger.With("component", "server"), table: commands(),
		started: time.Now(), runID: hex.EncodeToString(id[:]),
		ctx: ctx, cancel: cancel, clients: map[uint64]*client{},
	}
	s.ps = newPubsub(s)
	// Messages published on other nodes, and this node's keyspace events,
	// are delivered to this server's subscribers.
	n.HandleForwarded(s.publishForwarded)
	n.HandleKeyspaceEvents(s.publishEvents) // notify_publish.go
	return s
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("cluster: server closed")

// Serve accepts clients on ln until Close. The listener is wrapped with
// resp.GuardListener, which enforces the protocol limits.
func (s *Server) Serve(ln net.Listener) error {
	rc := redcon.NewServerNetwork(ln.Addr().Network(), ln.Addr().String(), s.handle, s.accept, s.closedConn)
	rc.AcceptError = func(err error) { s.log.Warn("accept", "err", err) }
	s.mu.Lock()
	if s.closed || s.serving != nil {
		s.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	s.rc = rc
	s.serving = make(chan struct{})
	done := s.serving
	s.mu.Unlock()
	defer close(done)
	return rc.Serve(resp.GuardListener(watchListener{Listener: ln, t: &s.watches}))
}

// Close stops accepting, closes every client connection, cancels in-flight
// requests and waits for the connection goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	rc, serving := s.rc, s.serving
	for _, c := range s.clients {
		if nc := c.conn.NetConn(); nc != nil {
			nc.Close()
		}
	}
	s.mu.Unlock()
	s.cancel()
	if rc != nil {
		_ = rc.Close()
		<-serving
	}
	s.conns.Wait()
	s.ps.close()
	return nil
}

func (s *Server) accept(rc redcon.Conn) bool {
	watch := s.watches.take(rc.RemoteAddr())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	c := newClient(s.nextID.Add(1), rc)
	c.watch = watch
	rc.SetContext(c)
	s.clients[c.id] = c
	s.conns.Add(1)
	s.stats.connections.Add(1)
	return true
}

func (s *Server) closedConn(rc redcon.Conn, err error) {
	c, _ := rc.Context().(*client)
	if c == nil {
		return
	}
	s.mu.Lock()
	delete(s.clients, c.id)
	s.mu.Unlock()
	s.forgetClient(c) // its subscriptions and output writer (pubsub.go)
	s.conns.Done()
}

// handle receives the first command of a pipeline read from the socket and
// takes the rest of that read with it, so consecutive writes for one group
// can be proposed as one batch.
func (s *Server) handle(rc redcon.Conn, cmd redcon.Command) {
	// Commands recover from their own panics (onPanic); one anywhere else
	// (routing, queuing) leaves the pipeline's replies in doubt, so the
	// connection is closed, never the process.
	defer s.onPanic("(connection)", func(resp.Value) { rc.Close() })
	c := rc.Context().(*client)
	cmds := []redcon.Command{cmd}
	if len(rc.PeekPipeline()) > 0 {
		cmds = append(cmds, rc.ReadPipeline()...)
	}
	s.serve(c, cmds)
	if c.closing {
		c.drainOutput() // a subscriber's queued replies go out first (pubsub_output.go)
		rc.Close()
	}
}
