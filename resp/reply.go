package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// The other side of the wire: replies as a server sends them, read by a
// client of Redis servers (the proxy). A reply is handled as a frame — its
// bytes, RESP2 or RESP3 — which is passed on as it came or taken apart
// with the Frame helpers below; nothing is rebuilt that need not be.

// ErrBadReply: the bytes are not a RESP2 or RESP3 reply. The connection
// they came on is out of step and cannot be used any more.
var ErrBadReply = errors.New("resp: malformed reply")

// DefaultMaxReply bounds one reply a ReplyReader buffers (a KEYS of a big
// keyspace can be large; a garbage length must not make it allocate
// gigabytes).
const DefaultMaxReply = 1 << 30

// maxReplyLine bounds a reply's header or simple-string line.
const maxReplyLine = 1 << 20

// maxAggregate bounds the element count of one aggregate header.
const maxAggregate = 1 << 32

// ReplyReader reads replies, one complete frame at a time. A frame split
// across reads resumes where its scan stopped: a big reply arriving in
// pieces is scanned once, and a bulk body of known length gets its room
// at once.
type ReplyReader struct {
	rd   io.Reader
	max  int
	buf  []byte
	r, w int // buf[r:w] is read and not yet returned
	scan frameScan
	err  error
}

// frameScan is the scan of the frame starting at ReplyReader.r.
type frameScan struct {
	started bool
	pos     int     // where the scan resumes, an index into buf
	left    []int64 // items still expected by each open aggregate, innermost last
	need    int     // bytes from r the frame needs at least
}

// NewReplyReader reads replies from rd; max bounds one reply (0:
// DefaultMaxReply).
func NewReplyReader(rd io.Reader, max int) *ReplyReader {
	if max <= 0 {
		max = DefaultMaxReply
	}
	return &ReplyReader{rd: rd, max: max}
}

// Next returns the next complete reply. The bytes alias the reader's
// buffer: they are valid until the next call of Next.
func (rr *ReplyReader) Next() ([]byte, error) {
	for {
		if rr.r < rr.w {
			end, err := rr.scanFrame()
			if err != nil {
				rr.err = err
				return nil, err
			}
			if end > 0 {
				f := rr.buf[rr.r:end:end]
				rr.r = end
				rr.scan = frameScan{left: rr.scan.left[:0]}
				return f, nil
			}
		}
		if rr.err != nil {
			return nil, rr.err
		}
		if err := rr.fill(); err != nil {
			rr.err = err
		}
	}
}

// Buffered is how many bytes are read and not yet returned.
func (rr *ReplyReader) Buffered() int { return rr.w - rr.r }

// scanFrame advances the scan of the frame at rr.r: its end once it is
// complete, 0 while bytes are missing.
func (rr *ReplyReader) scanFrame() (int, error) {
	s := &rr.scan
	if !s.started {
		*s = frameScan{started: true, pos: rr.r, left: s.left[:0]}
	}
	for {
		next, need, err := scanItem(rr.buf[:rr.w], s.pos, &s.left)
		if err != nil {
			return 0, err
		}
		if next < 0 {
			s.need = need - rr.r
			if s.need > rr.max {
				return 0, fmt.Errorf("%w: a reply of more than %d bytes", ErrBadReply, rr.max)
			}
			return 0, nil
		}
		s.pos = next
		if len(s.left) == 0 {
			return next, nil
		}
	}
}

// fill reads more bytes, first moving the frame in progress to the front
// of the buffer, which grows when that is not enough.
func (rr *ReplyReader) fill() error {
	if rr.r > 0 {
		shift := rr.r
		copy(rr.buf, rr.buf[rr.r:rr.w])
		rr.w -= shift
		rr.r = 0
		if rr.scan.started {
			rr.scan.pos -= shift
		}
		if rr.w == 0 && len(rr.buf) > bufKeep {
			rr.buf = nil
		}
	}
	free := len(rr.buf) - rr.w
	room := rr.scan.need > 0 && len(rr.buf) >= rr.scan.need && free > 0 // the body in progress fits
	if (free < minRead && !room) || rr.scan.need > len(rr.buf) {
		if rr.w-rr.r > rr.max {
			return fmt.Errorf("%w: a reply of more than %d bytes", ErrBadReply, rr.max)
		}
		nb := make([]byte, max(2*len(rr.buf), rr.w+minRead, rr.scan.need))
		copy(nb, rr.buf[:rr.w])
		rr.buf = nb
	}
	n, err := rr.rd.Read(rr.buf[rr.w:])
	rr.w += n
	if n > 0 || err == nil {
		return nil
	}
	return fmt.Errorf("resp: reading replies: %w", err)
}

// scanItem scans the one item (a header with its body, or a header that
// opens an aggregate) at b[pos:]: it returns where the next item starts,
// having counted this one against the aggregates in left (closing those
// it completes, opening the one its header announces); next is -1 while
// b ends before the item does, need then being how long b must be at
// least.
func scanItem(b []byte, pos int, left *[]int64) (next, need int, err error) {
	if pos >= len(b) {
		return -1, pos + 1, nil
	}
	t := b[pos]
	nl := bytes.IndexByte(b[pos:min(len(b), pos+maxReplyLine)], '\n')
	if nl < 0 {
		if len(b)-pos >= maxReplyLine {
			return 0, 0, fmt.Errorf("%w: a line of more than %d bytes", ErrBadReply, maxReplyLine)
		}
		return -1, len(b) + 1, nil
	}
	lineEnd := pos + nl // the '\n'
	if nl < 2 || b[lineEnd-1] != '\r' {
		return 0, 0, fmt.Errorf("%w: a line not ended by CRLF", ErrBadReply)
	}
	line := b[pos+1 : lineEnd-1]
	next = lineEnd + 1
	switch t {
	case '+', '-', ':', ',', '(', '#', '_':
		if err := checkSimple(t, line); err != nil {
			return 0, 0, err
		}
		closeItems(left)
		return next, 0, nil
	case '$', '!', '=':
		n, ok := parseLength(line)
		if !ok || (n < 0 && (t != '$' || n != -1)) {
			return 0, 0, fmt.Errorf("%w: bad bulk length %q", ErrBadReply, line)
		}
		if n >= 0 {
			end := next + int(n) + 2
			if n > int64(DefaultMaxReply) || end < next {
				return 0, 0, fmt.Errorf("%w: bulk length %d", ErrBadReply, n)
			}
			if end > len(b) {
				return -1, end, nil
			}
			if b[end-2] != '\r' || b[end-1] != '\n' {
				return 0, 0, fmt.Errorf("%w: a bulk body not ended by CRLF", ErrBadReply)
			}
			next = end
		}
		closeItems(left)
		return next, 0, nil
	case '*', '~', '>', '%', '|':
		n, ok := parseLength(line)
		if !ok || n > maxAggregate || (n < 0 && (t != '*' || n != -1)) {
			return 0, 0, fmt.Errorf("%w: bad aggregate length %q", ErrBadReply, line)
		}
		switch {
		case t == '%':
			n *= 2
		case t == '|': // an attribute: its pairs, then the reply it is about
			n = 2*n + 1
		}
		if n <= 0 {
			closeItems(left)
		} else {
			*left = append(*left, n)
		}
		return next, 0, nil
	}
	return 0, 0, fmt.Errorf("%w: unknown type byte %q", ErrBadReply, t)
}

// closeItems counts one complete item against the innermost open
// aggregate, closing every aggregate that it completes.
func closeItems(left *[]int64) {
	l := *left
	for len(l) > 0 {
		l[len(l)-1]--
		if l[len(l)-1] > 0 {
			break
		}
		l = l[:len(l)-1]
	}
	*left = l
}

// checkSimple checks the line of a simple type: a number for ':' and '(',
// t or f for '#', nothing for '_'; any text without CR for the others.
func checkSimple(t byte, line []byte) error {
	bad := false
	switch t {
	case ':':
		_, ok := parseLength(line)
		bad = !ok
	case '(':
		bad = len(line) == 0
	case '#':
		bad = len(line) != 1 || (line[0] != 't' && line[0] != 'f')
	case '_':
		bad = len(line) != 0
	}
	if bad || bytes.IndexByte(line, '\r') >= 0 {
		return fmt.Errorf("%w: bad %q line %q", ErrBadReply, t, line)
	}
	return nil
}

// parseLength reads a signed decimal integer as Redis writes one.
func parseLength(b []byte) (int64, bool) {
	n, err := ParseInt(b)
	return n, err == nil
}

// FrameLen is the length of the complete frame at the start of b; false
// when b holds no complete, well-formed frame.
func FrameLen(b []byte) (int, bool) {
	var left []int64
	pos := 0
	for {
		next, _, err := scanItem(b, pos, &left)
		if err != nil || next < 0 {
			return 0, false
		}
		pos = next
		if len(left) == 0 {
			return pos, true
		}
	}
}

// FrameError is the text of an error frame ('-' or RESP3's '!'), without
// the prefix byte.
func FrameError(f []byte) (string, bool) {
	if len(f) == 0 || (f[0] != '-' && f[0] != '!') {
		return "", false
	}
	s, ok := frameText(f)
	return string(s), ok
}

// FrameInt is the value of an integer frame.
func FrameInt(f []byte) (int64, bool) {
	if len(f) < 3 || f[0] != ':' {
		return 0, false
	}
	n, err := ParseInt(f[1 : len(f)-2])
	return n, err == nil
}

// FrameString is the text of a simple string, bulk string or verbatim
// string frame (without the verbatim format); false for a null or any
// other type.
func FrameString(f []byte) ([]byte, bool) {
	if len(f) == 0 {
		return nil, false
	}
	switch f[0] {
	case '+', '$', '=':
		s, ok := frameText(f)
		if ok && f[0] == '=' {
			if len(s) < 4 {
				return nil, false
			}
			s = s[4:]
		}
		return s, ok
	}
	return nil, false
}

// FrameIsNull reports whether f is a null: RESP3's '_', or RESP2's null
// bulk string or null array.
func FrameIsNull(f []byte) bool {
	return bytes.HasPrefix(f, []byte("_\r\n")) || bytes.HasPrefix(f, []byte("$-1\r\n")) || bytes.HasPrefix(f, []byte("*-1\r\n"))
}

// frameText is the line of a simple frame or the body of a bulk frame.
func frameText(f []byte) ([]byte, bool) {
	nl := bytes.IndexByte(f, '\n')
	if nl < 2 {
		return nil, false
	}
	line := f[1 : nl-1]
	switch f[0] {
	case '$', '!', '=':
		n, ok := parseLength(line)
		if !ok || n < 0 || nl+1+int(n) > len(f) {
			return nil, false
		}
		return f[nl+1 : nl+1+int(n)], true
	}
	return line, true
}

// FrameElems splits an aggregate frame (array, set, push; a map as key,
// value, key, value…) into its elements' frames, which alias f. The type
// byte says which aggregate it was; false for a null or a non-aggregate.
func FrameElems(f []byte) (elems [][]byte, typ byte, ok bool) {
	if len(f) == 0 {
		return nil, 0, false
	}
	typ = f[0]
	switch typ {
	case '*', '~', '>', '%':
	default:
		return nil, typ, false
	}
	nl := bytes.IndexByte(f, '\n')
	if nl < 2 {
		return nil, typ, false
	}
	n, okN := parseLength(f[1 : nl-1])
	if !okN || n < 0 || n > int64(len(f)) {
		return nil, typ, false
	}
	if typ == '%' {
		n *= 2
	}
	elems = make([][]byte, 0, n)
	pos := nl + 1
	for range n {
		l, okL := FrameLen(f[pos:])
		if !okL {
			return nil, typ, false
		}
		elems = append(elems, f[pos:pos+l:pos+l])
		pos += l
	}
	return elems, typ, true
}

// AppendRequest appends args as a command (a RESP array of bulk strings)
// to buf.
func AppendRequest(buf []byte, args [][]byte) []byte {
	buf = appendHeader(buf, '*', int64(len(args)))
	for _, a := range args {
		buf = appendBulk(buf, '$', a)
	}
	return buf
}
