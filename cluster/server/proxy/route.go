package proxy

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// Routing and redirects. A call goes to its slot's leader as the node's
// map knows it. Its reply may be a redirect, which only ever answers a
// command that never reached a Raft log (design.md, "Redirect only what
// never reached the log"): -MOVED and -ASK name where to send it, -TRYAGAIN
// and -CLUSTERDOWN (an election, a migration) ask for a pause. The proxy
// follows them itself, for up to RetryFor; the client never sees one. A
// call whose connection broke after it was written is sent again only if
// it changes nothing (a read that does not block); any other gets
// errOutcomeUnknown.
//
// Order within a slot: a session's calls of one slot go to one node at a
// time (gate). When the node answers one with a redirect, no new call of
// that slot is sent until those in flight are settled, and a call is sent
// again only if no later call of its slot, already sent to the same node,
// was run there (it would run after it): that one gets errReordered, an
// error, never a reply out of order.

// gate orders one slot's calls of a session.
type gate struct {
	calls []*call // admitted and not yet settled, in order
	addr  string  // where they were sent
	hold  bool    // a redirect is being followed: admit nothing new
}

// Pauses between tries of a call that waits for a leader.
const (
	minRetryPause = 10 * time.Millisecond
	maxRetryPause = 250 * time.Millisecond
)

var errNoLeader = errors.New("proxy: no leader known for the slot")

// dispatch sends c to addr ("" for its slot's leader); through the slot's
// gate when gated (the pipeline's calls), directly for a command run with
// the pipeline drained. A call that cannot be sent is completed with the
// reason, which settle judges. The reading goroutine's.
func (s *session) dispatch(c *call, addr string, gated bool) {
	if c.slot < 0 {
		c.to = addr
	} else if addr == "" {
		addr, _ = s.p.leaderAddr(uint16(c.slot)) // "" when no leader is known
	}
	if gated && c.slot >= 0 && !s.admit(c, addr) {
		c.finish(nil, notSent(errClosed))
		return
	}
	if addr == "" {
		c.finish(nil, notSent(errNoLeader))
		return
	}
	if b := s.sendTo(c, addr, false); b != nil {
		s.markDirty(b)
	}
}

// sendTo writes c (after ASKING when asking) on the session's connection
// to addr, opening it if needed, and returns the connection to flush; a
// failure completes c (and returns nil).
func (s *session) sendTo(c *call, addr string, asking bool) *backend {
	b, err := s.backendFor(addr)
	if err != nil {
		c.finish(nil, err)
		return nil
	}
	calls := []*call{c}
	if asking {
		calls = []*call{internalCall("ASKING"), c}
	}
	if err := b.send(calls...); err != nil {
		c.finish(nil, err)
		return nil
	}
	return b
}

// exchange runs c with the pipeline drained: sent to addr ("" for its
// slot's leader), redirects followed; its final reply frame, nil if the
// session ended.
func (s *session) exchange(c *call, addr string) []byte {
	s.dispatch(c, addr, false)
	s.flushBackends()
	return s.settle(c, false)
}

// admit waits until c may be sent to addr for its slot: no call of the
// slot is in flight elsewhere, and no redirect is being followed.
func (s *session) admit(c *call, addr string) bool {
	slot := uint16(c.slot)
	flushed := false
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		g := s.gates[slot]
		if g == nil {
			g = &gate{}
			s.gates[slot] = g
		}
		if len(g.calls) == 0 || (!g.hold && g.addr == addr) {
			g.addr = addr
			g.calls = append(g.calls, c)
			c.gated = true
			return true
		}
		if s.ctx.Err() != nil {
			return false
		}
		if !flushed { // what it waits for may still be unsent
			s.mu.Unlock()
			s.flushBackends()
			s.mu.Lock()
			flushed = true
			continue
		}
		s.cond.Wait()
	}
}

// release takes a settled call out of its slot's gate.
func (s *session) release(c *call) {
	if !c.gated {
		return
	}
	c.gated = false
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gates[uint16(c.slot)]
	if g == nil {
		return
	}
	for i, d := range g.calls {
		if d == c {
			g.calls = append(g.calls[:i], g.calls[i+1:]...)
			break
		}
	}
	if len(g.calls) == 0 {
		delete(s.gates, uint16(c.slot))
		s.cond.Broadcast()
	}
}

// hold stops admitting calls of c's slot until those in flight settle.
func (s *session) hold(c *call) {
	s.mu.Lock()
	if g := s.gates[uint16(c.slot)]; g != nil {
		g.hold = true
	}
	s.mu.Unlock()
}

// blockedGrace is how long a later blocking call is given to answer
// before it counts as run (a BLPOP that blocks on its node ran there).
const blockedGrace = 100 * time.Millisecond

// laterRan reports whether a call of c's slot sent after c to the node
// that redirected c ran there: c must not then be sent again.
func (s *session) laterRan(c *call, from string) bool {
	s.mu.Lock()
	var later []*call
	if g := s.gates[uint16(c.slot)]; g != nil && g.addr == from {
		seen := false
		for _, d := range g.calls {
			if seen {
				later = append(later, d)
			}
			seen = seen || d == c
		}
	}
	s.mu.Unlock()
	for _, d := range later {
		wait := s.p.o.RetryFor
		if d.blocking() {
			wait = blockedGrace
		}
		t := time.NewTimer(wait)
		select {
		case <-d.done:
			t.Stop()
		case <-t.C:
			return true
		case <-s.ctx.Done():
			t.Stop()
			return true
		}
		if d.err == nil {
			if _, redirected := parseRedirect(d.frame()); !redirected {
				return true
			}
		}
	}
	return false
}

// settle waits for c's outcome and follows redirects until it has a reply
// for the client (writer: from the writer, which writes messages while it
// waits); nil if the session ended.
func (s *session) settle(c *call, writer bool) []byte {
	defer s.release(c)
	pause := time.Duration(0)
	for tries := 0; ; tries++ {
		ok := false
		if writer {
			ok = s.waitWriter(c)
		} else {
			ok = s.await(c)
		}
		if !ok {
			return nil
		}
		frame, addr, asking, again := s.judge(c)
		if !again {
			return frame
		}
		s.p.redirects.Add(1)
		if c.gated {
			s.hold(c)
		}
		if addr == "" || tries > 1 { // wait for a leader, or a redirect loop
			pause = min(max(2*pause, minRetryPause), maxRetryPause)
			if !s.sleep(pause) {
				return nil
			}
		}
		c.reset()
		if addr == "" {
			if addr, ok = s.p.leaderAddr(uint16(c.slot)); !ok {
				c.finish(nil, notSent(errNoLeader))
				continue
			}
		}
		if b := s.sendTo(c, addr, asking); b != nil {
			_ = b.flush() // a failed flush fails c
		}
	}
}

// judge decides what c's outcome is: the client's reply (again false), or
// where to send c again (addr "" for its slot's leader by the map).
func (s *session) judge(c *call) (frame []byte, addr string, asking, again bool) {
	proto := s.proto()
	expired := time.Since(c.created) > s.p.o.RetryFor
	if c.err != nil {
		var re *replyError
		switch {
		case errors.As(c.err, &re):
			return re.frame, "", false, false
		case !errors.Is(c.err, errNotSent) && !c.readOnly():
			return errFrame(errOutcomeUnknown, proto), "", false, false
		case expired || s.ctx.Err() != nil:
			return errFrame(resp.ErrClusterDown, proto), "", false, false
		}
		return nil, c.to, false, true // a keyless call goes where it went; a slot's to its leader
	}
	f := c.frame()
	if c.slot < 0 || len(c.frames) != 1 {
		return f, "", false, false
	}
	r, ok := parseRedirect(f)
	if !ok || (r.slot >= 0 && r.slot != c.slot) {
		return f, "", false, false // not a redirect, or not about this command's slot
	}
	if expired {
		if r.addr != "" { // never a redirect to the client
			return errFrame(resp.ErrClusterDown, proto), "", false, false
		}
		return f, "", false, false
	}
	if (r.kind == "MOVED" || r.kind == "CLUSTERDOWN") && c.gated && s.laterRan(c, c.be.addr) {
		return errFrame(errReordered, proto), "", false, false
	}
	return nil, r.addr, r.kind == "ASK", true
}

// redirect is a redirect-class error reply.
type redirect struct {
	kind string // MOVED, ASK, TRYAGAIN or CLUSTERDOWN
	slot int    // MOVED's and ASK's; -1 for the others
	addr string
}

// parseRedirect reads a redirect-class error frame.
func parseRedirect(f []byte) (redirect, bool) {
	text, isErr := resp.FrameError(f)
	if !isErr {
		return redirect{}, false
	}
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return redirect{}, false
	}
	switch fields[0] {
	case "TRYAGAIN", "CLUSTERDOWN":
		return redirect{kind: fields[0], slot: -1}, true
	case "MOVED", "ASK":
		if len(fields) != 3 {
			return redirect{}, false
		}
		slot, err := strconv.Atoi(fields[1])
		if err != nil || slot < 0 || slot > 16383 || !strings.Contains(fields[2], ":") {
			return redirect{}, false
		}
		return redirect{kind: fields[0], slot: slot, addr: fields[2]}, true
	}
	return redirect{}, false
}
