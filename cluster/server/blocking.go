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
	"github.com/slotraft/slotraft/slots"
)

// Blocked clients at the front end: a command that blocked in its group
// (fsm.OutcomeBlocked) waits here for its end, which the node's waiter
// registry hands over (cluster.Group.ClaimWaiter). While it waits, the connection
// is read ahead to notice the client going away.

// maxWatchStash bounds the bytes read ahead from a blocked client before
// watching stops.
const maxWatchStash = 1 << 20

// waitBlocked waits for the outcome of args, a command of c that blocked
// as waiter id in group g: served, timed out, sent elsewhere, or ended
// because this node stopped leading g (then MOVED to the new leader, or
// UNBLOCKED while none is known). It also ends when the client goes away
// or the server closes.
func (s *Server) waitBlocked(c *client, g *cluster.Group, id fsm.WaiterID, args [][]byte) fsm.Outcome {
	w := g.ClaimWaiter(id)
	if w == nil {
		// This node stopped leading g since it proposed the command.
		g.Unblock(id)
		return fsm.Replied(s.movedOrUnblocked(g, args))
	}
	var gone <-chan struct{}
	if c != nil && c.watch != nil {
		var stop func()
		gone, stop = c.watch.watch()
		defer stop()
	}
	select {
	case end := <-w.Done():
		if end.Lost {
			return fsm.Replied(s.movedOrUnblocked(g, args))
		}
		return end.Outcome
	case <-gone:
		w.Abandon()
		c.closing = true
		return fsm.Replied(resp.NullArray())
	case <-s.ctx.Done():
		w.Abandon()
		if c != nil {
			c.closing = true
		}
		return fsm.Replied(resp.Err(fsm.ErrUnblocked))
	}
}

// movedOrUnblocked is the reply of a blocked command whose node stopped
// leading its group: MOVED to the new leader, or UNBLOCKED while none is
// known.
func (s *Server) movedOrUnblocked(g *cluster.Group, args [][]byte) resp.Value {
	var hashSlot uint16
	if cmd := s.table.lookup(args[0]); cmd != nil {
		if keys := cmd.meta.KeysOf(args); len(keys) > 0 {
			hashSlot = slots.Of(keys[0])
		}
	}
	if leader, ok := s.n.Leader(g); ok && leader.ID != s.n.Self().ID && leader.ClientAddr != "" {
		return resp.Err(resp.ErrMoved(hashSlot, leader.ClientAddr))
	}
	return resp.Err(fsm.ErrUnblocked)
}

// watchConn is a client connection that can be read ahead while its handler
// waits for a blocked command, to notice the client going away: what it
// reads is kept and returned to the handler's reader afterwards.
type watchConn struct {
	net.Conn
	mu    sync.Mutex
	stash []byte
	err   error
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

// watchListener wraps accepted connections in watchConns, which the server
// finds again by remote address when redcon hands it the connection.
type watchListener struct {
	net.Listener
	t *watchTable
}

func (l watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	w := &watchConn{Conn: c}
	l.t.put(c.RemoteAddr().String(), w)
	return w, nil
}

type watchTable struct {
	mu sync.Mutex
	m  map[string]*watchConn
}

func (t *watchTable) put(addr string, w *watchConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*watchConn{}
	}
	t.m[addr] = w
}

func (t *watchTable) take(addr string) *watchConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.m[addr]
	delete(t.m, addr)
	return w
}
