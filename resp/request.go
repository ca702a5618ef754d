package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Request is one command read from a client. Args are its arguments and
// Raw the bytes it took on the wire (network accounting). Both alias the
// reader's buffer: they are valid until the next call of Read.
type Request struct {
	Raw  []byte
	Args [][]byte
}

// ErrQueryBufferLimit: one command needs more than Limits.MaxQueryBuffer
// bytes of buffer. Redis closes such a client without a reply
// ("closing client that reached max query buffer length").
var ErrQueryBufferLimit = errors.New("resp: the client reached the max query buffer length")

// ErrUnbalancedQuotes is Redis's reply to an inline request whose quotes do
// not close (sdssplitargs fails).
var ErrUnbalancedQuotes = &ProtocolError{"ERR Protocol error: unbalanced quotes in request"}

// RequestReader parses a client's requests, multibulk or inline, exactly
// once: Read returns every command complete in the buffer (a pipeline) with
// arguments that point into the buffer, and the limits Redis puts on a
// client (Limits) are checked on the way, so a client that breaks one never
// makes the reader buffer what it announced. A command split across reads
// is resumed where its parse stopped, not parsed again from its start.
type RequestReader struct {
	rd     io.Reader
	limits Limits
	buf    []byte
	r, w   int // buf[r:w] is read and not yet returned as a request
	cur    reqParse
	need   int   // bytes from r the request in progress needs at least
	err    error // found after the requests already returned
	reqs   []Request
	args   [][]byte // backing array of the returned requests' Args
}

// reqParse is the parse of the request starting at RequestReader.r.
type reqParse struct {
	started bool
	inline  bool
	pos     int   // where the parse resumes
	left    int64 // multibulk arguments not yet read
	bounds  []int // start, end of each argument read so far
	count   int64 // the multibulk's argument count
}

// minRead is the free space a read gets at least; bufKeep is the largest
// buffer kept once empty (a big command's buffer is let go after it).
const (
	minRead = 16 * 1024
	bufKeep = 64 * 1024
)

// NewRequestReader reads requests from rd with limits (zero fields:
// Redis's defaults).
func NewRequestReader(rd io.Reader, limits Limits) *RequestReader {
	return &RequestReader{rd: rd, limits: limits.withDefaults()}
}

// Read returns the next requests: at least one, or an error. A protocol
// violation is a *ProtocolError whose text is Redis's reply; the requests
// before it are returned first. A read error, too, comes after every
// complete request read before it.
func (rr *RequestReader) Read() ([]Request, error) {
	rr.reqs, rr.args = rr.reqs[:0], rr.args[:0]
	for {
		if rr.err != nil {
			return nil, rr.err
		}
		rr.need = 0
		if err := rr.parseAll(); err != nil {
			rr.err = err
		}
		if len(rr.reqs) > 0 {
			return rr.reqs, nil
		}
		if rr.err != nil {
			continue
		}
		if err := rr.fill(); err != nil {
			rr.err = err
		}
	}
}

// Buffered is how many bytes are read and not yet returned as requests.
func (rr *RequestReader) Buffered() int { return rr.w - rr.r }

// Sizes are the bytes in the buffer (the requests last returned included,
// as Redis's query buffer holds the command being run) and the room left
// after them: CLIENT LIST's qbuf and qbuf-free.
func (rr *RequestReader) Sizes() (used, free int) { return rr.w, len(rr.buf) - rr.w }

// parseAll appends to rr.reqs every request complete in the buffer.
func (rr *RequestReader) parseAll() error {
	for rr.r < rr.w {
		done, err := rr.parseOne()
		if err != nil || !done {
			return err
		}
	}
	return nil
}

// parseOne advances the request at rr.r; done when it is complete (and
// appended, unless it is empty, which Redis skips) or skipped.
func (rr *RequestReader) parseOne() (done bool, err error) {
	p := &rr.cur
	if !p.started {
		*p = reqParse{started: true, pos: rr.r, inline: rr.buf[rr.r] != '*', bounds: p.bounds[:0]}
	}
	if p.inline {
		return rr.parseInline()
	}
	return rr.parseMultibulk()
}

// next ends the current request at end, appending args (if any) as a
// request.
func (rr *RequestReader) next(end int, args [][]byte) {
	if len(args) > 0 {
		rr.reqs = append(rr.reqs, Request{Raw: rr.buf[rr.r:end:end], Args: args})
	}
	rr.r = end
	rr.cur.started = false
}

// parseInline reads a request line as Redis does: up to '\n' (a '\r'
// before it dropped), split by sdssplitargs' rules.
func (rr *RequestReader) parseInline() (bool, error) {
	p := &rr.cur
	i := bytes.IndexByte(rr.buf[p.pos:rr.w], '\n')
	if i < 0 {
		p.pos = rr.w
		if rr.w-rr.r > rr.limits.MaxInlineLen {
			return false, ErrProtoInlineTooBig
		}
		return false, nil
	}
	nl := p.pos + i
	if nl-rr.r > rr.limits.MaxInlineLen {
		return false, ErrProtoInlineTooBig
	}
	line := rr.buf[rr.r:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(line)
	if !ok {
		return false, ErrUnbalancedQuotes
	}
	rr.next(nl+1, args)
	return true, nil
}

// parseMultibulk reads "*<count>\r\n" then count "$<len>\r\n<bytes>\r\n",
// resuming at p.pos.
func (rr *RequestReader) parseMultibulk() (bool, error) {
	p := &rr.cur
	if p.pos == rr.r { // the count line
		n, end, err := rr.lengthLine(p.pos, true)
		if err != nil || end < 0 {
			return false, err
		}
		if n <= 0 { // Redis skips empty multibulks
			rr.next(end, nil)
			return true, nil
		}
		p.pos, p.count, p.left = end, n, n
	}
	for p.left > 0 {
		if p.pos >= rr.w {
			return false, nil
		}
		if rr.buf[p.pos] != '$' {
			return false, errExpectedDollar(rr.buf[p.pos])
		}
		n, end, err := rr.lengthLine(p.pos, false)
		if err != nil || end < 0 {
			return false, err
		}
		if int64(rr.w-end) < n+2 {
			need := int64(end-rr.r) + n + 2
			if need > rr.limits.MaxQueryBuffer {
				return false, ErrQueryBufferLimit
			}
			rr.need = int(need)
			return false, nil
		}
		p.bounds = append(p.bounds, end, end+int(n))
		p.pos, p.left = end+int(n)+2, p.left-1 // the CRLF after the body is not checked, as in Redis
	}
	rr.next(p.pos, rr.argsOf(p.bounds))
	return true, nil
}

// argsOf slices the arguments at bounds out of the buffer.
func (rr *RequestReader) argsOf(bounds []int) [][]byte {
	from := len(rr.args)
	for i := 0; i < len(bounds); i += 2 {
		rr.args = append(rr.args, rr.buf[bounds[i]:bounds[i+1]:bounds[i+1]])
	}
	return rr.args[from:len(rr.args):len(rr.args)]
}

// lengthLine parses the "*<n>\r\n" or "$<n>\r\n" line at i: its value and
// the index after it, or end -1 while the line is incomplete.
func (rr *RequestReader) lengthLine(i int, multibulk bool) (n int64, end int, err error) {
	tooBig, invalid := ErrProtoBulkCountBig, ErrProtoBulkLength
	if multibulk {
		tooBig, invalid = ErrProtoMbulkCountBig, ErrProtoMultibulkLength
	}
	j := bytes.IndexByte(rr.buf[i:rr.w], '\n')
	if j < 0 {
		if rr.w-i > rr.limits.MaxInlineLen {
			return 0, 0, tooBig
		}
		return 0, -1, nil
	}
	if j > rr.limits.MaxInlineLen {
		return 0, 0, tooBig
	}
	var num numParser
	for _, c := range rr.buf[i+1 : i+j] {
		num.add(c)
	}
	n, ok := num.value()
	switch {
	case multibulk && (!ok || n > rr.limits.MaxMultibulkLen):
		return 0, 0, invalid
	case !multibulk && (!ok || n < 0 || n > rr.limits.MaxBulkLen):
		return 0, 0, invalid
	}
	return n, i + j + 1, nil
}

// fill reads more bytes, first making room: the request in progress moves
// to the front of the buffer, which grows when that is not enough.
func (rr *RequestReader) fill() error {
	rr.compact()
	free := len(rr.buf) - rr.w
	room := rr.need > 0 && len(rr.buf) >= rr.need && free > 0 // the body in progress fits
	if free < minRead && !room {
		if int64(rr.w) >= rr.limits.MaxQueryBuffer {
			return ErrQueryBufferLimit
		}
		// A bulk body of known length gets its room at once, not by doubling.
		size := min(int64(max(2*len(rr.buf), rr.w+minRead, rr.need)), rr.limits.MaxQueryBuffer+minRead)
		nb := make([]byte, size)
		copy(nb, rr.buf[:rr.w])
		rr.buf = nb
	}
	n, err := rr.rd.Read(rr.buf[rr.w:])
	rr.w += n
	if n > 0 || err == nil {
		return nil
	}
	return fmt.Errorf("resp: reading requests: %w", err)
}

// compact moves buf[r:w] to the front (the returned requests are no longer
// in use: Read's contract) and drops a big buffer once it is empty.
func (rr *RequestReader) compact() {
	if rr.r == 0 {
		return
	}
	shift := rr.r
	if rr.r == rr.w && len(rr.buf) > bufKeep {
		rr.buf = nil
	} else {
		copy(rr.buf, rr.buf[rr.r:rr.w])
	}
	rr.w -= shift
	rr.r = 0
	p := &rr.cur
	if p.started {
		p.pos -= shift
		for i := range p.bounds {
			p.bounds[i] -= shift
		}
	}
}
