package store

// What a List would take as a Redis listpack, which decides the encoding
// OBJECT ENCODING reports (List.Encoding).

// list-max-listpack-size (Limits.ListSize) decides: a list is a single
// listpack while it would take at most the size class's bytes (default -2:
// 8 KB) or hold at most that many elements (a positive value, with Redis's
// 8 KB safety limit), and a quicklist turns back into a listpack when it
// shrinks to half of that.
const (
	listpackHeader  = 7    // 6-byte header + end byte
	listSafetyLimit = 8192 // Redis's SIZE_SAFETY_LIMIT for a count limit
)

// exceeds is Redis's quicklistNodeExceedsLimit for a listpack of size
// bytes and count elements; with half, the halved limits of the
// shrinking check.
func (l *List) exceeds(size, count int, half bool) bool {
	lim := limitsOr(l.lim)
	if b := lim.listBytes(); b > 0 {
		if half {
			b /= 2
		}
		return size > b
	}
	n := int(max(lim.ListSize, 1)) // a listpack holds at least one element
	if half {
		n /= 2
		return count > n
	}
	return size > listSafetyLimit || count > n
}

// grow records that count elements of raw size add are about to be added:
// Redis converts a listpack that would pass its limit
// (listTypeTryConversionAppend).
func (l *List) grow(add, count int) {
	if !l.quick && l.exceeds(l.lp+listpackHeader+add, l.n+count, false) {
		l.quick = true
	}
}

// shrunk is Redis's LIST_CONV_SHRINKING check after elements went away.
func (l *List) shrunk() {
	if l.quick && !l.exceeds(l.lp+listpackHeader, l.n, true) {
		l.quick = false
	}
}

func (l *List) setLimits(lim *Limits) { l.lim = lim }

func rawSize(vals [][]byte) int {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	return n
}

// lpEntrySize is the size of v as a listpack entry: encoding, data and
// back-length, integers (string2ll syntax) stored as integers.
func lpEntrySize(v []byte) int {
	var enc int
	if x, ok := lpInt(v); ok {
		switch {
		case x >= 0 && x <= 127:
			enc = 1
		case x >= -4096 && x <= 4095:
			enc = 2
		case x >= -1<<15 && x < 1<<15:
			enc = 3
		case x >= -1<<23 && x < 1<<23:
			enc = 4
		case x >= -1<<31 && x < 1<<31:
			enc = 5
		default:
			enc = 9
		}
	} else {
		switch n := len(v); {
		case n < 64:
			enc = 1 + n
		case n < 4096:
			enc = 2 + n
		default:
			enc = 5 + n
		}
	}
	switch {
	case enc <= 127:
		return enc + 1
	case enc < 16383:
		return enc + 2
	case enc < 2097151:
		return enc + 3
	case enc < 268435455:
		return enc + 4
	}
	return enc + 5
}

// lpInt parses v as listpack does (string2ll: no sign '+', no leading
// zeros, no spaces, fits int64).
func lpInt(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	if len(v) == 1 && v[0] == '0' {
		return 0, true
	}
	neg := v[0] == '-'
	d := v
	if neg {
		d = v[1:]
	}
	if len(d) == 0 || d[0] < '1' || d[0] > '9' {
		return 0, false
	}
	if len(d) > 19 { // 20 digits are past int64 whatever they are
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u-1) - 1, true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}
