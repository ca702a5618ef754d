package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/slotraft/slotraft/resp"
)

// backend is one connection of a client's session to a node's client
// port, opened when the session first needs that node and running as the
// client: it replays the session's state (HELLO, AUTH, the name) before
// anything else. Calls written on it are answered in order; its reader
// goroutine hands each reply to the oldest call waiting, and passes
// pub/sub messages and pushes on to the session.
type backend struct {
	s    *session
	addr string
	nc   net.Conn

	mu     sync.Mutex
	bw     *bufio.Writer
	queue  []*call // written, not yet answered, oldest first
	err    error   // set once the connection broke
	dirty  bool    // written since the last flush
	failed bool    // fail ran: the session forgot the connection

	proto atomic.Int32 // the protocol the connection speaks (HELLO)
	// The subscription counts of the last confirmations (the reader
	// goroutine's): a RESP2 connection subscribed to anything receives
	// messages as arrays.
	classic, shard int64
}

// errUnexpectedReply: a node sent a reply nobody asked for; the
// connection is out of step.
var errUnexpectedReply = errors.New("proxy: a reply with no command waiting for it")

// backendFor is the session's connection to addr, opened (and the
// session's state replayed on it) if it has none. A dial error is
// errNotSent; a replayed command's error reply comes back as *replyError.
func (s *session) backendFor(addr string) (*backend, error) {
	s.mu.Lock()
	b := s.backends[addr]
	n := len(s.backends)
	s.mu.Unlock()
	if b != nil {
		return b, nil
	}
	if n >= maxBackends {
		return nil, notSent(fmt.Errorf("more than %d backend connections", maxBackends))
	}
	d := net.Dialer{Timeout: s.p.o.DialTimeout}
	nc, err := d.DialContext(s.ctx, "tcp", addr)
	if err != nil {
		return nil, notSent(err)
	}
	b = &backend{s: s, addr: addr, nc: nc, bw: bufio.NewWriterSize(nc, 32<<10)}
	b.proto.Store(resp.RESP2)
	s.p.backends.Add(1)
	s.wg.Add(1)
	go b.readLoop()
	if err := b.replay(s.stateNow()); err != nil {
		b.fail(err)
		return nil, err
	}
	s.mu.Lock()
	if other := s.backends[addr]; other != nil || s.ctx.Err() != nil {
		s.mu.Unlock()
		b.fail(errClosed) // another goroutine opened one meanwhile, or the session ended
		if other == nil {
			return nil, notSent(errClosed)
		}
		return other, nil
	}
	s.backends[addr] = b
	s.mu.Unlock()
	return b, nil
}

// errClosed: the session or its connection was closed by the proxy.
var errClosed = errors.New("proxy: connection closed")

// replyError is a node's error reply to a command the proxy sent for the
// session (a replayed AUTH whose password changed): the reply the
// client's command gets instead.
type replyError struct{ frame []byte }

func (e *replyError) Error() string {
	text, _ := resp.FrameError(e.frame)
	return "proxy: " + text
}

// replay sends the session's state on a new connection and checks every
// reply: a connection whose AUTH failed must not serve the client with
// another identity.
func (b *backend) replay(st connState) error {
	cmds := st.replay()
	if len(cmds) == 0 {
		return nil
	}
	calls := make([]*call, len(cmds))
	for i, args := range cmds {
		calls[i] = newCall(nil, args, -1)
	}
	if err := b.send(calls...); err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return notSent(err)
	}
	for _, c := range calls {
		select {
		case <-c.done:
		case <-b.s.ctx.Done():
			return notSent(errClosed)
		}
		if c.err != nil {
			return notSent(c.err) // nothing of the client's was sent yet
		}
		if _, isErr := resp.FrameError(c.frame()); isErr {
			return &replyError{frame: c.frame()}
		}
	}
	b.proto.Store(int32(st.proto))
	return nil
}

// send writes calls on the connection, in order, as one unit (ASKING and
// its command); they are flushed by flush.
func (b *backend) send(calls ...*call) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return notSent(b.err)
	}
	for _, c := range calls {
		c.be = b
		b.queue = append(b.queue, c)
		if _, err := b.bw.Write(c.wire); err != nil {
			b.err = err // the calls queued are failed by the reader, which sees the closed connection
			_ = b.nc.Close()
			return nil
		}
	}
	b.dirty = true
	return nil
}

// flush writes what send buffered.
func (b *backend) flush() error {
	b.mu.Lock()
	if !b.dirty || b.err != nil {
		err := b.err
		b.mu.Unlock()
		return err
	}
	b.dirty = false
	err := b.bw.Flush()
	b.mu.Unlock()
	if err != nil {
		b.fail(err)
	}
	return err
}

// readLoop hands each reply to the oldest call waiting, until the
// connection breaks.
func (b *backend) readLoop() {
	defer b.s.wg.Done()
	defer b.fail(errClosed) // after a panic too: its calls must not wait forever
	defer b.s.recoverPanic("backend reader")
	rr := resp.NewReplyReader(b.nc, 0)
	for {
		f, err := rr.Next()
		if err != nil {
			b.fail(err)
			return
		}
		if !b.deliver(bytes.Clone(f)) {
			b.fail(errUnexpectedReply)
			return
		}
	}
}

// deliver gives frame to its call, or to the session as a push (a
// pub/sub message, an unsolicited unsubscription); false when nothing
// wants it.
func (b *backend) deliver(frame []byte) bool {
	b.mu.Lock()
	var head *call
	if len(b.queue) > 0 {
		head = b.queue[0]
	}
	b.mu.Unlock()
	if kind, channel, count, ok := b.pubsubFrame(frame, head); ok {
		if isMessage(kind) {
			b.s.push(b, frame, kind, channel)
			return true
		}
		b.noteCount(kind, count)
		if head == nil || !head.wants(kind, channel) {
			b.s.push(b, frame, kind, channel) // the node dropped a subscription by itself
			return true
		}
	}
	if head == nil {
		return false
	}
	if b.take(head, frame) {
		close(head.done)
	}
	return true
}

// take gives frame to head, the oldest call, unless fail took the calls
// meanwhile (a closed session: the frame is dropped); true when head is
// complete and now belongs to the caller, who closes its done.
func (b *backend) take(head *call, frame []byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 || b.queue[0] != head {
		return false
	}
	if !head.take(frame) {
		return false
	}
	b.queue = b.queue[1:]
	return true
}

// pubsubFrame recognises a pub/sub frame: a RESP3 push, or on RESP2 an
// array while the connection is subscribed or a subscribe-family call
// waits; its kind ("message", "subscribe"…), channel and count.
func (b *backend) pubsubFrame(frame []byte, head *call) (kind string, channel []byte, count int64, ok bool) {
	switch {
	case frame[0] == '>':
	case frame[0] == '*' && (b.classic+b.shard > 0 || (head != nil && head.sub != nil)):
	default:
		return "", nil, 0, false
	}
	elems, _, okE := resp.FrameElems(frame)
	if !okE || len(elems) < 2 {
		return "", nil, 0, false
	}
	k, okK := resp.FrameString(elems[0])
	if !okK {
		return "", nil, 0, false
	}
	kind = string(k)
	if isMessage(kind) {
		channel, _ = resp.FrameString(elems[len(elems)-2])
		return kind, channel, 0, true
	}
	if !isConfirmation(kind) || len(elems) != 3 {
		return "", nil, 0, false
	}
	channel, _ = resp.FrameString(elems[1])
	count, _ = resp.FrameInt(elems[2])
	return kind, channel, count, true
}

// noteCount records a confirmation's subscription count.
func (b *backend) noteCount(kind string, count int64) {
	if kind == "ssubscribe" || kind == "sunsubscribe" {
		b.shard = count
	} else {
		b.classic = count
	}
}

func isMessage(kind string) bool {
	return kind == "message" || kind == "pmessage" || kind == "smessage" || kind == "invalidate"
}

func isConfirmation(kind string) bool {
	switch kind {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe":
		return true
	}
	return false
}

// fail ends the connection: every call waiting gets err, and the session
// forgets the connection (and what lived on it: subscriptions, a WATCH).
func (b *backend) fail(err error) {
	_ = b.nc.Close() // first: a write blocked under mu returns
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	err = b.err // the first cause
	q := b.queue
	b.queue = nil
	first := !b.failed
	b.failed = true
	b.mu.Unlock()
	for _, c := range q {
		c.finish(nil, err)
	}
	if first {
		b.s.p.backends.Add(-1)
		b.s.lost(b)
	}
}
