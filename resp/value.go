package resp

import (
	"math"
	"strconv"
	"strings"
)

// Kind says which RESP type a Value renders as.
type Kind uint8

// Reply kinds. Null and NullArray differ only in RESP2 ($-1 vs *-1).
const (
	KindNull Kind = iota
	KindNullArray
	KindStatus
	KindError
	KindInt
	KindBulk
	KindArray
	KindMap
	KindSet
	KindDouble
	KindBool
	KindVerbatim
	KindPush
	KindBigNumber
	KindPairs
	KindPairMap
)

// Value is a reply that does not yet know the protocol of the client it goes to.
// Apply runs on every replica, but only the leader's reply is rendered, for a
// client that may speak RESP2 or RESP3, so commands build Values, not bytes.
type Value struct {
	Kind  Kind
	Str   []byte  // status, error (full text with its prefix), bulk, verbatim
	Int   int64   // integer, bool (0/1)
	Float float64 // double
	Elems []Value // array, set, push; map as key, value, key, value…
}

// Protocol versions a client may select with HELLO.
const (
	RESP2 = 2
	RESP3 = 3
)

var (
	okValue     = Value{Kind: KindStatus, Str: []byte("OK")}
	queuedValue = Value{Kind: KindStatus, Str: []byte("QUEUED")}
)

// Null is the nil bulk string ($-1 in RESP2, _ in RESP3).
func Null() Value { return Value{Kind: KindNull} }

// NullArray is the nil array (*-1 in RESP2, _ in RESP3).
func NullArray() Value { return Value{Kind: KindNullArray} }

// OK is +OK.
func OK() Value { return okValue }

// Queued is +QUEUED.
func Queued() Value { return queuedValue }

// Status is a simple string.
func Status(s string) Value { return Value{Kind: KindStatus, Str: []byte(s)} }

// Int is an integer reply.
func Int(n int64) Value { return Value{Kind: KindInt, Int: n} }

// Bulk is a bulk string; b is kept, not copied.
func Bulk(b []byte) Value {
	if b == nil {
		b = []byte{}
	}
	return Value{Kind: KindBulk, Str: b}
}

// BulkString is a bulk string from a Go string.
func BulkString(s string) Value { return Value{Kind: KindBulk, Str: []byte(s)} }

// Array is an array of values.
func Array(elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{Kind: KindArray, Elems: elems}
}

// BulkArray is an array of bulk strings.
func BulkArray(items [][]byte) Value {
	elems := make([]Value, len(items))
	for i, it := range items {
		elems[i] = Bulk(it)
	}
	return Value{Kind: KindArray, Elems: elems}
}

// Map is a map reply given as alternating keys and values; RESP2 sees a flat array.
func Map(kvs ...Value) Value {
	if kvs == nil {
		kvs = []Value{}
	}
	return Value{Kind: KindMap, Elems: kvs}
}

// Set is a set reply; RESP2 sees an array.
func Set(elems ...Value) Value {
	if elems == nil {
		elems = []Value{}
	}
	return Value{Kind: KindSet, Elems: elems}
}

// Double is a floating point reply; RESP2 sees a bulk string.
func Double(f float64) Value { return Value{Kind: KindDouble, Float: f} }

// DoubleText is a double reply spelled as text (for replies Redis formats
// itself, such as geo coordinates): a RESP3 double, a bulk string in RESP2.
func DoubleText(f float64, text []byte) Value {
	return Value{Kind: KindDouble, Float: f, Str: text}
}

// Bool is a boolean reply; RESP2 sees the integer 1 or 0.
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, Int: 1}
	}
	return Value{Kind: KindBool}
}

// Verbatim is a verbatim string with a 3-letter format such as "txt"; RESP2 sees a bulk string.
func Verbatim(format string, text []byte) Value {
	return Value{Kind: KindVerbatim, Str: append([]byte(format+":"), text...)}
}

// Pairs is a list of pairs given flat (a1, b1, a2, b2…): RESP2 sees the flat
// array, RESP3 an array of two-element arrays, as Redis 7 replies to
// ZRANGE … WITHSCORES or HRANDFIELD … WITHVALUES.
func Pairs(flat ...Value) Value {
	if flat == nil {
		flat = []Value{}
	}
	return Value{Kind: KindPairs, Elems: flat}
}

// PairMap is a map given flat (k1, v1, k2, v2…) that RESP2 sees as an
// array of [key, value] arrays, as Redis 7.2 replies to XREAD.
func PairMap(flat ...Value) Value {
	if flat == nil {
		flat = []Value{}
	}
	return Value{Kind: KindPairMap, Elems: flat}
}

// Push is an out-of-band push message (pub/sub); RESP2 sees an array.
func Push(elems ...Value) Value { return Value{Kind: KindPush, Elems: elems} }

// Err is an error reply. Errors made with NewError keep their Redis text;
// any other error is sent as "ERR <text>".
func Err(err error) Value {
	return Value{Kind: KindError, Str: []byte(ErrorText(err))}
}

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == KindError }

// Append renders v for a client speaking protocol proto (RESP2 or RESP3).
func (v Value) Append(buf []byte, proto int) []byte {
	resp3 := proto >= RESP3
	switch v.Kind {
	case KindNull:
		if resp3 {
			return append(buf, "_\r\n"...)
		}
		return append(buf, "$-1\r\n"...)
	case KindNullArray:
		if resp3 {
			return append(buf, "_\r\n"...)
		}
		return append(buf, "*-1\r\n"...)
	case KindStatus:
		return appendLine(buf, '+', v.Str)
	case KindError:
		return appendLine(buf, '-', v.Str)
	case KindInt:
		return appendHeader(buf, ':', v.Int)
	case KindBulk:
		return appendBulk(buf, '$', v.Str)
	case KindVerbatim:
		if resp3 {
			return appendBulk(buf, '=', v.Str)
		}
		return appendBulk(buf, '$', v.Str[min(4, len(v.Str)):])
	case KindDouble:
		if v.Str != nil { // a double with the exact text Redis sends
			if resp3 {
				return appendLine(buf, ',', v.Str)
			}
			return appendBulk(buf, '$', v.Str)
		}
		if resp3 {
			return appendLine(buf, ',', FormatDouble(v.Float, true))
		}
		return appendBulk(buf, '$', FormatDouble(v.Float, false))
	case KindBool:
		if resp3 {
			if v.Int != 0 {
				return append(buf, "#t\r\n"...)
			}
			return append(buf, "#f\r\n"...)
		}
		return appendHeader(buf, ':', v.Int)
	case KindBigNumber:
		if resp3 {
			return appendLine(buf, '(', v.Str)
		}
		return appendBulk(buf, '$', v.Str)
	case KindMap:
		if resp3 {
			buf = appendHeader(buf, '%', int64(len(v.Elems)/2))
		} else {
			buf = appendHeader(buf, '*', int64(len(v.Elems)))
		}
	case KindSet:
		buf = appendHeader(buf, pick(resp3, '~', '*'), int64(len(v.Elems)))
	case KindPush:
		buf = appendHeader(buf, pick(resp3, '>', '*'), int64(len(v.Elems)))
	case KindPairs:
		if resp3 {
			return appendPairs(buf, v.Elems, proto)
		}
		buf = appendHeader(buf, '*', int64(len(v.Elems)))
	case KindPairMap:
		if !resp3 {
			return appendPairs(buf, v.Elems, proto)
		}
		buf = appendHeader(buf, '%', int64(len(v.Elems)/2))
	default: // KindArray
		buf = appendHeader(buf, '*', int64(len(v.Elems)))
	}
	for _, e := range v.Elems {
		buf = e.Append(buf, proto)
	}
	return buf
}

func appendPairs(buf []byte, flat []Value, proto int) []byte {
	buf = appendHeader(buf, '*', int64(len(flat)/2))
	for i := 0; i+1 < len(flat); i += 2 {
		buf = append(buf, "*2\r\n"...)
		buf = flat[i].Append(buf, proto)
		buf = flat[i+1].Append(buf, proto)
	}
	return buf
}

func pick(cond bool, a, b byte) byte {
	if cond {
		return a
	}
	return b
}

func appendHeader(buf []byte, prefix byte, n int64) []byte {
	buf = append(buf, prefix)
	buf = strconv.AppendInt(buf, n, 10)
	return append(buf, '\r', '\n')
}

func appendLine(buf []byte, prefix byte, s []byte) []byte {
	buf = append(buf, prefix)
	for _, c := range s {
		if c == '\r' || c == '\n' {
			c = ' ' // a status or error line must stay one line
		}
		buf = append(buf, c)
	}
	return append(buf, '\r', '\n')
}

func appendBulk(buf []byte, prefix byte, s []byte) []byte {
	buf = appendHeader(buf, prefix, int64(len(s)))
	buf = append(buf, s...)
	return append(buf, '\r', '\n')
}

// FormatDouble formats f as Redis 7.2's d2string does for double replies,
// in RESP2 and RESP3 alike: "inf", "-inf", "nan", "0"/"-0"; an integral
// value with |f| <= 2^62 as an integer ("1234567", "5000"); otherwise the
// shortest digits that read back as f, laid out like Redis's fpconv_dtoa:
// plain when the exponent is small ("1.5", "0.00001", "123.456"),
// scientific with an unpadded exponent otherwise ("1e+20", "1.5e-7").
func FormatDouble(f float64, resp3 bool) []byte {
	if b, ok := FormatNonFinite(f); ok {
		return b
	}
	switch {
	case f == 0:
		if math.Signbit(f) {
			return []byte("-0")
		}
		return []byte("0")
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(nil, int64(f), 10)
	}
	return appendDtoa(nil, f)
}

// FormatDtoa formats f as Redis's fpconv_dtoa: "inf", "-inf", "nan",
// "0"/"-0", else appendDtoa's layout (integral values too: 1e+17).
func FormatDtoa(f float64) []byte {
	if b, ok := FormatNonFinite(f); ok {
		return b
	}
	if f == 0 {
		if math.Signbit(f) {
			return []byte("-0")
		}
		return []byte("0")
	}
	return appendDtoa(nil, f)
}

// appendDtoa lays out the shortest digits of f (non-zero, finite) as
// fpconv_dtoa's emit_digits does: value = digits * 10^k.
func appendDtoa(buf []byte, f float64) []byte {
	if f < 0 {
		buf = append(buf, '-')
		f = -f
	}
	e := strconv.AppendFloat(nil, f, 'e', -1, 64) // d[.ddd]e±XX
	mant, expPart, _ := strings.Cut(string(e), "e")
	digits := strings.Replace(mant, ".", "", 1)
	dexp, _ := strconv.Atoi(expPart) // exponent of the first digit
	nd := len(digits)
	k := dexp - (nd - 1)
	absExp := dexp
	if absExp < 0 {
		absExp = -absExp
	}
	switch {
	case k >= 0 && absExp < nd+7: // plain integer
		buf = append(buf, digits...)
		return append(buf, strings.Repeat("0", k)...)
	case k < 0 && (k > -7 || absExp < 4): // plain decimal
		if off := nd + k; off <= 0 {
			buf = append(buf, "0."...)
			buf = append(buf, strings.Repeat("0", -off)...)
			return append(buf, digits...)
		} else {
			buf = append(buf, digits[:off]...)
			buf = append(buf, '.')
			return append(buf, digits[off:]...)
		}
	}
	buf = append(buf, digits[0])
	if nd > 1 {
		buf = append(buf, '.')
		buf = append(buf, digits[1:]...)
	}
	buf = append(buf, 'e')
	if dexp < 0 {
		buf = append(buf, '-')
	} else {
		buf = append(buf, '+')
	}
	return strconv.AppendInt(buf, int64(absExp), 10)
}

// FormatNonFinite spells infinities and NaN as Redis does ("inf", "-inf",
// "nan", as glibc's printf does too); ok is false for a finite f.
func FormatNonFinite(f float64) (b []byte, ok bool) {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf"), true
	case math.IsInf(f, -1):
		return []byte("-inf"), true
	case math.IsNaN(f):
		return []byte("nan"), true
	}
	return nil, false
}
