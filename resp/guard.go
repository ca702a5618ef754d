package resp

import (
	"errors"
	"math"
	"net"
	"sync"
	"time"
)

// Limits are the bounds Redis puts on what a client may send; the command
// reader we use (redcon) enforces none of them. The zero value of a field
// means its default.
type Limits struct {
	// MaxBulkLen bounds one argument (proto-max-bulk-len, 512 MB).
	MaxBulkLen int64
	// MaxMultibulkLen bounds the argument count of one command. Redis 7.2
	// allows up to INT_MAX (Redis 6 and older: 1024*1024).
	MaxMultibulkLen int64
	// MaxInlineLen bounds an inline (telnet-style) request line and any
	// length header line (PROTO_INLINE_MAX_SIZE, 64 KB).
	MaxInlineLen int
}

// Redis 7.2's limits.
const (
	DefaultMaxBulkLen      = 512 * 1024 * 1024
	DefaultMaxMultibulkLen = math.MaxInt32
	DefaultMaxInlineLen    = 64 * 1024
)

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxMultibulkLen <= 0 {
		l.MaxMultibulkLen = DefaultMaxMultibulkLen
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	return l
}

// ProtocolError is a violation of the client protocol found by the guard.
// Its text is the reply Redis sends before closing the connection, such as
// "ERR Protocol error: invalid bulk length".
type ProtocolError struct{ Text string }

func (e *ProtocolError) Error() string { return e.Text }

// The protocol errors of Redis 7.2 (networking.c) that the guard answers.
var (
	ErrProtoBulkLength      = &ProtocolError{"ERR Protocol error: invalid bulk length"}
	ErrProtoMultibulkLength = &ProtocolError{"ERR Protocol error: invalid multibulk length"}
	ErrProtoInlineTooBig    = &ProtocolError{"ERR Protocol error: too big inline request"}
	ErrProtoMbulkCountBig   = &ProtocolError{"ERR Protocol error: too big mbulk count string"}
	ErrProtoBulkCountBig    = &ProtocolError{"ERR Protocol error: too big bulk count string"}
)

func errExpectedDollar(c byte) *ProtocolError {
	return &ProtocolError{"ERR Protocol error: expected '$', got '" + string(rune(c)) + "'"}
}

// GuardListener wraps ln so that every accepted connection is a GuardConn
// with Redis's default limits.
func GuardListener(ln net.Listener) net.Listener { return GuardListenerLimits(ln, Limits{}) }

// GuardListenerLimits is GuardListener with explicit limits.
func GuardListenerLimits(ln net.Listener, l Limits) net.Listener {
	return &guardListener{Listener: ln, limits: l.withDefaults()}
}

type guardListener struct {
	net.Listener
	limits Limits
}

func (gl *guardListener) Accept() (net.Conn, error) {
	c, err := gl.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newGuardConn(c, gl.limits), nil
}

// GuardConn wraps c so that every byte read from it goes through a small
// streaming parser of the client protocol. When a client breaks a limit
// (a bulk longer than 512 MB, more than INT_MAX arguments, an inline request
// or a length line over 64 KB, a malformed length), Read writes Redis's
// error line to c and returns a *ProtocolError instead of the offending
// bytes, so the reader on top never buffers them; the caller then closes
// the connection, as Redis does. Commands complete before the violation
// are delivered first. Well-formed input passes through unchanged, except
// that empty or negative multibulk headers ("*0\r\n", "*-1\r\n"), which
// Redis silently skips, are dropped.
func GuardConn(c net.Conn, l Limits) net.Conn { return newGuardConn(c, l.withDefaults()) }

func newGuardConn(c net.Conn, l Limits) *guardConn {
	return &guardConn{Conn: c, g: guard{limits: l}}
}

type guardConn struct {
	net.Conn
	mu      sync.Mutex // Read may be called from a detached reader
	g       guard
	buf     []byte
	outBuf  []byte // backing array of out
	out     []byte // filtered bytes not yet returned
	pending error  // violation found after the bytes in out
	failed  error
}

func (c *guardConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.out) == 0 {
		if c.failed != nil {
			return 0, c.failed
		}
		if c.pending != nil {
			return 0, c.fail(c.pending)
		}
		if len(c.buf) < len(p) {
			c.buf = make([]byte, min(max(len(p), 4096), 1<<20))
		}
		n, err := c.Conn.Read(c.buf[:min(len(p), len(c.buf))])
		var perr error
		c.out, perr = c.g.feed(c.outBuf[:0], c.buf[:n])
		c.outBuf = c.out[:0]
		if perr != nil {
			c.pending = perr
		}
		if err != nil && len(c.out) == 0 {
			if c.pending != nil {
				return 0, c.fail(c.pending)
			}
			return 0, err
		}
		if err != nil {
			c.failed = err // deliver the data first, then the read error
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

// fail answers the client with the violation's text and remembers it.
func (c *guardConn) fail(err error) error {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = c.Conn.Write([]byte("-" + pe.Text + "\r\n"))
	}
	c.failed = err
	return err
}

// guard is the streaming parser behind GuardConn. Its framing follows
// redcon's reader: a request starting with '*' is a multibulk whose header
// lines end at "\r\n"; anything else is an inline line ending at '\n'.
type guard struct {
	limits Limits
	state  guardState
	args   int64 // arguments left in the current multibulk
	body   int64 // bytes left in the current argument, CRLF included
	line   int   // bytes in the current line
	num    numParser
}

type guardState uint8

const (
	gStart      guardState = iota // before the first byte of a request
	gInline                       // inside an inline line
	gMultibulk                    // inside "*<count>" (after the '*')
	gBulkStart                    // expecting '$'
	gBulkHeader                   // inside "$<len>" (after the '$')
	gBulkBody                     // inside an argument or its CRLF
)

// feed appends to out the bytes of in that may be passed on, and returns a
// *ProtocolError at the first violation (out then holds the bytes before the
// line that broke the rules).
func (g *guard) feed(out, in []byte) ([]byte, error) {
	for i := 0; i < len(in); {
		switch g.state {
		case gStart:
			if in[i] == '*' {
				g.state, g.line = gMultibulk, 1
				g.num = numParser{}
				i++
				continue
			}
			g.state, g.line = gInline, 0
		case gInline:
			j := i
			for j < len(in) && in[j] != '\n' {
				j++
			}
			g.line += j - i
			if g.line > g.limits.MaxInlineLen {
				return out, ErrProtoInlineTooBig
			}
			if j < len(in) {
				g.state = gStart
				j++
			}
			out = append(out, in[i:j]...)
			i = j
		case gMultibulk, gBulkHeader:
			var err error
			if i, err = g.header(in, i); err != nil {
				return out, err
			}
			if g.num.done {
				out = g.endHeader(out)
			}
		case gBulkStart:
			if in[i] != '$' {
				return out, errExpectedDollar(in[i])
			}
			g.state, g.line = gBulkHeader, 1
			g.num = numParser{}
			i++
		case gBulkBody:
			n := min(int64(len(in)-i), g.body)
			out = append(out, in[i:i+int(n)]...)
			i += int(n)
			g.body -= n
			if g.body == 0 {
				g.args--
				g.state = gBulkStart
				if g.args == 0 {
					g.state = gStart
				}
			}
		}
	}
	return out, nil
}

// header consumes bytes of a length line from in[i:] and returns the next
// index; g.num.done is set once the line and its value are complete.
func (g *guard) header(in []byte, i int) (int, error) {
	mb := g.state == gMultibulk
	for ; i < len(in); i++ {
		c := in[i]
		g.line++
		if c == '\n' {
			g.num.done = true
			i++
			break
		}
		if g.line > g.limits.MaxInlineLen {
			if mb {
				return i, ErrProtoMbulkCountBig
			}
			return i, ErrProtoBulkCountBig
		}
		g.num.add(c)
	}
	if !g.num.done {
		return i, nil
	}
	n, ok := g.num.value()
	switch {
	case mb && (!ok || n > g.limits.MaxMultibulkLen):
		return i, ErrProtoMultibulkLength
	case !mb && (!ok || n < 0 || n > g.limits.MaxBulkLen):
		return i, ErrProtoBulkLength
	}
	return i, nil
}

// endHeader emits a complete, valid length line in its canonical form (the
// only form string2ll accepts, so the bytes are those the client sent).
func (g *guard) endHeader(out []byte) []byte {
	n, _ := g.num.value()
	if g.state == gMultibulk {
		if n <= 0 { // Redis skips empty multibulks; redcon would refuse them
			g.state = gStart
			return out
		}
		g.state, g.args = gBulkStart, n
		return appendHeader(out, '*', n)
	}
	g.state, g.body = gBulkBody, n+2
	return appendHeader(out, '$', n)
}

// numParser checks a length line incrementally with string2ll's rules: an
// optional '-', then "0" or a digit 1-9 and more digits, no overflow, the
// line ending in "\r\n".
type numParser struct {
	n      uint64
	digits int
	neg    bool
	bad    bool
	cr     bool // the last byte was '\r'
	done   bool
}

func (p *numParser) add(c byte) {
	if p.cr { // '\r' not followed by '\n'
		p.bad = true
	}
	switch {
	case c == '\r':
		p.cr = true
	case c == '-' && p.digits == 0 && !p.neg:
		p.neg = true
	case c >= '0' && c <= '9':
		if (p.digits == 1 && p.n == 0) || (p.digits == 0 && c == '0' && p.neg) {
			p.bad = true // leading zero, "-0"
		}
		d := uint64(c - '0')
		if p.n > (math.MaxInt64-d)/10 {
			p.bad = true
		} else {
			p.n = p.n*10 + d
		}
		p.digits++
	default:
		p.bad = true
	}
}

// value is the number on a complete line; ok is false if it is malformed.
func (p *numParser) value() (int64, bool) {
	if p.bad || !p.cr || p.digits == 0 {
		return 0, false
	}
	if p.neg {
		return -int64(p.n), true
	}
	return int64(p.n), true
}
