package server

import (
	"fmt"
	"strings"
	"sync"
	"time"

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
	created time.Time

	mu       sync.Mutex
	name     string
	proto    int
	readonly bool
	lastCmd  string
	lastAt   time.Time
	libName  string
	libVer   string

	watch   *watchConn        // the connection, readable ahead while a command is blocked
	asking  bool              // ASKING seen: the next command may be served for an importing slot
	closing bool              // QUIT: close after the reply
	tx      *txState          // MULTI/WATCH state (multi.go); nil when neither
	buf     []byte            // reply rendering buffer, reused
	writes  map[uint32]uint64 // per group, the applied index after c's last write there (WAIT)
	inExec  bool              // EXEC is running queued node commands: WAIT does not block, MONITOR refuses
	// monitoring: MONITOR mode (monitor.go); the connection's goroutine
	// sets it, CLIENT LIST reads it under mu.
	monitoring bool

	// sub is the pub/sub side (pubsub_registry.go), set by the connection's
	// goroutine under mu at its first subscribe-family command; from then
	// on every reply goes through sub.out.
	sub *subscriber
}

func newClient(id uint64, cc *clientConn) *client {
	now := time.Now()
	return &client{
		id: id, conn: cc, addr: cc.nc.RemoteAddr().String(), laddr: cc.nc.LocalAddr().String(),
		created: now, lastAt: now, proto: resp.RESP2, lastCmd: "NULL",
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

// info renders the client as one CLIENT LIST / CLIENT INFO line, in Redis
// 7.2's field order. The query and reply buffers belong to the
// connection's goroutine and are not sampled from here: their sizes are 0.
func (c *client) info(now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	flags := ""
	var subs [numKinds]int64
	omem := 0
	if c.sub != nil {
		for k := range subs {
			subs[k] = c.sub.counts[k].Load()
		}
		omem = c.sub.out.pending()
		if c.sub.subscribed() {
			flags += "P"
		}
	}
	if c.monitoring {
		flags += "O"
	}
	if c.readonly {
		flags += "r"
	}
	if flags == "" {
		flags = "N"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "id=%d addr=%s laddr=%s fd=-1 name=%s age=%d idle=%d flags=%s db=0 sub=%d psub=%d ssub=%d multi=-1 ",
		c.id, c.addr, c.laddr, c.name, int64(now.Sub(c.created)/time.Second), int64(now.Sub(c.lastAt)/time.Second), flags,
		subs[kindChannel], subs[kindPattern], subs[kindShard])
	fmt.Fprintf(&b, "qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=%d tot-mem=0 events=r cmd=%s user=default redir=-1 resp=%d lib-name=%s lib-ver=%s",
		omem, c.lastCmd, c.proto, c.libName, c.libVer)
	return b.String()
}
