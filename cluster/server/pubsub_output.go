package server

import (
	"net"
	"sync"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// A connection's output once it can receive pushes. The connection loop
// (serve.go) writes replies
// only from the connection's own goroutine, after each pipeline; a
// subscriber must also receive messages at any time from publishers'
// goroutines, without a publisher ever waiting for it. So from its first
// subscribe-family command on, every byte for the connection — command
// replies and pushes alike — is appended to one outQueue in the order it
// is produced, and one writer goroutine per such connection writes the
// queue to the socket. The connection loop keeps reading and dispatching the
// connection's commands as before (a RESP3 client may run any command
// while subscribed); its own buffer stays empty.
//
// The queue is what Redis calls the client's output buffer: the
// client-output-buffer-limit of the pubsub class applies to it while the
// connection is subscribed. Past the hard limit, or past the soft limit for
// longer than soft-seconds, the connection is closed.

const (
	// replyHighWater: a connection's own command replies wait while more
	// than this is queued, so a client that pipelines without reading
	// slows itself down (as a blocking write would) instead of growing the
	// queue. Pushes never wait.
	replyHighWater = 1 << 20
	// maxSpareBuf: a writer keeps its last buffer for reuse up to this size.
	maxSpareBuf = 1 << 20
	// drainTimeout bounds how long QUIT waits for its reply to be written.
	drainTimeout = 2 * time.Second
)

// outQueue is the ordered output of one connection, written by its own
// writer goroutine.
type outQueue struct {
	s   *Server
	sub *subscriber
	nc  net.Conn

	mu       sync.Mutex
	cond     sync.Cond // signalled on new data, written data and close
	buf      []byte    // queued, not yet taken by the writer
	spare    []byte
	inflight int       // bytes the writer is writing now
	softAt   time.Time // when the soft limit was first exceeded; zero if not
	closed   bool
}

func newOutQueue(s *Server, sub *subscriber, nc net.Conn) *outQueue {
	o := &outQueue{s: s, sub: sub, nc: nc}
	o.cond.L = &o.mu
	return o
}

// subscriberOf returns c's subscriber, making it and its output queue on
// first use. The replies still queued for the current pipeline move
// to the queue's head, so they keep their place before anything pushed
// from now on.
func (s *Server) subscriberOf(c *client) *subscriber {
	if c.sub != nil {
		return c.sub
	}
	sub := &subscriber{c: c}
	sub.out = newOutQueue(s, sub, c.conn.nc)
	sub.out.buf = append(sub.out.buf, c.conn.takeOutput()...)
	if !s.ps.goRun(sub.out.run) {
		sub.out.closed = true // server closing: nothing will be written
	}
	c.mu.Lock()
	c.sub = sub
	c.mu.Unlock()
	return sub
}

// push queues a message rendered for this connection (a publish).
func (o *outQueue) push(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.buf = append(o.buf, b...)
	o.s.stats.netOut.Add(int64(len(b)))
	o.afterAppend()
}

// pushValue queues v, rendered for proto (a subscription confirmation).
func (o *outQueue) pushValue(v resp.Value, proto int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	n := len(o.buf)
	o.buf = v.Append(o.buf, proto)
	o.s.stats.netOut.Add(int64(len(o.buf) - n))
	o.afterAppend()
}

// reply queues a command reply of the connection's own goroutine and
// returns its size; it waits while the queue is above replyHighWater.
func (o *outQueue) reply(v resp.Value, proto int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return 0
	}
	n := len(o.buf)
	o.buf = v.Append(o.buf, proto)
	n = len(o.buf) - n
	o.afterAppend()
	for !o.closed && len(o.buf)+o.inflight > replyHighWater {
		o.cond.Wait()
	}
	return n
}

// afterAppend enforces the output buffer limit and wakes the writer. o.mu is held.
func (o *outQueue) afterAppend() {
	if o.sub.subscribed() || o.sub.monitoring.Load() {
		lim := o.s.ps.limits.Load().pubsub
		if used := int64(len(o.buf) + o.inflight); o.overLimit(lim, used) {
			o.kill(used)
			return
		}
	}
	o.cond.Broadcast()
}

// overLimit applies one class's limits to used bytes, as Redis's
// checkClientOutputBufferLimits does. o.mu is held.
func (o *outQueue) overLimit(lim obufClass, used int64) bool {
	if lim.hard > 0 && used >= lim.hard {
		return true
	}
	if lim.soft > 0 && used >= lim.soft {
		now := time.Now()
		if o.softAt.IsZero() {
			o.softAt = now
			return false
		}
		return now.Sub(o.softAt) > time.Duration(lim.softSeconds)*time.Second
	}
	o.softAt = time.Time{}
	return false
}

// kill closes a connection over its limit: what is queued is dropped, the
// socket closed, and the connection's reader ends it. o.mu is held.
func (o *outQueue) kill(used int64) {
	o.closed = true
	o.buf = nil
	o.cond.Broadcast()
	o.s.ps.obufKills.Add(1)
	c := o.sub.c
	o.s.log.Warn("client closed for overcoming of output buffer limits",
		"id", c.id, "addr", c.addr, "class", "pubsub", "pending", used)
	_ = o.nc.Close()
}

// run writes the queue to the socket until the connection closes.
func (o *outQueue) run() {
	o.s.ps.writers.Add(1)
	defer o.s.ps.writers.Add(-1)
	for {
		o.mu.Lock()
		for len(o.buf) == 0 && !o.closed {
			o.cond.Wait()
		}
		if o.closed {
			o.mu.Unlock()
			return
		}
		b := o.buf
		o.buf, o.spare = o.spare[:0], nil
		o.inflight = len(b)
		o.mu.Unlock()

		_, err := o.nc.Write(b)

		o.mu.Lock()
		o.inflight = 0
		if cap(b) <= maxSpareBuf {
			o.spare = b[:0]
		}
		if err != nil {
			o.closed = true
			o.buf = nil
		}
		o.cond.Broadcast()
		o.mu.Unlock()
		if err != nil {
			_ = o.nc.Close() // the reader notices and ends the connection
			return
		}
	}
}

// pending is how many bytes wait to be written (CLIENT LIST omem).
func (o *outQueue) pending() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.buf) + o.inflight
}

// drain waits until everything queued is written, the connection fails,
// or timeout passes (QUIT's reply goes out before the socket closes).
func (o *outQueue) drain(timeout time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	expired := false
	t := time.AfterFunc(timeout, func() {
		o.mu.Lock()
		expired = true
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer t.Stop()
	for !o.closed && !expired && len(o.buf)+o.inflight > 0 {
		o.cond.Wait()
	}
}

// close stops the writer; the connection is gone.
func (o *outQueue) close() {
	o.mu.Lock()
	o.closed = true
	o.buf = nil
	o.cond.Broadcast()
	o.mu.Unlock()
}

// drainOutput writes what c's queue holds before the connection closes
// after QUIT; nothing to do for a connection that never subscribed.
func (c *client) drainOutput() {
	if c.sub != nil {
		c.sub.out.drain(drainTimeout)
	}
}
