package proxy

import (
	"bytes"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// call is one command sent on one backend connection, and its reply. A
// call sent again (a redirect followed) is the same call, reset: the slot
// gate (route.go) keeps its place in the slot's order.
type call struct {
	wire []byte        // the command as written
	args [][]byte      // its arguments, aliasing wire
	meta *resp.Command // nil for the proxy's own commands (state replay, ASKING)
	slot int           // the slot of its keys; -1 without keys
	to   string        // a keyless call's node (its slot's leader otherwise)
	// sub, for the subscribe family, gathers its confirmations.
	sub *expectSub
	// gated: admitted to its slot's gate (route.go), released once settled.
	gated bool

	created time.Time
	be      *backend      // where it was last sent
	done    chan struct{} // closed once frames or err is set
	frames  [][]byte      // the reply: one frame, or a subscribe family's confirmations
	err     error         // the connection broke (errNotSent: before anything was written)
}

// expectSub is what a subscribe-family command is answered with: one
// confirmation of kind per channel (any channels when channels is nil,
// then count of them), or a single error.
type expectSub struct {
	kind     string
	channels [][]byte
	count    int
}

// newCall makes a call of args; meta nil for the proxy's own commands.
func newCall(meta *resp.Command, args [][]byte, slot int) *call {
	wire, argv := encode(args)
	return &call{wire: wire, args: argv, meta: meta, slot: slot, created: time.Now(), done: make(chan struct{})}
}

// encode writes args as a command and returns the arguments re-sliced
// into the encoded bytes: the call owns one copy, which outlives the
// client's read buffer.
func encode(args [][]byte) ([]byte, [][]byte) {
	size := 16
	for _, a := range args {
		size += len(a) + 16
	}
	wire := make([]byte, 0, size)
	wire = append(wire, '*')
	wire = appendInt(wire, len(args))
	argv := make([][]byte, len(args))
	for i, a := range args {
		wire = append(wire, '$')
		wire = appendInt(wire, len(a))
		start := len(wire)
		wire = append(wire, a...)
		argv[i] = wire[start:len(wire):len(wire)]
		wire = append(wire, '\r', '\n')
	}
	return wire, argv
}

// appendInt appends n (not negative) in decimal and CRLF.
func appendInt(b []byte, n int) []byte {
	var tmp [20]byte
	i := len(tmp)
	if n == 0 {
		i--
		tmp[i] = '0'
	}
	for n > 0 {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
	}
	b = append(b, tmp[i:]...)
	return append(b, '\r', '\n')
}

// internalCall is one of the proxy's own commands.
func internalCall(args ...string) *call {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return newCall(nil, b, -1)
}

// reset readies c to be sent again.
func (c *call) reset() {
	c.done = make(chan struct{})
	c.frames, c.err, c.be = nil, nil, nil
}

// finish completes c with a frame or an error (the backend's reader, or
// the router for a call that could not be sent).
func (c *call) finish(frame []byte, err error) {
	if frame != nil {
		c.frames = append(c.frames, frame)
	}
	c.err = err
	close(c.done)
}

// frame is the reply of a call answered with one frame.
func (c *call) frame() []byte {
	if len(c.frames) == 0 {
		return nil
	}
	return c.frames[0]
}

// wants reports whether a subscribe-family confirmation of kind for
// channel answers c.
func (c *call) wants(kind string, channel []byte) bool {
	if c.sub == nil || c.sub.kind != kind {
		return false
	}
	if c.sub.channels == nil {
		return true
	}
	return len(c.frames) < len(c.sub.channels) && bytes.Equal(c.sub.channels[len(c.frames)], channel)
}

// take adds frame to c's reply; true when c is complete.
func (c *call) take(frame []byte) bool {
	c.frames = append(c.frames, frame)
	if c.sub == nil || frame[0] == '-' || frame[0] == '!' {
		return true
	}
	if c.sub.channels != nil {
		return len(c.frames) == len(c.sub.channels)
	}
	return len(c.frames) >= c.sub.count
}

// readOnly: c changes nothing (a read that does not block), so it may be
// sent again after its connection broke.
func (c *call) readOnly() bool {
	return c.meta != nil && c.meta.Is(resp.FlagReadOnly) && !c.meta.Is(resp.FlagBlocking)
}

// blocking: c may wait on its node for data (BLPOP, XREAD BLOCK…).
func (c *call) blocking() bool { return c.meta != nil && c.meta.Is(resp.FlagBlocking) }
