package cluster

import (
	"container/heap"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Blocking commands on the leader. The waiters themselves are replicated
// state (fsm/blocking.go): a client's BLPOP is proposed like any write, and
// when it blocks its reply is a marker naming its waiter. The connection's
// goroutine then waits here for the waiter's reply, which the FSM hands over
// (SetBlockingHook) when an entry serves it, times it out or drops it.
//
// The leader keeps the waiters' deadlines in a heap and proposes
// EntryUnblock when they pass, and for waiters whose client went away; a
// new leader proposes EntryClearWaiters once per term. A node that stops
// leading the group answers its blocked clients with MOVED to the new leader
// (or, if none is known after a short grace, Redis's UNBLOCKED error), so no
// client waits forever on a node that can no longer serve it.

const (
	blockTick        = 50 * time.Millisecond
	blockGrace       = time.Second                    // wait for a new leader to be known before UNBLOCKED
	blockOrphanAge   = requestTimeout + 5*time.Second // a waiter nobody claimed: its proposer gave up
	blockRetry       = time.Second                    // between proposals of the same unblock
	blockProposeWait = 2 * time.Second
	maxUnblockBatch  = 512
	maxWatchStash    = 1 << 20 // bytes read ahead from a blocked client before watching stops
)

// blockSlot is one waiter of the group as this node knows it.
type blockSlot struct {
	id       fsm.WaiterID
	deadline int64 // unix ms; 0 = none
	created  time.Time
	done     chan resp.Value // buffered 1: the one reply

	// Guarded by the registry's mu.
	claimed   bool   // a connection waits for it
	hashSlot  uint16 // the claiming command's slot, for MOVED
	resolved  bool   // its reply is in done
	abandoned bool   // its client went away: unblock it
	proposed  time.Time
	heapIdx   int // in byDeadline, or -1
}

// blockRegistry maps a group's waiters to the connections waiting for them.
type blockRegistry struct {
	g    *Group
	kick chan struct{} // buffered 1: wake the loop (new deadline, client gone)

	mu         sync.Mutex
	slots      map[fsm.WaiterID]*blockSlot
	byDeadline slotHeap
	lostAt     time.Time // when this node was first seen not leading with clients blocked
}

func newBlockRegistry(g *Group) *blockRegistry {
	return &blockRegistry{g: g, kick: make(chan struct{}, 1), slots: map[fsm.WaiterID]*blockSlot{}}
}

func (b *blockRegistry) wake() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// onEvent is the FSM's blocking hook: it runs in Apply (and Restore) on
// every replica, so it only takes the registry's lock.
func (b *blockRegistry) onEvent(ev fsm.BlockEvent) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if ev.Reset {
		for _, s := range b.slots {
			b.resolve(s, resp.Err(fsm.ErrUnblocked))
		}
		clear(b.slots)
		b.byDeadline = b.byDeadline[:0]
	}
	added := false
	for _, w := range ev.Blocked {
		if _, ok := b.slots[w.ID]; ok {
			continue
		}
		s := &blockSlot{id: w.ID, deadline: w.Deadline, created: now, done: make(chan resp.Value, 1), heapIdx: -1}
		b.slots[w.ID] = s
		if s.deadline != 0 {
			heap.Push(&b.byDeadline, s)
			added = true
		}
	}
	for _, d := range ev.Deferred {
		if s := b.slots[d.ID]; s != nil {
			b.resolve(s, d.Reply)
		}
	}
	if added {
		b.wake()
	}
}

// resolve gives s its reply (once) and forgets it unless a connection may
// still claim it. b.mu is held.
func (b *blockRegistry) resolve(s *blockSlot, v resp.Value) {
	if !s.resolved {
		s.resolved = true
		s.done <- v
	}
	if s.heapIdx >= 0 {
		heap.Remove(&b.byDeadline, s.heapIdx)
	}
	if s.claimed || s.abandoned {
		delete(b.slots, s.id)
	}
}

// claim attaches the connection that proposed the command that blocked as
// waiter id; nil if this node does not know the waiter (it stopped leading
// the group meanwhile).
func (b *blockRegistry) claim(id fsm.WaiterID, hashSlot uint16) *blockSlot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.slots[id]
	if s == nil || s.claimed || s.abandoned {
		return nil
	}
	s.claimed, s.hashSlot = true, hashSlot
	if s.resolved {
		delete(b.slots, id)
	}
	return s
}

// abandon: the client of s went away before its reply; the leader unblocks
// the waiter so it takes no element.
func (b *blockRegistry) abandon(s *blockSlot) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.claimed, s.abandoned = false, true
	if s.resolved {
		delete(b.slots, s.id)
		return
	}
	b.wake()
}

// failClaimed answers every blocked client once this node no longer leads
// the group: MOVED to the new leader when it is known, else after
// blockGrace UNBLOCKED. It forgets every waiter: claims now fail.
func (b *blockRegistry) failClaimed(now time.Time, final bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	claimed := false
	for _, s := range b.slots {
		claimed = claimed || (s.claimed && !s.resolved)
	}
	if !claimed {
		b.lostAt = time.Time{}
		return
	}
	if b.lostAt.IsZero() {
		b.lostAt = now
	}
	g := b.g
	leader, ok := g.node.Leader(g)
	known := ok && leader.ID != g.node.self.ID && leader.ClientAddr != ""
	if !known && !final && now.Sub(b.lostAt) < blockGrace {
		return
	}
	for _, s := range b.slots {
		if !s.claimed || s.resolved {
			continue
		}
		v := resp.Err(fsm.ErrUnblocked)
		if known {
			v = resp.Err(resp.ErrMoved(s.hashSlot, leader.ClientAddr))
		}
		b.resolve(s, v)
	}
	clear(b.slots)
	b.byDeadline = b.byDeadline[:0]
	b.lostAt = time.Time{}
}

// due lists the waiters to unblock now (deadline passed, client gone,
// never claimed) and drops what no connection will claim; it returns the
// time of the next deadline (zero if none).
func (b *blockRegistry) due(now time.Time, leader bool) ([]fsm.WaiterID, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	nowMs := now.UnixMilli()
	var ids []fsm.WaiterID
	retry := func(s *blockSlot) bool { return s.proposed.IsZero() || now.Sub(s.proposed) >= blockRetry }
	for _, s := range b.slots {
		if len(ids) == maxUnblockBatch {
			break
		}
		orphan := !s.claimed && !s.abandoned && now.Sub(s.created) > blockOrphanAge
		switch {
		case orphan && (s.resolved || !leader):
			b.resolve(s, resp.Value{})
			delete(b.slots, s.id)
		case !leader || s.resolved:
		case (s.abandoned || orphan || (s.deadline != 0 && s.deadline < nowMs)) && retry(s):
			s.proposed = now
			ids = append(ids, s.id)
		}
	}
	var next time.Time
	if len(b.byDeadline) > 0 {
		next = time.UnixMilli(b.byDeadline[0].deadline + 1)
	}
	return ids, next
}

// blockLoop runs on every replica of the group: as leader it clears the
// previous terms' waiters and unblocks the due ones; otherwise it answers
// the clients still blocked here.
func (g *Group) blockLoop() {
	b := g.blocks
	tick := time.NewTicker(blockTick)
	defer tick.Stop()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var cleared uint64 // term whose EntryClearWaiters is applied
	for {
		select {
		case <-g.ctx.Done():
			b.failClaimed(time.Now(), true)
			return
		case <-tick.C:
		case <-timer.C:
		case <-b.kick:
		}
		now := time.Now()
		leader := g.IsLeader()
		if !leader {
			b.failClaimed(now, false)
		} else if term := g.raft.CurrentTerm(); term != cleared {
			if g.proposeBlocking(&fsm.Entry{Type: fsm.EntryClearWaiters}) == nil {
				cleared = term
			}
		}
		ids, next := b.due(now, leader)
		if len(ids) > 0 {
			_ = g.proposeBlocking(fsm.UnblockEntry(ids))
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
	}
}

func (g *Group) proposeBlocking(e *fsm.Entry) error {
	ctx, cancel := context.WithTimeout(g.ctx, blockProposeWait)
	defer cancel()
	err := g.proposeEntry(ctx, e)
	if err != nil {
		g.log.Debug("blocking: entry not proposed", "type", e.Type, "err", err)
	}
	return err
}

// slotHeap orders waiters by deadline.
type slotHeap []*blockSlot

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h slotHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *slotHeap) Push(x any) {
	s := x.(*blockSlot)
	s.heapIdx = len(*h)
	*h = append(*h, s)
}
func (h *slotHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.heapIdx = -1
	return s
}

// waitBlocked waits for the reply of args, a command of c that blocked as
// waiter id in group g: served, timed out, or ended because this node
// stopped leading g. It also ends when the client goes away or the server
// closes.
func (s *Server) waitBlocked(c *client, g *Group, id fsm.WaiterID, args [][]byte) resp.Value {
	var hashSlot uint16
	if cmd := s.table.lookup(args[0]); cmd != nil {
		if keys := cmd.meta.KeysOf(args); len(keys) > 0 {
			hashSlot = slots.Of(keys[0])
		}
	}
	slot := g.blocks.claim(id, hashSlot)
	if slot == nil {
		// This node stopped leading g since it proposed the command.
		if g.IsLeader() {
			_ = g.proposeBlocking(fsm.UnblockEntry([]fsm.WaiterID{id}))
		}
		if leader, ok := s.n.Leader(g); ok && leader.ID != s.n.Self().ID && leader.ClientAddr != "" {
			return resp.Err(resp.ErrMoved(hashSlot, leader.ClientAddr))
		}
		return resp.Err(fsm.ErrUnblocked)
	}
	var gone <-chan struct{}
	if c.watch != nil {
		var stop func()
		gone, stop = c.watch.watch()
		defer stop()
	}
	select {
	case v := <-slot.done:
		return v
	case <-gone:
		g.blocks.abandon(slot)
		c.closing = true
		return resp.NullArray()
	case <-s.ctx.Done():
		g.blocks.abandon(slot)
		c.closing = true
		return resp.Err(fsm.ErrUnblocked)
	}
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
