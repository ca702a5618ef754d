package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// Options configure a Proxy; zero values take the defaults.
type Options struct {
	// Commands is the one command table (server.Commands()): keys, arity
	// and flags of every command. Required.
	Commands *resp.Table
	Logger   *slog.Logger
	// Admit is asked about every new client before it is served: false
	// means it was refused, answered and closed (the server's protected
	// mode). Nil admits every client.
	Admit func(net.Conn) bool
	// Limits gives maxclients and the request limits of a new client
	// (the server's CONFIG); nil: 10000 clients and Redis's defaults.
	Limits func() (maxClients int64, limits resp.Limits)
	// RetryFor bounds how long a command that did not run is sent again
	// while its slot has no leader or moves (default 10 s).
	RetryFor time.Duration
	// DialTimeout bounds a connection to a node (default 3 s).
	DialTimeout time.Duration
}

// Proxy serves clients that do not speak Redis Cluster on a listener of
// its own: see doc.go.
type Proxy struct {
	n   *cluster.Node
	o   Options
	log *slog.Logger
	ctx context.Context
	// cancel ends every session.
	cancel context.CancelFunc

	mu       sync.Mutex
	ln       net.Listener
	sessions map[*session]struct{}
	closed   bool
	serving  chan struct{} // closed when Serve returns
	wg       sync.WaitGroup

	backends  atomic.Int64 // open connections to nodes, every session's
	redirects atomic.Int64 // redirects and leaderless waits followed
}

// Stats are a proxy's counts now.
type Stats struct {
	Clients  int // client connections served
	Backends int // their connections to nodes
	// Redirects counts the commands sent again: after -MOVED, -ASK,
	// -TRYAGAIN, -CLUSTERDOWN, or while their slot had no leader known.
	Redirects int64
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("proxy: closed")

// New makes a proxy that routes by n's cluster map.
func New(n *cluster.Node, o Options) *Proxy {
	if o.Commands == nil {
		panic("proxy: Options.Commands is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RetryFor <= 0 {
		o.RetryFor = 10 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.Limits == nil {
		o.Limits = func() (int64, resp.Limits) { return 10000, resp.Limits{} }
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{n: n, o: o, log: o.Logger.With("component", "proxy"), ctx: ctx, cancel: cancel,
		sessions: map[*session]struct{}{}}
}

// Serve accepts clients on ln until Close, then returns nil.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed || p.serving != nil {
		p.mu.Unlock()
		ln.Close()
		return ErrClosed
	}
	p.ln = ln
	p.serving = make(chan struct{})
	done := p.serving
	p.mu.Unlock()
	defer close(done)
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if p.isClosed() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.log.Warn("accept", "err", err, "retry_in", backoff)
			time.Sleep(backoff) // a pause before the next Accept, not a wait for a condition
			continue
		}
		backoff = 0
		if s := p.accept(nc); s != nil {
			go func() {
				defer p.wg.Done()
				s.run()
				p.mu.Lock()
				delete(p.sessions, s)
				p.mu.Unlock()
			}()
		}
	}
}

// accept makes a session for nc, or refuses it (protected mode,
// maxclients, closing).
func (p *Proxy) accept(nc net.Conn) *session {
	if p.o.Admit != nil && !p.o.Admit(nc) {
		return nil
	}
	maxClients, limits := p.o.Limits()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = nc.Close()
		return nil
	}
	if int64(len(p.sessions)) >= maxClients {
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write([]byte("-ERR max number of clients reached\r\n"))
		_ = nc.Close()
		return nil
	}
	s := newSession(p, nc, limits)
	p.sessions[s] = struct{}{}
	p.wg.Add(1)
	return s
}

func (p *Proxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close stops accepting, ends every session (closing its client and node
// connections) and waits for their goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	ln, serving := p.ln, p.serving
	p.mu.Unlock()
	p.cancel()
	if ln != nil {
		_ = ln.Close()
		<-serving
	}
	p.mu.Lock()
	for s := range p.sessions {
		_ = s.nc.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// Stats counts the clients and their node connections now.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Clients: len(p.sessions), Backends: int(p.backends.Load()), Redirects: p.redirects.Load()}
}

// leaderAddr is the client address of the leader of slot's group, as this
// node knows it.
func (p *Proxy) leaderAddr(slot uint16) (string, bool) {
	g := p.n.GroupOf(slot)
	if g == nil {
		return "", false
	}
	leader, ok := p.n.Leader(g)
	if !ok || leader.ClientAddr == "" {
		return "", false
	}
	return leader.ClientAddr, true
}

// homeAddr is this node's client address: where keyless commands go.
func (p *Proxy) homeAddr() string { return p.n.Self().ClientAddr }
