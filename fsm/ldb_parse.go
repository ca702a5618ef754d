package fsm

// The debugger reads its commands from the client's bytes as Redis's
// ldbReplParseCommand does (eval.c): "a joke… the simplest thing that
// works", forgiving before the first '*' and strict after it. Its quirks
// are kept, since a client sees them: it works on a C string (a NUL byte
// ends the searches and the input), takes counts with atoi, and accepts
// 1 to 1024 arguments of 1 to 1024 bytes each.

// ldbParseStatus is what parseLDBCommand found.
type ldbParseStatus uint8

const (
	ldbNeedMore      ldbParseStatus = iota // no whole command yet: read more
	ldbParsed                              // a command
	ldbProtocolError                       // Redis's "protocol error"
)

const ldbMaxArg = 1024 // most arguments, and most bytes in one

// parseLDBCommand parses the command at the start of buf.
func parseLDBCommand(buf []byte) ([][]byte, ldbParseStatus) {
	if len(buf) == 0 {
		return nil, ldbNeedMore
	}
	star := cIndexByte(buf, 0, '*')
	if star < 0 {
		return nil, ldbProtocolError
	}
	eol := cIndexCRLF(buf, star)
	if eol < 0 {
		return nil, ldbNeedMore
	}
	argc := cAtoi(buf[star+1 : eol])
	if argc <= 0 || argc > ldbMaxArg {
		return nil, ldbProtocolError
	}
	p := eol + 2
	argv := make([][]byte, 0, argc)
	for len(argv) < argc {
		if p >= len(buf) || buf[p] == 0 {
			return nil, ldbNeedMore
		}
		if buf[p] != '$' {
			return nil, ldbProtocolError
		}
		eol = cIndexCRLF(buf, p)
		if eol < 0 {
			return nil, ldbNeedMore
		}
		n := cAtoi(buf[p+1 : eol])
		p = eol + 2
		if n <= 0 || n > ldbMaxArg {
			return nil, ldbProtocolError
		}
		if p+n+2 > len(buf) {
			return nil, ldbNeedMore
		}
		argv = append(argv, buf[p:p+n:p+n])
		p += n
		if buf[p] != '\r' || buf[p+1] != '\n' {
			return nil, ldbProtocolError
		}
		p += 2
	}
	return argv, ldbParsed
}

// cIndexByte is strchr on buf[from:] read as a C string: -1 when c is not
// there before a NUL byte or the end.
func cIndexByte(buf []byte, from int, c byte) int {
	for i := from; i < len(buf) && buf[i] != 0; i++ {
		if buf[i] == c {
			return i
		}
	}
	return -1
}

// cIndexCRLF is strstr(buf+from, "\r\n") on a C string.
func cIndexCRLF(buf []byte, from int) int {
	for i := from; i+1 < len(buf) && buf[i] != 0; i++ {
		if buf[i] == '\r' && buf[i+1] == '\n' {
			return i
		}
	}
	return -1
}

// cAtoi is C's atoi as glibc has it: leading white space, a sign, the
// digits up to the first other byte, strtol's saturation at 64 bits, then
// the cast to a 32-bit int.
func cAtoi(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var u uint64
	over := false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if u > (1<<63)/10 {
			over = true
			continue
		}
		u = u*10 + uint64(b[i]-'0')
		if u > 1<<63 {
			over = true
		}
	}
	var v int64
	switch {
	case over && neg:
		v = -1 << 63
	case over:
		v = 1<<63 - 1
	case neg:
		v = -int64(u)
	default:
		v = int64(u)
		if u == 1<<63 {
			v = 1<<63 - 1
		}
	}
	return int(int32(v))
}
