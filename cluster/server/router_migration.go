package server

import (
	"context"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// Routing while a slot migrates (mover.go): the source group's state
// machine's outcome for keys already moved is fsm.OutcomeAsk naming group
// G, which becomes -ASK with G's leader; an ASKING client's next command goes to the
// migration's target group when it is led here; a write to a key being
// copied right now waits for the copy instead of failing with TRYAGAIN.

// frozenWait bounds how long a write waits for its keys' copy to finish.
const frozenWait = 2 * time.Second

// askedGroup is where a command after ASKING for slot goes: the slot's
// migration target when this node leads it (g), or a reply. The client
// came here on an -ASK from the source's leader, so sending it back there
// with -MOVED would bounce it between the two until its redirects run out
// (go-redis: 16, then the -ASK is the caller's error). Instead:
//   - while this node's map has not caught up with the migration yet, wait
//     for it (bounded by flipWait);
//   - when the target's leadership moved elsewhere, -ASK on to its leader
//     (TRYAGAIN while none is known).
//
// With neither g nor a reply the command is routed as without ASKING: the
// slot is no longer migrating (it flipped) or never was.
func (s *Server) askedGroup(c *client, slot uint16) (g *cluster.Group, reply *resp.Value) {
	deadline := time.NewTimer(flipWait)
	defer deadline.Stop()
	for {
		changed := s.n.MapChanged()
		if mig, ok := s.n.Migration(slot); ok {
			return s.askedTarget(c, slot, mig.To)
		}
		if s.n.GroupOf(slot).IsLeader() {
			return nil, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return nil, nil
		case <-s.ctx.Done():
			return nil, nil
		}
	}
}

// askedTarget: the migration target group gid if this node leads it, else
// -ASK to its leader elsewhere, else TRYAGAIN.
func (s *Server) askedTarget(c *client, slot uint16, gid uint32) (*cluster.Group, *resp.Value) {
	g, ok := s.n.Group(gid)
	if ok && g.IsLeader() {
		return g, nil
	}
	v := resp.Err(resp.ErrTryAgain)
	if ok {
		if leader, known := s.n.Leader(g); known && leader.ID != s.n.Self().ID && leader.ClientAddr != "" {
			v = resp.Err(resp.ErrAsk(slot, s.clientAddr(c, leader)))
		}
	}
	return nil, &v
}

// askReply is Redis's -ASK slot host:port for keys of slot that went to
// group gid, with the group's leader, or TRYAGAIN while the group has no
// known leader.
func (s *Server) askReply(c *client, slot uint16, gid uint32) resp.Value {
	if g, found := s.n.Group(gid); found {
		if leader, ok := s.n.Leader(g); ok && leader.ClientAddr != "" {
			return resp.Err(resp.ErrAsk(slot, s.clientAddr(c, leader)))
		}
	}
	return resp.Err(resp.ErrTryAgain)
}

// awaitUnfrozen waits (bounded) while any of keys is being copied out of
// g: a write proposed now would be refused with TRYAGAIN.
func (s *Server) awaitUnfrozen(g *cluster.Group, slot uint16, keys [][]byte) {
	st := g.State()
	if _, ok := st.MigratingOut(slot); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, frozenWait)
	defer cancel()
	for {
		changed := st.FrozenChanged()
		if !st.FrozenIn(keys) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// flipWait bounds how long a command waits for this node's map to catch up
// with a slot's flip.
const flipWait = 200 * time.Millisecond

// awaitFlip is for a command that would be redirected away from the
// target of slot's migration, a group led here: the client was most likely
// sent here by a node whose map already shows the slot moved, and a MOVED
// back would bounce it between the two. It waits (bounded) until this
// node's map no longer shows the migration, and reports whether it did, so
// the command is routed again.
func (s *Server) awaitFlip(slot uint16) bool {
	first := true
	return s.awaitMap(flipWait, func() (bool, bool) {
		defer func() { first = false }()
		mig, ok := s.n.Migration(slot)
		if !ok {
			return true, !first // flipped since the command was routed
		}
		if g, ok := s.n.Group(mig.To); !ok || !g.IsLeader() {
			return true, false
		}
		return false, false
	})
}

// awaitMap checks cond at once and after each change of this node's map,
// until it says done or wait passed (then false): its answer is ok.
func (s *Server) awaitMap(wait time.Duration, cond func() (done, ok bool)) bool {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		changed := s.n.MapChanged()
		if done, ok := cond(); done {
			return ok
		}
		select {
		case <-changed:
		case <-deadline.C:
			return false
		case <-s.ctx.Done():
			return false
		}
	}
}
