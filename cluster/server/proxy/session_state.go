package proxy

import (
	"bytes"
	"strconv"

	"github.com/slotraft/slotraft/resp"
)

// The connection's state that lives on every backend connection: the
// protocol (HELLO), the user (AUTH, HELLO AUTH), the name and library
// (CLIENT SETNAME, SETINFO), NO-TOUCH. A state command is checked by the
// home node first (its reply is the client's), then sent on every other
// open backend connection; one that refuses it is closed, so no
// connection ever serves the client with an identity the client does not
// have now. A new connection replays the state before anything else
// (backend.replay).

// connState is what a new backend connection replays.
type connState struct {
	proto      int
	user, pass []byte // nil: the client never authenticated
	name       []byte
	lib, ver   []byte
	noTouch    bool
}

// replay is the state as commands, in an order every node accepts.
func (st connState) replay() [][][]byte {
	var out [][][]byte
	if st.proto == resp.RESP3 || st.user != nil || st.name != nil {
		hello := [][]byte{[]byte("HELLO"), []byte(strconv.Itoa(st.proto))}
		if st.user != nil {
			hello = append(hello, []byte("AUTH"), st.user, st.pass)
		}
		if st.name != nil {
			hello = append(hello, []byte("SETNAME"), st.name)
		}
		out = append(out, hello)
	}
	if st.lib != nil {
		out = append(out, [][]byte{[]byte("CLIENT"), []byte("SETINFO"), []byte("LIB-NAME"), st.lib})
	}
	if st.ver != nil {
		out = append(out, [][]byte{[]byte("CLIENT"), []byte("SETINFO"), []byte("LIB-VER"), st.ver})
	}
	if st.noTouch {
		out = append(out, [][]byte{[]byte("CLIENT"), []byte("NO-TOUCH"), []byte("ON")})
	}
	return out
}

// apply is the state after args (a state command the home node accepted).
func (st connState) apply(name string, args [][]byte) connState {
	switch name {
	case "auth":
		st.user, st.pass = []byte("default"), bytes.Clone(args[len(args)-1])
		if len(args) == 3 {
			st.user = bytes.Clone(args[1])
		}
	case "hello":
		st = st.applyHello(args)
	case "client|setname":
		st.name = bytes.Clone(args[2])
		if len(st.name) == 0 {
			st.name = nil // an empty name removes it
		}
	case "client|setinfo":
		v := bytes.Clone(args[3])
		if resp.EqualFold(args[2], "lib-name") {
			st.lib = v
		} else {
			st.ver = v
		}
	case "client|no-touch":
		st.noTouch = resp.EqualFold(args[2], "on")
	}
	return st
}

// applyHello reads HELLO [protover [AUTH username password] [SETNAME name]].
func (st connState) applyHello(args [][]byte) connState {
	if len(args) > 1 {
		if v, err := resp.ParseInt(args[1]); err == nil {
			st.proto = int(v)
		}
	}
	for i := 2; i < len(args); i++ {
		switch {
		case resp.EqualFold(args[i], "auth") && i+2 < len(args):
			st.user, st.pass = bytes.Clone(args[i+1]), bytes.Clone(args[i+2])
			i += 2
		case resp.EqualFold(args[i], "setname") && i+1 < len(args):
			st.name = bytes.Clone(args[i+1])
			i++
		}
	}
	return st
}

// sessionCommand runs a state command: on the home node, then, once it
// accepted it, on every other backend connection.
func (s *session) sessionCommand(name string, args [][]byte) {
	s.waitWritten()
	home := s.p.homeAddr()
	c := newCall(nil, args, -1)
	f := s.exchange(c, home)
	if f == nil {
		return
	}
	if _, isErr := resp.FrameError(f); isErr {
		s.answer(f)
		return
	}
	s.mu.Lock()
	s.state = s.state.apply(name, args)
	proto := s.state.proto
	s.mu.Unlock()
	if c.be != nil {
		c.be.proto.Store(int32(proto))
	}
	for _, b := range s.openBackends() {
		if b.addr == home {
			continue
		}
		o := newCall(nil, args, -1)
		s.sendTo(o, b.addr, false)
		_ = b.flush()
		if !s.await(o) {
			return
		}
		if _, isErr := resp.FrameError(o.frame()); isErr || o.err != nil {
			b.fail(errClosed) // it would serve the client as it was before
			continue
		}
		b.proto.Store(int32(proto))
	}
	s.answer(f)
}

// replyMode is CLIENT REPLY's state, kept by the proxy: a node's
// connection always answers, and the proxy drops what the client turned
// off.
type replyMode struct {
	off, skip bool
}

// silence reports whether the next reply is dropped (consuming a SKIP).
func (m *replyMode) silence() bool {
	if m.skip {
		m.skip = false
		return true
	}
	return m.off
}

// local runs a command the proxy answers itself; false to end the
// connection.
func (s *session) local(name string, args [][]byte) bool {
	switch name {
	case "client|reply":
		return s.clientReply(args)
	case "quit":
		s.waitWritten()
		s.enqueue(&entry{out: resp.OK().Append(nil, s.proto()), closeAfter: true})
		return false
	case "reset":
		s.reset()
	}
	return true
}

// clientReply is CLIENT REPLY ON|OFF|SKIP; another argument goes to the
// home node, which answers Redis's error.
func (s *session) clientReply(args [][]byte) bool {
	switch {
	case resp.EqualFold(args[2], "on"):
		s.reply = replyMode{}
		s.answer(resp.OK().Append(nil, s.proto()))
	case resp.EqualFold(args[2], "off"):
		s.reply.off = true
	case resp.EqualFold(args[2], "skip"):
		if !s.reply.off {
			s.reply.skip = true
		}
	default:
		s.forwardTo(nil, args, s.p.homeAddr())
	}
	return true
}

// reset is RESET: every backend connection closed (which drops their
// transactions, watches and subscriptions), the state back to a new
// connection's, +RESET.
func (s *session) reset() {
	s.waitWritten()
	s.mu.Lock()
	s.state = connState{proto: resp.RESP2}
	s.subs.init() // first: closing the connections ends no subscription with a push
	s.mu.Unlock()
	for _, b := range s.openBackends() {
		b.fail(errClosed)
	}
	s.pushes.take() // a message that came before RESET is not one after it
	s.tx = txState{}
	s.reply = replyMode{}
	s.answer(resp.Status("RESET").Append(nil, resp.RESP2))
}
