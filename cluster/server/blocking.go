package server

import (
	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Blocked clients at the front end: a command that blocked in its group
// (fsm.OutcomeBlocked) waits here for its end, which the node's waiter
// registry hands over (cluster.Group.ClaimWaiter). While it waits, the connection
// is read ahead to notice the client going away.

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
		gone, stop = c.watch.Watch()
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
