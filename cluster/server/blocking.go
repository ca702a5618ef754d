package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Blocked clients at the front end: a command that blocked in its group
// (fsm.OutcomeBlocked) waits here for its end, which the node's waiter
// registry hands over (cluster.Group.ClaimWaiter). While it waits, the connection
// is read ahead to notice the client going away.

// maxWatchStash bounds the bytes read ahead from a blocked client before
// watching stops.
const maxWatchStash = 1 << 20

// waitBlocked waits for the outcome of a command of c that blocked
// as waiter id in group g: served, timed out, sent elsewhere, dropped by a
// new leader (UNBLOCKED), or, when this node cannot learn how it ended, an
// outcome-unknown error. Never a redirect: the command reached the log, and
// its waiter may take an element. It also ends when the client goes away
// or the server closes.
func (s *Server) waitBlocked(c *client, g *cluster.Group, id fsm.WaiterID) fsm.Outcome {
	w := g.ClaimWaiter(id)
	if w == nil {
		// A snapshot replaced the group's state since the command blocked.
		g.Unblock(id)
		return fsm.Replied(resp.Err(resp.ErrOutcomeUnknown))
	}
	var gone <-chan struct{}
	var unblock <-chan bool
	if c != nil {
		select {
		case <-c.unblockC: // a CLIENT UNBLOCK that came as the last wait ended
		default:
		}
		unblock = c.unblockC
		c.publish()
		s.setBlocked(c, blockedOnKeys)
		defer s.setBlocked(c, notBlocked)
	}
	if c != nil && c.watch != nil {
		var stop func()
		gone, stop = c.watch.watch()
		defer stop()
	}
	asError := false
	for {
		select {
		case end := <-w.Done():
			return unblockedOutcome(end.Outcome, asError)
		case asError = <-unblock:
			// CLIENT UNBLOCK: the leader ends the waiter through the log with
			// its timeout reply, unless an entry serves it first.
			unblock = nil
			g.Unblock(id)
		case <-gone:
			w.Abandon()
			c.closing = true
			return fsm.Replied(resp.NullArray())
		case <-s.ctx.Done():
			// The waiter may still be served before the leader's unblock lands.
			w.Abandon()
			if c != nil {
				c.closing = true
			}
			return fsm.Replied(resp.Err(resp.ErrOutcomeUnknown))
		}
	}
}

// unblockedOutcome is what a blocked command that ended as o answers: the
// error of CLIENT UNBLOCK … ERROR (asError) replaces its timeout reply;
// a command served meanwhile keeps its reply (it took an element).
func unblockedOutcome(o fsm.Outcome, asError bool) fsm.Outcome {
	if asError && o.Kind == fsm.OutcomeReply && o.Reply.Kind == resp.KindNullArray {
		return fsm.Replied(resp.Err(errUnblocked))
	}
	return o
}

// watchConn is a client connection that can be read ahead while its handler
// waits for a blocked command, to notice the client going away: what it
// reads is kept and returned to the handler's reader afterwards.
type watchConn struct {
	net.Conn
	mu    sync.Mutex
	stash []byte
	err   error
	idle  time.Duration // > 0: each read from the socket must bring bytes within it (timeout); the connection's goroutine only
}

func (w *watchConn) Read(p []byte) (int, error) {
	w.mu.Lock()
	if len(w.stash) > 0 {
		n := copy(p, w.stash)
		w.stash = w.stash[n:]
		w.mu.Unlock()
		return n, nil
	}
	if w.err != nil {
		err := w.err
		w.mu.Unlock()
		return 0, err
	}
	w.mu.Unlock()
	if w.idle > 0 {
		_ = w.Conn.SetReadDeadline(time.Now().Add(w.idle))
	}
	return w.Conn.Read(p)
}

// watch reads ahead until stop is called; gone is closed if the client
// closes the connection (or it fails) meanwhile. Reading ahead stops, and
// with it the watch, once maxWatchStash bytes are kept.
func (w *watchConn) watch() (gone <-chan struct{}, stop func()) {
	goneC := make(chan struct{})
	exited := make(chan struct{})
	var stopping atomic.Bool
	go func() {
		defer close(exited)
		buf := make([]byte, 4096)
		for {
			n, err := w.Conn.Read(buf)
			w.mu.Lock()
			w.stash = append(w.stash, buf[:n]...)
			full := len(w.stash) >= maxWatchStash
			if err != nil {
				var ne net.Error
				if !(stopping.Load() && errors.As(err, &ne) && ne.Timeout()) {
					w.err = err
					close(goneC)
				}
			}
			w.mu.Unlock()
			if err != nil || full {
				return
			}
		}
	}()
	return goneC, func() {
		stopping.Store(true)
		_ = w.Conn.SetReadDeadline(time.Now())
		<-exited
		_ = w.Conn.SetReadDeadline(time.Time{})
	}
}
