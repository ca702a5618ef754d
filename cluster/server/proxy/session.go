package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/server/internal/readahead"
	"github.com/slotraft/slotraft/resp"
)

// session is one client connection: the goroutine that reads its
// requests and sends them on (this file, dispatch.go), the writer that
// returns the replies in the requests' order (writer.go), and the
// client's connections to the nodes (backend.go), each with its reader.
// When the client goes, the session closes its backend connections and
// waits for every goroutine it started.
type session struct {
	p      *Proxy
	nc     net.Conn
	ra     *readahead.Conn // nc, read ahead while the reader waits long (watchClient)
	rd     *resp.RequestReader
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the writer and the backends' readers

	// fifo holds the entries whose replies go to the client next, in the
	// requests' order; its capacity bounds the pipeline in flight.
	fifo   chan *entry
	pushes pushQueue
	bw     *bufio.Writer // the writer's

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a slot gate opens or the session ends
	backends map[string]*backend
	gates    map[uint16]*gate
	state    connState     // replayed on every new backend connection
	subs     subscriptions // pub/sub state (pubsub.go)

	// The reading goroutine's alone.
	dirty []*backend // written since the last flush
	tx    txState
	reply replyMode
}

// entry is one reply due to the client: from calls (merged when there are
// several), or out, ready. A marker entry (drained set) only tells the
// reader that everything before it has been written.
type entry struct {
	calls   []*call
	merge   func(frames [][]byte) []byte // nil: the one call's reply
	out     []byte
	drained chan struct{}
	silent  bool // CLIENT REPLY OFF or SKIP: not written
	// openPushes: the pub/sub command this entry answers is written; the
	// messages held back while it ran may follow.
	openPushes bool
	closeAfter bool // QUIT: the connection ends after this reply
}

// Limits of one session.
const (
	maxPending  = 1024     // commands in flight per client
	maxBackends = 64       // connections to nodes per client
	maxPushData = 32 << 20 // pub/sub messages waiting for a slow client (Redis's pubsub hard limit)
)

func newSession(p *Proxy, nc net.Conn, limits resp.Limits) *session {
	ctx, cancel := context.WithCancel(p.ctx)
	ra := &readahead.Conn{Conn: nc}
	s := &session{
		p: p, nc: nc, ra: ra, rd: resp.NewRequestReader(ra, limits), ctx: ctx, cancel: cancel,
		fifo: make(chan *entry, maxPending), bw: bufio.NewWriterSize(nc, 32<<10),
		backends: map[string]*backend{}, gates: map[uint16]*gate{},
		state: connState{proto: resp.RESP2},
	}
	s.cond = sync.NewCond(&s.mu)
	s.pushes.init()
	s.subs.init()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	return s
}

// run serves the client until it goes, then frees everything.
func (s *session) run() {
	s.wg.Add(1)
	go s.writeLoop()
	func() {
		defer s.recoverPanic("reader")
		s.readLoop()
	}()
	s.cancel()
	_ = s.nc.Close()
	s.mu.Lock()
	bs := make([]*backend, 0, len(s.backends))
	for _, b := range s.backends {
		bs = append(bs, b)
	}
	s.mu.Unlock()
	for _, b := range bs {
		b.fail(errClosed)
	}
	s.wg.Wait()
}

// recoverPanic, deferred at the top of each of the session's goroutines,
// turns a panic (a bug) into the end of this client's session, logged with
// its stack: no input and no node's reply can end the process.
func (s *session) recoverPanic(where string) {
	if p := recover(); p != nil {
		s.p.log.Error("proxy session panicked", "where", where, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		s.cancel()
		_ = s.nc.Close()
	}
}

// readLoop reads the client's requests and sends each on, until the
// client goes, breaks the protocol or quits.
func (s *session) readLoop() {
	for {
		reqs, err := s.rd.Read()
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) { // Redis's reply, then the connection closes
				s.enqueue(&entry{out: errFrame(resp.NewError(pe.Text), resp.RESP2), closeAfter: true})
				s.waitWritten()
			}
			return
		}
		for _, req := range reqs {
			if !s.handle(req.Args) {
				s.flushBackends()
				s.waitWritten()
				return
			}
		}
		s.flushBackends()
	}
}

// enqueue queues e's reply behind those before it; a full pipeline waits
// for the writer (after the backends were flushed, or it would wait for
// replies to commands not yet sent).
func (s *session) enqueue(e *entry) {
	if e.drained == nil {
		e.silent = s.reply.silence()
	}
	select {
	case s.fifo <- e:
		return
	default:
	}
	s.flushBackends()
	select {
	case s.fifo <- e:
	case <-s.ctx.Done():
	}
}

// answer queues a reply the proxy has ready.
func (s *session) answer(out []byte) { s.enqueue(&entry{out: out}) }

// answerErr queues an error reply.
func (s *session) answerErr(e *resp.Error) { s.answer(errFrame(e, s.proto())) }

// waitWritten returns once every reply queued so far has been written
// (or the session ended): the point from which a command that needs the
// pipeline settled (a transaction, a state change, a fan-out) may run.
func (s *session) waitWritten() {
	s.flushBackends()
	m := &entry{drained: make(chan struct{})}
	select {
	case s.fifo <- m:
	case <-s.ctx.Done():
		return
	}
	select {
	case <-m.drained:
	case <-s.ctx.Done():
	}
}

// watchClient runs fn, which waits for something else than the client (a
// blocking command's reply, WAIT), reading the client ahead meanwhile: a
// client that goes ends the session at once, as Redis frees a blocked
// client that disconnects.
func (s *session) watchClient(fn func()) {
	gone, stop := s.ra.Watch()
	done := make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		select {
		case <-gone:
			s.cancel()
		case <-done:
		}
	}()
	fn()
	close(done)
	stop()
}

// flushBackends writes out what was sent since the last flush.
func (s *session) flushBackends() {
	for _, b := range s.dirty {
		_ = b.flush() // a failed flush fails the backend's calls
	}
	s.dirty = s.dirty[:0]
}

// markDirty records that b has buffered writes.
func (s *session) markDirty(b *backend) {
	for _, d := range s.dirty {
		if d == b {
			return
		}
	}
	s.dirty = append(s.dirty, b)
}

// await waits for c's reply from the reading goroutine; false if the
// session ended.
func (s *session) await(c *call) bool {
	select {
	case <-c.done:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// sleep pauses between tries; false if the session ended.
func (s *session) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// proto is the client's protocol.
func (s *session) proto() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.proto
}

// stateNow is the state a new backend connection replays.
func (s *session) stateNow() connState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// openBackends are the session's backend connections now.
func (s *session) openBackends() []*backend {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*backend, 0, len(s.backends))
	for _, b := range s.backends {
		out = append(out, b)
	}
	return out
}

// lost forgets a backend connection that broke or was closed.
func (s *session) lost(b *backend) {
	s.mu.Lock()
	if s.backends[b.addr] == b {
		delete(s.backends, b.addr)
	}
	s.mu.Unlock()
	s.subsLost(b) // pubsub.go; a transaction finds out itself (tx.go)
}
