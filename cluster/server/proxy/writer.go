package proxy

import (
	"sync"
)

// The writer: the replies go back in the requests' order, each one once
// its calls are settled (route.go: redirects followed, outcomes judged),
// and pub/sub messages go between replies as they come, except while a
// pub/sub command runs (its confirmations come first).

// writeLoop writes replies and messages until the session ends; a write
// error ends it.
func (s *session) writeLoop() {
	defer s.wg.Done()
	defer s.cancel()
	defer s.recoverPanic("writer")
	for {
		select {
		case e := <-s.fifo:
			if !s.complete(e) {
				return
			}
		case <-s.pushes.ready:
			s.writePushes()
		case <-s.ctx.Done():
			return
		}
		if len(s.fifo) == 0 && s.bw.Buffered() > 0 {
			if s.bw.Flush() != nil {
				return
			}
		}
	}
}

// complete writes e's reply once it is known; false when the session is
// to end.
func (s *session) complete(e *entry) bool {
	if e.drained != nil {
		err := s.bw.Flush()
		close(e.drained)
		return err == nil
	}
	out := e.out
	if e.calls != nil {
		frames := make([][]byte, len(e.calls))
		for i, c := range e.calls {
			if frames[i] = s.settle(c, true); frames[i] == nil {
				return false
			}
		}
		if e.merge != nil {
			out = e.merge(frames)
		} else {
			out = frames[0]
		}
	}
	if !e.silent {
		if _, err := s.bw.Write(out); err != nil {
			return false
		}
	}
	if e.openPushes {
		s.pushes.open()
	}
	if e.closeAfter {
		_ = s.bw.Flush()
		return false
	}
	return true
}

// waitWriter waits for c's reply in the writer: what is written so far
// goes out first (the client may wait for it before it sends what c waits
// for, as a BLPOP's pusher), and messages are written meanwhile.
func (s *session) waitWriter(c *call) bool {
	select {
	case <-c.done:
		return true
	default:
	}
	if s.bw.Buffered() > 0 && s.bw.Flush() != nil {
		s.cancel()
		return false
	}
	for {
		select {
		case <-c.done:
			return true
		case <-s.pushes.ready:
			s.writePushes()
			if s.bw.Flush() != nil {
				s.cancel()
				return false
			}
		case <-s.ctx.Done():
			return false
		}
	}
}

// writePushes writes the messages waiting, unless a pub/sub command holds
// them back.
func (s *session) writePushes() {
	for _, f := range s.pushes.take() {
		if _, err := s.bw.Write(f); err != nil {
			s.cancel()
			return
		}
	}
}

// pushQueue holds the messages and pushes for the client until the
// writer takes them, up to maxPushData bytes: a client that reads slower
// than its messages come is closed, as Redis closes one over its pub/sub
// output buffer limit.
type pushQueue struct {
	mu     sync.Mutex
	frames [][]byte
	size   int
	held   bool
	ready  chan struct{} // a token when frames may be taken
}

func (q *pushQueue) init() { q.ready = make(chan struct{}, 1) }

// add queues f; false when the client is over the limit.
func (q *pushQueue) add(f []byte) bool {
	q.mu.Lock()
	q.frames = append(q.frames, f)
	q.size += len(f)
	over, held := q.size > maxPushData, q.held
	q.mu.Unlock()
	if !held {
		q.signal()
	}
	return !over
}

// take hands the queued frames over, none while held.
func (q *pushQueue) take() [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.held {
		return nil
	}
	f := q.frames
	q.frames, q.size = nil, 0
	return f
}

// hold keeps messages back until open.
func (q *pushQueue) hold() {
	q.mu.Lock()
	q.held = true
	q.mu.Unlock()
}

func (q *pushQueue) open() {
	q.mu.Lock()
	q.held = false
	n := len(q.frames)
	q.mu.Unlock()
	if n > 0 {
		q.signal()
	}
}

func (q *pushQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}
