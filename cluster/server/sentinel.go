package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// The Sentinel facade (--sentinel-bind): a second listener of the node
// that speaks Redis Sentinel's protocol, so that an application written
// for Redis + Sentinel (redis-py's Sentinel, go-redis's FailoverClient,
// Jedis, Lettuce, ioredis) finds its master here with no code change. It
// monitors nothing over the network: the master is the deployment as this
// node knows it (sentinel_view.go), its events are changes of that
// knowledge (sentinel_monitor.go), and every other facade is another node
// of the cluster (docs/sentinel.md).
//
// Its connections are clients of this package (conn.go) with a command
// table of their own (sentinel_commands.go): SENTINEL, PING, INFO, ROLE,
// HELLO, AUTH, CLIENT, the subscribe family over the facade's own events,
// as Redis in sentinel mode keeps only its commands flagged SENTINEL.

// SentinelConfig configures a node's Sentinel facade.
type SentinelConfig struct {
	// Masters are the master names the facade answers for, each the whole
	// deployment (default: mymaster).
	Masters []string
}

// DefaultSentinelMaster is the master name a facade answers for when none
// is configured: the name of Sentinel's example configuration.
const DefaultSentinelMaster = "mymaster"

// Sentinel is a node's Sentinel facade. Make one with Server.NewSentinel;
// Server.Close closes it too.
type Sentinel struct {
	s     *Server
	log   *slog.Logger
	table *sentinelTable
	names []string // master names, in configuration order
	myID  string   // SENTINEL MYID: the node's 40-hex cluster id
	reg   *registry
	mon   *sentinelMonitor

	mu      sync.Mutex
	ln      net.Listener
	clients map[uint64]*client
	closed  bool
	ctx     context.Context // cancelled by Close: ends the monitor and failovers
	cancel  context.CancelFunc
	conns   sync.WaitGroup // connections, the monitor, failovers
	stats   sentinelStats
}

// sentinelStats are the counters of the facade's INFO stats section.
type sentinelStats struct {
	mu          sync.Mutex
	connections int64
	commands    int64
	rejected    int64
}

var errSentinelClosed = errors.New("server: sentinel facade closed")

// ErrSentinelMasterName: a master name the facade cannot answer for.
var ErrSentinelMasterName = errors.New("server: bad sentinel master name")

// NewSentinel makes the node's Sentinel facade; call Serve to accept its
// clients. A server has one facade at most.
func (s *Server) NewSentinel(cfg SentinelConfig) (*Sentinel, error) {
	names := cfg.Masters
	if len(names) == 0 {
		names = []string{DefaultSentinelMaster}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, " \r\n\t") || seen[n] {
			return nil, ErrSentinelMasterName
		}
		seen[n] = true
	}
	f := &Sentinel{
		s: s, log: s.log.With("component", "sentinel"), table: sentinelCommands(),
		names: append([]string(nil), names...), myID: NodeID(s.n.Self().ID),
		reg: newRegistry(), clients: map[uint64]*client{},
	}
	f.ctx, f.cancel = context.WithCancel(s.ctx)
	f.mon = newSentinelMonitor(f)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sentinel != nil || s.closed {
		f.cancel()
		return nil, errSentinelClosed
	}
	s.sentinel = f
	return f, nil
}

// Serve accepts the facade's clients on ln until Close; it runs the
// monitor that publishes the facade's events meanwhile.
func (f *Sentinel) Serve(ln net.Listener) error {
	f.mu.Lock()
	if f.closed || f.ln != nil {
		f.mu.Unlock()
		ln.Close()
		return errSentinelClosed
	}
	f.ln = ln
	f.mu.Unlock()
	f.goRun(f.mon.run)
	return acceptLoop(ln, f.isClosed, f.log, func(nc net.Conn) {
		if c := f.accept(nc); c != nil {
			go f.serveConn(c)
		}
	})
}

// goRun runs fn as a facade goroutine that Close waits for; false (not
// run) once the facade is closing.
func (f *Sentinel) goRun(fn func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns.Add(1)
	go func() { defer f.conns.Done(); fn() }()
	return true
}

func (f *Sentinel) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

// Close stops accepting, closes the facade's connections and waits for
// them and the monitor to end.
func (f *Sentinel) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	f.cancel()
	ln := f.ln
	for _, c := range f.clients {
		_ = c.conn.nc.Close()
	}
	f.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	f.conns.Wait()
	return nil
}

// Addr is the address the facade listens on; nil before Serve.
func (f *Sentinel) Addr() net.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		return nil
	}
	return f.ln.Addr()
}

// accept registers a client on nc, or refuses it at maxclients (the
// data port's setting) as Redis does.
func (f *Sentinel) accept(nc net.Conn) *client {
	f.s.setKeepAlive(nc)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		_ = nc.Close()
		return nil
	}
	if int64(len(f.clients)) >= f.s.connCfg.maxClients.Load() {
		f.count(func(st *sentinelStats) { st.rejected++ })
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write([]byte("-ERR max number of clients reached\r\n"))
		_ = nc.Close()
		return nil
	}
	c := newClient(f.s.nextID.Add(1), newClientConn(nc, f.s.connCfg.limits(), nil))
	f.s.initACL(c)
	f.clients[c.id] = c
	f.conns.Add(1)
	f.count(func(st *sentinelStats) { st.connections++ })
	return c
}

func (f *Sentinel) count(fn func(*sentinelStats)) {
	f.stats.mu.Lock()
	fn(&f.stats)
	f.stats.mu.Unlock()
}

// serveConn is c's goroutine: requests in, replies out, until the client
// goes, breaks the protocol, or is killed.
func (f *Sentinel) serveConn(c *client) {
	defer f.closedConn(c)
	for {
		reqs, err := c.conn.rd.Read()
		if err != nil {
			c.conn.fail(err)
			return
		}
		for _, r := range reqs {
			f.serveOne(c, r.Args)
			if c.closing {
				break
			}
		}
		c.argvMem = 0
		c.publish()
		if err := c.conn.flush(); err != nil || c.closing {
			if c.sub != nil {
				c.drainOutput()
			}
			return
		}
	}
}

// closedConn forgets c once its goroutine ends.
func (f *Sentinel) closedConn(c *client) {
	_ = c.conn.close()
	f.mu.Lock()
	delete(f.clients, c.id)
	f.mu.Unlock()
	if c.sub != nil {
		f.reg.removeAll(c.sub)
		c.sub.out.close()
	}
	f.conns.Done()
}

// clientList is a snapshot of the facade's clients, in id order.
func (f *Sentinel) clientList() []*client {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedClients(f.clients)
}

// clientByID is the facade's client with id, nil if none.
func (f *Sentinel) clientByID(id int64) *client {
	if id <= 0 {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clients[uint64(id)]
}

// kill closes o's connection and forgets it at once (CLIENT KILL).
func (f *Sentinel) kill(o *client) {
	_ = o.conn.nc.Close()
	f.mu.Lock()
	delete(f.clients, o.id)
	f.mu.Unlock()
}

// reply queues v for c (its output queue once it subscribed).
func (f *Sentinel) reply(c *client, v resp.Value) { c.reply(v) }
