package resp

import (
	"math"
)

// Limits are the bounds Redis puts on what a client may send, which
// RequestReader enforces. The zero value of a field means its default.
type Limits struct {
	// MaxBulkLen bounds one argument (proto-max-bulk-len, 512 MB).
	MaxBulkLen int64
	// MaxMultibulkLen bounds the argument count of one command. Redis 7.2
	// allows up to INT_MAX (Redis 6 and older: 1024*1024).
	MaxMultibulkLen int64
	// MaxInlineLen bounds an inline (telnet-style) request line and any
	// length header line (PROTO_INLINE_MAX_SIZE, 64 KB).
	MaxInlineLen int
	// MaxQueryBuffer bounds the buffer one command may need
	// (client-query-buffer-limit, 1 GB).
	MaxQueryBuffer int64
}

// Redis 7.2's limits.
const (
	DefaultMaxBulkLen      = 512 * 1024 * 1024
	DefaultMaxMultibulkLen = math.MaxInt32
	DefaultMaxInlineLen    = 64 * 1024
	DefaultMaxQueryBuffer  = 1024 * 1024 * 1024
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
	if l.MaxQueryBuffer <= 0 {
		l.MaxQueryBuffer = DefaultMaxQueryBuffer
	}
	return l
}

// ProtocolError is a violation of the client protocol found by
// RequestReader.
// Its text is the reply Redis sends before closing the connection, such as
// "ERR Protocol error: invalid bulk length".
type ProtocolError struct{ Text string }

func (e *ProtocolError) Error() string { return e.Text }

// The protocol errors of Redis 7.2 (networking.c) that RequestReader finds.
var (
	ErrProtoBulkLength      = &ProtocolError{"ERR Protocol error: invalid bulk length"}
	ErrProtoMultibulkLength = &ProtocolError{"ERR Protocol error: invalid multibulk length"}
	ErrProtoInlineTooBig    = &ProtocolError{"ERR Protocol error: too big inline request"}
	ErrProtoMbulkCountBig   = &ProtocolError{"ERR Protocol error: too big mbulk count string"}
	ErrProtoBulkCountBig    = &ProtocolError{"ERR Protocol error: too big bulk count string"}
)

func errExpectedDollar(c byte) *ProtocolError {
	return &ProtocolError{"ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}

// numParser checks a length line, fed byte by byte, with string2ll's rules: an
// optional '-', then "0" or a digit 1-9 and more digits, no overflow, the
// line ending in "\r\n".
type numParser struct {
	n      uint64
	digits int
	neg    bool
	bad    bool
	cr     bool // the last byte was '\r'
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
