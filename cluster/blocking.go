package cluster

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Blocking commands on the leader, the node's half. The waiters themselves
// are replicated state (fsm/blocking.go): a client's BLPOP is proposed like
// any write, and when it blocks its outcome is fsm.OutcomeBlocked naming
// its waiter. The front end then claims the waiter (ClaimWaiter) and waits
// for its end, which the FSM hands over (SetBlockingHook) when an entry
// serves it, times it out, drops it or sends it elsewhere.
//
// The leader keeps the waiters' deadlines in a heap and proposes
// EntryUnblock when they pass, and for waiters whose client went away; a
// new leader proposes EntryClearWaiters once per term. A node that stops
// leading the group keeps its claimed waiters waiting: their commands are
// in the log, and the waiters are still in the replicated state, where an
// entry of the old term that the next leader commits may yet serve them.
// This replica applies the same log as a follower, so it hands over that
// reply, or the UNBLOCKED of the next leader's EntryClearWaiters. Only a
// node that cannot learn how they ended (cut off for blockLostWait, or no
// longer hosting the group) answers them, with an outcome-unknown error:
// never a redirect, which would tell the client that nothing was popped.

const (
	blockTick        = 50 * time.Millisecond
	blockLostWait    = requestTimeout                 // a deposed leader's clients wait this long for their end
	blockOrphanAge   = requestTimeout + 5*time.Second // a waiter nobody claimed: its proposer gave up
	blockRetry       = time.Second                    // between proposals of the same unblock
	blockProposeWait = 2 * time.Second
	maxUnblockBatch  = 512
)

// blockSlot is one waiter of the group as this node knows it.
type blockSlot struct {
	id       fsm.WaiterID
	deadline int64 // unix ms; 0 = none
	created  time.Time
	done     chan BlockEnd // buffered 1: how it ended

	// Guarded by the registry's mu.
	claimed   bool // a connection waits for it
	resolved  bool // its end is in done
	abandoned bool // its client went away: unblock it
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

// unknownEnd is the end of a waiter whose end this node cannot learn: it
// may have been served (an element popped for it) or not.
func unknownEnd() BlockEnd {
	return BlockEnd{Outcome: fsm.Replied(resp.Err(resp.ErrOutcomeUnknown))}
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
		// A waiter the restored state still has goes on waiting; one it
		// lacks was served or dropped in entries this replica skipped, and
		// which is unknown.
		kept := make(map[fsm.WaiterID]bool, len(ev.Blocked))
		for _, w := range ev.Blocked {
			kept[w.ID] = true
		}
		for id, s := range b.slots {
			if !kept[id] {
				b.resolve(s, unknownEnd())
				delete(b.slots, id)
			}
		}
	}
	added := false
	for _, w := range ev.Blocked {
		if _, ok := b.slots[w.ID]; ok {
			continue
		}
		s := &blockSlot{id: w.ID, deadline: w.Deadline, created: now, done: make(chan BlockEnd, 1), heapIdx: -1}
		b.slots[w.ID] = s
		if s.deadline != 0 {
			heap.Push(&b.byDeadline, s)
			added = true
		}
	}
	for _, d := range ev.Deferred {
		if s := b.slots[d.ID]; s != nil {
			b.resolve(s, BlockEnd{Outcome: d.Outcome})
		}
	}
	if added {
		b.wake()
	}
}

// BlockEnd is how a blocked command ended: its outcome in the group's
// state machine, or an error wrapping resp.ErrOutcomeUnknown when this
// node could not learn it.
type BlockEnd struct {
	Outcome fsm.Outcome
}

// Waiter is a blocked command of a group led here, claimed by the
// connection that proposed it (ClaimWaiter).
type Waiter struct {
	b *blockRegistry
	s *blockSlot
}

// ClaimWaiter attaches the caller, which proposed the command that blocked
// as waiter id, to that waiter; nil if this node no longer knows it (a
// snapshot replaced the state meanwhile: Unblock it then; how it ended is
// unknown).
func (g *Group) ClaimWaiter(id fsm.WaiterID) *Waiter {
	s := g.blocks.claim(id)
	if s == nil {
		return nil
	}
	return &Waiter{b: g.blocks, s: s}
}

// Done delivers the waiter's end, once.
func (w *Waiter) Done() <-chan BlockEnd { return w.s.done }

// Abandon: the waiter's client went away; the leader unblocks it so that
// it takes no element.
func (w *Waiter) Abandon() { w.b.abandon(w.s) }

// Unblock ends waiter id of a group led here with its timeout reply,
// proposed through the log: for a waiter nobody could claim.
func (g *Group) Unblock(id fsm.WaiterID) {
	if g.IsLeader() {
		_ = g.proposeBlocking(fsm.UnblockEntry([]fsm.WaiterID{id}))
	}
}

// resolve gives s its end (once) and forgets it unless a connection may
// still claim it. b.mu is held.
func (b *blockRegistry) resolve(s *blockSlot, end BlockEnd) {
	if !s.resolved {
		s.resolved = true
		s.done <- end
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
func (b *blockRegistry) claim(id fsm.WaiterID) *blockSlot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.slots[id]
	if s == nil || s.claimed || s.abandoned {
		return nil
	}
	s.claimed = true
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

// failClaimed answers the claimed waiters that this node, no longer
// leading the group, cannot see end: once it has not led for
// blockLostWait, or at once when it stops hosting the group (final), with
// an outcome-unknown error. Until then they wait for the entry that ends
// them, which this replica applies like any other.
func (b *blockRegistry) failClaimed(now time.Time, leader, final bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	claimed := false
	for _, s := range b.slots {
		claimed = claimed || (s.claimed && !s.resolved)
	}
	if !claimed || (leader && !final) {
		b.lostAt = time.Time{}
		return
	}
	if b.lostAt.IsZero() {
		b.lostAt = now
	}
	if !final && now.Sub(b.lostAt) < blockLostWait {
		return
	}
	for _, s := range b.slots {
		if s.claimed && !s.resolved {
			b.resolve(s, unknownEnd())
		}
	}
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
			b.resolve(s, BlockEnd{})
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
// the clients still blocked here whose end it cannot learn.
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
			b.failClaimed(time.Now(), false, true)
			return
		case <-tick.C:
		case <-timer.C:
		case <-b.kick:
		}
		now := time.Now()
		leader := g.IsLeader()
		b.failClaimed(now, leader, false)
		if term := g.raft.CurrentTerm(); leader && term != cleared {
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
