package proxy

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// handle serves one request; false when the connection is to end (QUIT).
// The reading goroutine's.
func (s *session) handle(args [][]byte) bool {
	r, meta, name, ok := ruleOf(s.p.o.Commands, args)
	if !ok {
		// Unknown, or a wrong number of arguments: the home node answers
		// with Redis's error (after NOAUTH, as Redis checks).
		s.forwardTo(meta, args, s.p.homeAddr())
		return true
	}
	if !r.subscribed && s.subscribedRESP2() {
		s.answerErr(resp.ErrSubscribedContext(name))
		return true
	}
	if s.tx.multi && !r.txNow {
		if r.noTx || r.kind == kindRefuse {
			s.tx.dirty = true // refused while queuing: EXEC aborts, as in Redis
			s.answerErr(errInMulti(name))
			return true
		}
		s.txQueue(meta, args)
		return true
	}
	switch r.kind {
	case kindSplit:
		s.split(r, meta, args)
	case kindTx:
		s.txCommand(name, args)
	case kindSubscribe:
		s.subscribe(name, meta, args)
	case kindSession:
		s.sessionCommand(name, args)
	case kindLocal:
		return s.local(name, args)
	case kindFanout:
		s.fanout(r, name, meta, args)
	case kindRefuse:
		s.answerErr(errRefused(name, r.why))
	default:
		s.forward(meta, name, args, r.keylessToLeader)
	}
	return true
}

// forward sends a command by its keys to its slot's leader, a keyless one
// to the home node (to slot 0's leader with toLeader). A blocking command
// holds the pipeline until it is answered, as Redis does: what the client
// sent after it runs after it.
func (s *session) forward(meta *resp.Command, name string, args [][]byte, toLeader bool) {
	keys := meta.KeysOf(args)
	if len(keys) == 0 && toLeader {
		keys = [][]byte{nil} // slot 0's
	}
	if len(keys) == 0 {
		addr := s.p.homeAddr()
		if name == "ping" && s.subscribedRESP2() {
			addr = s.subscribedAddr() // a subscribed node answers PING as Redis does there
		}
		s.forwardTo(meta, args, addr)
		return
	}
	// Keys of several slots go to the first key's: its node answers
	// CROSSSLOT, after its NOAUTH and NOPERM checks.
	c := newCall(meta, args, int(slots.Of(keys[0])))
	s.dispatch(c, "", true)
	s.enqueue(&entry{calls: []*call{c}})
	if meta.Is(resp.FlagBlocking) {
		s.watchClient(s.waitWritten)
	}
}

// forwardTo sends a keyless command to addr.
func (s *session) forwardTo(meta *resp.Command, args [][]byte, addr string) {
	c := newCall(meta, args, -1)
	s.dispatch(c, addr, true)
	s.enqueue(&entry{calls: []*call{c}})
}
