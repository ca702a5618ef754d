package proxy

import (
	"bytes"
	"time"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Transactions. A transaction lives on one node connection, as on a Redis
// Cluster node: MULTI opens it on the node of the WATCHed slot, else on
// the home node, and it moves to the leader of the first key's slot (the
// proxy sends DISCARD there and MULTI and the commands queued so far to
// the leader). Every command of a transaction runs with the pipeline
// drained, its reply from the node that queued it. Nothing of a
// transaction reaches a Raft log before EXEC, so when its node stops
// leading (MOVED, CLUSTERDOWN, a broken connection) it is replayed on the
// new leader, EXEC included — unless keys are WATCHed: a watch lives on
// the node that took it, so the transaction then aborts, EXEC answering a
// null reply as when a watched key changed. Keys of another slot than the
// transaction's are refused with CROSSSLOT when queued, and EXEC aborts.

// txState is the session's MULTI and WATCH state (the reading
// goroutine's).
type txState struct {
	multi  bool
	dirty  bool       // a command was refused while queuing: EXEC aborts
	be     *backend   // where MULTI is open
	slot   int        // the transaction's slot (-1: none yet)
	queued [][][]byte // the commands queued, replayed when it moves
	watch  *backend   // where WATCH ran; nil without WATCH
	// watchLost: the watched node no longer serves the slot for this
	// client: EXEC will answer null.
	watchLost bool
}

// txCommand runs MULTI, EXEC, DISCARD, WATCH or UNWATCH outside a
// transaction's queue.
func (s *session) txCommand(name string, args [][]byte) {
	s.waitWritten()
	switch name {
	case "multi":
		s.txMulti(args)
	case "exec":
		s.txExec(args)
	case "discard":
		s.txDiscard(args)
	case "watch":
		s.txWatch(args)
	case "unwatch":
		s.txUnwatch()
	}
}

func (s *session) txMulti(args [][]byte) {
	if s.tx.multi {
		s.answerErr(resp.ErrMultiNested)
		return
	}
	if s.tx.watch == nil {
		s.tx.slot = -1
	}
	s.tx.multi, s.tx.dirty, s.tx.queued = true, false, nil
	if s.tx.watch != nil && (s.tx.watchLost || !s.tx.watch.alive()) {
		s.tx.watchLost = true // EXEC answers null: nothing to open
		s.answer(resp.OK().Append(nil, s.proto()))
		return
	}
	addr := s.p.homeAddr()
	if s.tx.watch != nil {
		addr = s.tx.watch.addr
	}
	f, ok := s.txOpen(addr, args)
	switch {
	case !ok || isErrorFrame(f): // NOAUTH, NOPERM: no transaction, as on the node
		s.tx.multi, s.tx.be = false, nil
	case s.tx.watch != nil && s.tx.be != s.tx.watch:
		s.tx.watchLost = true // opened on another connection than the watch's
	}
	s.answerFrame(f, ok)
}

// txQueue queues a command of an open transaction on its node.
func (s *session) txQueue(meta *resp.Command, args [][]byte) {
	s.waitWritten()
	slot := -1
	if keys := meta.KeysOf(args); len(keys) > 0 {
		slot = int(slots.Of(keys[0]))
	}
	if slot >= 0 && s.tx.slot >= 0 && slot != s.tx.slot {
		s.tx.dirty = true
		s.answerErr(resp.ErrCrossSlot)
		return
	}
	if slot >= 0 {
		s.tx.slot = slot
	}
	if s.tx.watchLost {
		s.answer(resp.Queued().Append(nil, s.proto())) // EXEC aborts whatever the node says
		return
	}
	f, ok := s.txRun(meta, args)
	switch {
	case !ok && s.tx.watch != nil:
		s.tx.watchLost = true
		s.answer(resp.Queued().Append(nil, s.proto()))
		return
	case ok && isErrorFrame(f):
		s.tx.dirty = true // the node flagged its transaction; a replay must abort too
	case ok:
		s.tx.queued = append(s.tx.queued, cloneArgs(args))
	}
	s.answerFrame(f, ok)
}

// txExec runs EXEC: replayed on a new leader while nothing ran, a null
// reply once a watch is lost.
func (s *session) txExec(args [][]byte) {
	if !s.tx.multi {
		s.answerErr(resp.ErrExecWithoutMulti) // the watches stay, as on the node
		return
	}
	tx := s.tx
	s.tx = txState{slot: -1}
	switch {
	case tx.dirty || tx.watchLost:
		s.discardOn(tx.be)
		if tx.watch != nil && tx.watch != tx.be {
			s.discardOn(tx.watch)
		}
		if tx.dirty {
			s.answerErr(resp.ErrExecAbort)
		} else {
			s.answer(resp.NullArray().Append(nil, s.proto()))
		}
		return
	}
	s.tx = tx
	f, ok := s.txRun(nil, args)
	watched := s.tx.watch != nil
	s.tx = txState{slot: -1}
	if !ok && watched {
		s.answer(resp.NullArray().Append(nil, s.proto()))
		return
	}
	s.answerFrame(f, ok)
}

func (s *session) txDiscard(args [][]byte) {
	if !s.tx.multi {
		s.answerErr(resp.ErrDiscardWithoutMulti)
		return
	}
	tx := s.tx
	s.tx = txState{slot: -1}
	if tx.watch != nil && tx.watch != tx.be {
		s.discardOn(tx.watch)
	}
	if tx.be == nil || !tx.be.alive() {
		s.answer(resp.OK().Append(nil, s.proto()))
		return
	}
	c := s.roundTrip(tx.be, nil, args)
	s.answerFrame(c.frame(), c.err == nil)
}

// txWatch runs WATCH on the keys' slot leader (a read: redirects are
// followed). Keys of another slot than earlier WATCHes get CROSSSLOT.
func (s *session) txWatch(args [][]byte) {
	if s.tx.multi {
		s.answerErr(resp.ErrWatchInMulti)
		return
	}
	slot := int(slots.Of(args[1]))
	if s.tx.watch != nil && slot != s.tx.slot {
		s.answerErr(resp.ErrCrossSlot)
		return
	}
	c := newCall(nil, args, slot)
	f := s.exchange(c, "")
	if f == nil {
		return
	}
	if !isErrorFrame(f) && c.be != nil {
		if s.tx.watch != nil && s.tx.watch != c.be {
			s.tx.watchLost = true // the earlier keys were watched on a node that no longer leads
		}
		s.tx.watch, s.tx.slot = c.be, slot
	}
	s.answer(f)
}

func (s *session) txUnwatch() {
	if s.tx.watch != nil && s.tx.watch.alive() {
		s.roundTrip(s.tx.watch, nil, [][]byte{[]byte("UNWATCH")})
	}
	s.tx = txState{slot: -1}
	s.answer(resp.OK().Append(nil, s.proto()))
}

// txRun runs a queued command or EXEC on the transaction's node, moving
// the transaction to its slot's leader first and again after a redirect,
// until RetryFor. ok is false when a watch is lost (the caller aborts) or
// the session ended; when the time is up, f is CLUSTERDOWN.
func (s *session) txRun(meta *resp.Command, args [][]byte) (f []byte, ok bool) {
	exec := resp.EqualFold(args[0], "exec")
	deadline := time.Now().Add(s.p.o.RetryFor)
	target := ""
	for pause := time.Duration(0); ; {
		if time.Now().After(deadline) {
			return errFrame(resp.ErrClusterDown, s.proto()), true
		}
		want := target
		if want == "" {
			want = s.txTarget()
		}
		target = ""
		if want != "" && (s.tx.be == nil || !s.tx.be.alive() || s.tx.be.addr != want) {
			if s.tx.watch != nil {
				return nil, false // the watch stays where it was taken
			}
			if f, opened := s.txOpen(want, [][]byte{[]byte("MULTI")}); opened && isErrorFrame(f) {
				return f, true // MULTI refused there (NOAUTH after a password change)
			}
		}
		if want != "" && s.tx.be != nil && s.tx.be.addr == want {
			c := s.roundTrip(s.tx.be, meta, args)
			r, redirected := parseRedirect(c.frame())
			switch {
			case c.err == nil && !redirected:
				return c.frame(), true
			case c.err != nil && exec:
				return errFrame(errOutcomeUnknown, s.proto()), true // EXEC may have been proposed
			case s.tx.watch != nil:
				return nil, false
			}
			target = r.addr // "" after CLUSTERDOWN, TRYAGAIN or a broken connection
			s.discardOn(s.tx.be)
			s.tx.be = nil // its node flagged the transaction: open it anew
		}
		pause = min(max(2*pause, minRetryPause), maxRetryPause)
		if !s.sleep(pause) {
			return nil, false
		}
	}
}

// txTarget is where the transaction belongs now: its slot's leader, else
// the node it is open on (or home).
func (s *session) txTarget() string {
	if s.tx.watch != nil {
		return s.tx.watch.addr
	}
	if s.tx.slot >= 0 {
		addr, _ := s.p.leaderAddr(uint16(s.tx.slot))
		return addr
	}
	if s.tx.be != nil && s.tx.be.alive() {
		return s.tx.be.addr
	}
	return s.p.homeAddr()
}

// txOpen opens the transaction on addr: DISCARD where it was open, then
// multi (the client's MULTI) and every command queued so far. f is
// MULTI's reply; opened is false when addr could not take it (a broken
// connection, a redirect), true with a queued command's error flagging
// the transaction.
func (s *session) txOpen(addr string, multi [][]byte) (f []byte, opened bool) {
	s.discardOn(s.tx.be)
	s.tx.be = nil
	b, err := s.backendFor(addr)
	if err != nil {
		if re, isReply := err.(*replyError); isReply {
			return re.frame, true
		}
		return nil, false
	}
	calls := []*call{newCall(nil, multi, -1)}
	for _, q := range s.tx.queued {
		calls = append(calls, newCall(nil, q, -1))
	}
	if b.send(calls...) != nil || b.flush() != nil {
		return nil, false
	}
	for i, c := range calls {
		if !s.await(c) || c.err != nil {
			return nil, false
		}
		if _, isRedirect := parseRedirect(c.frame()); isRedirect {
			s.discardOn(b)
			return nil, false
		}
		if i > 0 && isErrorFrame(c.frame()) {
			s.tx.dirty = true
		}
	}
	if isErrorFrame(calls[0].frame()) {
		return calls[0].frame(), true
	}
	s.tx.be = b
	return calls[0].frame(), true
}

// discardOn ends whatever transaction or watch the connection b holds.
func (s *session) discardOn(b *backend) {
	if b == nil || !b.alive() {
		return
	}
	s.roundTrip(b, nil, [][]byte{[]byte("DISCARD")})
}

// roundTrip sends a command on b and waits for its reply (no redirect
// followed: the caller judges it).
func (s *session) roundTrip(b *backend, meta *resp.Command, args [][]byte) *call {
	c := newCall(meta, args, -1)
	if err := b.send(c); err != nil {
		c.finish(nil, err)
		return c
	}
	_ = b.flush()
	s.await(c)
	return c
}

// answerFrame queues f, or the error of a command the session gave up on.
func (s *session) answerFrame(f []byte, ok bool) {
	if !ok || f == nil {
		f = errFrame(resp.ErrClusterDown, s.proto())
	}
	s.answer(f)
}

// alive reports whether the connection still works.
func (b *backend) alive() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err == nil
}

func isErrorFrame(f []byte) bool {
	_, isErr := resp.FrameError(f)
	return isErr
}

// cloneArgs copies arguments that outlive the request buffer.
func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = bytes.Clone(a)
	}
	return out
}
