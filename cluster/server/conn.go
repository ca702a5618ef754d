package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/cluster/server/internal/readahead"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// client is the state of one client connection. The connection's own
// goroutine changes it; CLIENT LIST and INFO read it from other goroutines,
// so the fields they read are guarded by mu.
type client struct {
	id      uint64
	conn    *clientConn
	addr    string // remote host:port
	laddr   string // local host:port
	onTLS   bool   // came in on the tls-port: redirects name TLS ports (tls_listener.go)
	created time.Time

	mu       sync.Mutex
	name     string
	proto    int
	readonly bool
	noTouch  bool // CLIENT NO-TOUCH: reads leave the keys' access metadata alone
	lastCmd  string
	lastAt   time.Time
	libName  string
	libVer   string
	noEvict  bool      // CLIENT NO-EVICT on: flag e (no client eviction exists)
	pub      published // the connection goroutine's state, as CLIENT LIST shows it (client_info.go)
	// blocked is set while the connection waits in a blocking command
	// (waiting) or for a CLIENT PAUSE to end: flag b.
	blocked blockKind

	// unblockC carries a CLIENT UNBLOCK to the connection while it waits in
	// a blocking command: true for ERROR, false for TIMEOUT.
	unblockC chan bool

	watch   *readahead.Conn   // the connection, readable ahead while a command is blocked
	asking  bool              // ASKING seen: the next command may be served for an importing slot
	closing bool              // QUIT: close after the reply
	argvMem int               // the bytes of the current command's arguments (CLIENT LIST argv-mem)
	writes  map[uint32]uint64 // per group, the applied index after c's last write there (WAIT)
	inExec  bool              // EXEC is running queued node commands: WAIT does not block, MONITOR refuses
	ldb     ldbMode           // SCRIPT DEBUG: the next EVAL is a debugging session (script_debug.go)
	// monitoring: MONITOR mode (monitor.go); the connection's goroutine
	// sets it, CLIENT LIST reads it under mu.
	monitoring bool

	// CLIENT REPLY (client_reply.go): replies are dropped while replyOff,
	// and for the command after CLIENT REPLY SKIP (replySkip); skipNext is
	// set by SKIP itself, silent by a command that answers nothing.
	replyOff, replySkip, skipNext, silent bool
	tx                                    *txState // MULTI/WATCH state (multi.go); nil when neither
	buf                                   []byte   // reply rendering buffer, reused

	// sub is the pub/sub side (pubsub_registry.go), set under mu at the
	// connection's first subscribe-family command, or by the first
	// invalidation pushed to it (tracking_cmd.go), always with io held;
	// from then on every reply goes through sub.out.
	sub *subscriber

	// trk is the client's tracking mode (CLIENT TRACKING), under mu.
	trk trackState
	// acl is the connection's user (acl_gate.go).
	acl aclConn
	// scriptCalls: the calls of the scripts of the run being answered,
	// until MONITOR prints them (monitor.go).
	scriptCalls []scriptCalls
	// io is held by the connection's goroutine from the moment a read
	// returns requests until their replies are written. An invalidation
	// for the client (pushTo) is queued in pending (under mu) and
	// delivered by whoever holds io next, once it is free: so it never
	// comes before the reply of a command that ran before it. gone (under
	// io) is set when the connection has ended.
	io         sync.Mutex
	pending    []byte
	hasPending atomic.Bool
	gone       bool
}

func newClient(id uint64, cc *clientConn) *client {
	now := time.Now()
	return &client{
		id: id, conn: cc, addr: cc.nc.RemoteAddr().String(), laddr: cc.nc.LocalAddr().String(),
		created: now, lastAt: now, proto: resp.RESP2, lastCmd: "NULL",
		unblockC: make(chan bool, 1), pub: published{multi: -1},
	}
}

// reply renders v for the client's protocol and queues it; the connection
// loop writes the queue once the pipeline read so far has been answered.
func (c *client) reply(v resp.Value) int {
	if c.sub != nil {
		return c.sub.out.reply(v, c.protocol())
	}
	c.buf = v.Append(c.buf[:0], c.protocol())
	c.conn.write(c.buf)
	return len(c.buf)
}

// hasSub reports whether c has its pub/sub side. Its own goroutine asks
// under mu too: an invalidation may make one between its pipelines
// (tracking_cmd.go).
// subscribed reports whether c is in pub/sub mode (subscribed to a
// channel, pattern or shard channel), as Redis's CLIENT_PUBSUB flag: a
// client that once subscribed, or got a tracking push, and is subscribed
// to nothing now is not.
func (c *client) subscribed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sub != nil && c.sub.subscribed()
}

func (c *client) protocol() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proto
}

func (c *client) setProtocol(p int) {
	c.mu.Lock()
	c.proto = p
	c.mu.Unlock()
}

// readOpts are the options of c's reads: NO-TOUCH, and the tracking of
// the keys they read (tracking_cmd.go).
func (s *Server) readOpts(c *client) fsm.ReadOpts {
	c.mu.Lock()
	noTouch := c.noTouch
	c.mu.Unlock()
	return fsm.ReadOpts{NoTouch: noTouch, Tracked: s.trackedReads(c), Monitor: s.mon.n.Load() > 0, User: scriptUserOf(c)}
}

func (c *client) isReadonly() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readonly
}

func (c *client) setReadonly(ro bool) {
	c.mu.Lock()
	c.readonly = ro
	c.mu.Unlock()
}

func (c *client) getName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

func (c *client) setName(name string) {
	c.mu.Lock()
	c.name = name
	c.mu.Unlock()
}

func (c *client) setLib(name, ver *string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name != nil {
		c.libName = *name
	}
	if ver != nil {
		c.libVer = *ver
	}
}

// touch records the command about to run, for CLIENT LIST's cmd= and idle=.
func (c *client) touch(name string, now time.Time) {
	c.mu.Lock()
	c.lastCmd = name
	c.lastAt = now
	c.mu.Unlock()
}

// validClientName reports whether name may be a connection name: Redis
// refuses spaces, newlines and other characters outside '!'..'~'.
func validClientName(name []byte) bool {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}
