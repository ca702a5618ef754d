package resp

import (
	"math"
	"math/big"
	"strconv"
)

// maxInt64Digits bounds the input of ParseInt like Redis's LONG_STR_SIZE (21):
// no valid 64-bit integer is longer than 20 bytes.
const maxInt64Digits = 20

// ParseInt parses a signed 64-bit integer exactly like Redis's string2ll,
// which every integer argument goes through: an optional '-', then "0" or a
// digit 1-9 followed by digits. No '+', no spaces, no leading zeros, no "-0",
// no overflow. The error is ErrNotInteger.
func ParseInt(b []byte) (int64, error) {
	u, neg, ok := parseDigits(b, true)
	if !ok {
		return 0, ErrNotInteger
	}
	if neg {
		if u > 1<<63 {
			return 0, ErrNotInteger
		}
		return -int64(u), nil // -1<<63 wraps to itself, as wanted
	}
	if u > math.MaxInt64 {
		return 0, ErrNotInteger
	}
	return int64(u), nil
}

// ParseUint parses an unsigned 64-bit integer with string2ll's syntax and no
// sign: "0" or a digit 1-9 followed by digits, up to 18446744073709551615.
// The error is ErrNotInteger.
func ParseUint(b []byte) (uint64, error) {
	u, _, ok := parseDigits(b, false)
	if !ok {
		return 0, ErrNotInteger
	}
	return u, nil
}

// parseDigits reads [-]digits with string2ll's rules into an unsigned value.
func parseDigits(b []byte, allowNeg bool) (u uint64, neg bool, ok bool) {
	if len(b) == 0 || len(b) > maxInt64Digits {
		return 0, false, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, false, true
	}
	if b[0] == '-' {
		if !allowNeg {
			return 0, false, false
		}
		neg, b = true, b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false, false
		}
		d := uint64(c - '0')
		if u > math.MaxUint64/10 || u*10 > math.MaxUint64-d {
			return 0, false, false
		}
		u = u*10 + d
	}
	return u, neg, true
}

// ParseFloat parses a double like Redis's string2d (ZADD scores,
// INCRBYFLOAT-style arguments, GEO coordinates): the syntax of C's strtod with
// nothing before or after the number: [+-] then "inf"/"infinity" (any case),
// a decimal ("1", "1.", ".5", "1e3", "1E-3") or a hexadecimal float
// ("0x1p4", "0x10"). NaN, an empty string, spaces, trailing bytes, overflow
// past ±MaxFloat64 and a non-zero number that underflows to zero are refused
// with ErrNotFloat.
func ParseFloat(b []byte) (float64, error) {
	n, ok := scanFloat(b)
	if !ok {
		return 0, ErrNotFloat
	}
	if n.inf {
		return math.Inf(n.sign()), nil
	}
	f, err := strconv.ParseFloat(n.goSyntax(), 64)
	if err != nil || math.IsInf(f, 0) || (f == 0 && n.nonZero) {
		return 0, ErrNotFloat
	}
	return f, nil
}

// number is a syntactically valid C floating point literal, split up.
type number struct {
	neg      bool
	inf      bool
	hex      bool
	mantissa string // digits with an optional '.', without the 0x prefix
	exp      string // exponent digits with optional sign; "" if none
	nonZero  bool   // some mantissa digit is not zero
}

func (n number) sign() int {
	if n.neg {
		return -1
	}
	return 1
}

// goSyntax renders n for strconv.ParseFloat / big.Float.Parse.
func (n number) goSyntax() string {
	s := ""
	if n.neg {
		s = "-"
	}
	if n.hex {
		exp := n.exp
		if exp == "" {
			exp = "0"
		}
		return s + "0x" + n.mantissa + "p" + exp
	}
	s += n.mantissa
	if n.exp != "" {
		s += "e" + n.exp
	}
	return s
}

// scanFloat accepts exactly the strings that C's strtod consumes whole,
// except NaN (which Redis refuses).
func scanFloat(b []byte) (n number, ok bool) {
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		n.neg = b[0] == '-'
		b = b[1:]
	}
	if EqualFold(b, "inf") || EqualFold(b, "infinity") {
		n.inf = true
		return n, true
	}
	isDigit := isDecDigit
	expChar := byte('e')
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		n.hex, isDigit, expChar = true, isHexDigit, 'p'
		b = b[2:]
	}
	i, digits, dot := 0, 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case isDigit(c):
			digits++
			if c != '0' {
				n.nonZero = true
			}
		case c == '.' && !dot:
			dot = true
		default:
			goto mantissaDone
		}
	}
mantissaDone:
	if digits == 0 {
		return n, false
	}
	n.mantissa = string(b[:i])
	if i == len(b) {
		return n, true
	}
	if b[i]|0x20 != expChar {
		return n, false
	}
	e := b[i+1:]
	j := 0
	if len(e) > 0 && (e[0] == '+' || e[0] == '-') {
		j = 1
	}
	if j == len(e) {
		return n, false
	}
	for _, c := range e[j:] {
		if !isDecDigit(c) {
			return n, false
		}
	}
	n.exp = string(e)
	return n, true
}

func isDecDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHexDigit(c byte) bool {
	return isDecDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f')
}

// FormatFloat renders a double the way INCRBYFLOAT and HINCRBYFLOAT store and
// reply their result: fixed-point notation, never an exponent, at most 17
// decimals, trailing zeros and a trailing '.' removed, "-0" as "0"
// (Redis's ld2string in LD_STR_HUMAN mode, "%.17Lf" then stripped). Go has no
// long double, so the shortest decimal that reads back as f is used when it
// has at most 17 decimals: 10.6 renders as "10.6", 5e3 as "5000", 1e-20 as
// "0". IncrByFloat reproduces Redis's extended-precision sum exactly.
func FormatFloat(f float64) []byte {
	if b, ok := FormatNonFinite(f); ok {
		return b
	}
	out := strconv.AppendFloat(nil, f, 'f', -1, 64)
	if decimals(out) > 17 {
		out = strconv.AppendFloat(out[:0], f, 'f', 17, 64)
	}
	return stripZeros(out)
}

func decimals(s []byte) int {
	for i, c := range s {
		if c == '.' {
			return len(s) - i - 1
		}
	}
	return 0
}

// stripZeros removes trailing zeros after a '.', then the '.', and turns
// "-0" into "0".
func stripZeros(s []byte) []byte {
	if decimals(s) > 0 {
		for s[len(s)-1] == '0' {
			s = s[:len(s)-1]
		}
		if s[len(s)-1] == '.' {
			s = s[:len(s)-1]
		}
	}
	if string(s) == "-0" {
		return []byte("0")
	}
	return s
}

// Long double emulation: Redis computes INCRBYFLOAT and HINCRBYFLOAT in C's
// long double, which on x86-64 (the reference platform) is the x87 80-bit
// format: 64-bit mantissa, exponent range of 15 bits.
const (
	ldPrec    = 64
	ldMaxExp  = 16384  // |x| < 2^16384
	ldMinExp  = -16444 // smallest subnormal is 2^-16445 = 0.5 * 2^-16444
	ldMaxLen  = 5*1024 - 1
	expCutoff = 20000 // decimal exponents beyond this are out of range whatever the mantissa
)

// ParseLongDouble parses b like Redis's string2ld (INCRBYFLOAT, HINCRBYFLOAT)
// into a 64-bit-mantissa big.Float, the precision of x87 long double. It
// accepts what ParseFloat accepts (plus values beyond float64's range that
// fit a long double, such as "1e400"), and also "inf"; the error is
// ErrNotFloat.
func ParseLongDouble(b []byte) (*big.Float, error) {
	if len(b) > ldMaxLen {
		return nil, ErrNotFloat
	}
	n, ok := scanFloat(b)
	if !ok {
		return nil, ErrNotFloat
	}
	x := new(big.Float).SetPrec(ldPrec)
	if n.inf {
		return x.SetInf(n.neg), nil
	}
	if !n.nonZero {
		if n.neg {
			x.Neg(x)
		}
		return x, nil
	}
	if !n.hex && n.exp != "" {
		e, err := strconv.ParseInt(n.exp, 10, 64)
		if err != nil || e > expCutoff || e < -expCutoff {
			return nil, ErrNotFloat // overflow or underflow to zero
		}
	}
	if n.hex && len(n.exp) > 7 {
		return nil, ErrNotFloat
	}
	if _, _, err := x.Parse(n.goSyntax(), 0); err != nil {
		return nil, ErrNotFloat
	}
	if !longDoubleRange(x) {
		return nil, ErrNotFloat
	}
	return x, nil
}

// longDoubleRange reports whether finite x neither overflows a long double
// nor underflows to zero.
func longDoubleRange(x *big.Float) bool {
	if x.Sign() == 0 || x.IsInf() {
		return true
	}
	e := x.MantExp(nil) // x = m * 2^e with 0.5 <= |m| < 1
	return e <= ldMaxExp && e >= ldMinExp
}

// FormatLongDouble renders x like Redis's ld2string(LD_STR_HUMAN):
// "%.17Lf", trailing zeros and '.' removed, "-0" as "0"; "inf"/"-inf" for
// infinities.
func FormatLongDouble(x *big.Float) []byte {
	if x.IsInf() {
		if x.Sign() < 0 {
			return []byte("-inf")
		}
		return []byte("inf")
	}
	return stripZeros(x.Append(nil, 'f', 17))
}

// IncrByFloat computes INCRBYFLOAT's new value from the current value cur
// (nil when the key does not exist) and the increment incr, with Redis's
// long double arithmetic and formatting: "10.5" + "0.1" = "10.6",
// "0.1" + "0.2" = "0.3", "5.0e3" + "0" = "5000". An operand that does not
// parse is ErrNotFloat; a NaN or infinite result is ErrIncrNaNOrInf.
func IncrByFloat(cur, incr []byte) ([]byte, error) {
	a := new(big.Float).SetPrec(ldPrec)
	if cur != nil {
		var err error
		if a, err = ParseLongDouble(cur); err != nil {
			return nil, err
		}
	}
	b, err := ParseLongDouble(incr)
	if err != nil {
		return nil, err
	}
	if a.IsInf() || b.IsInf() {
		return nil, ErrIncrNaNOrInf
	}
	sum := new(big.Float).SetPrec(ldPrec).Add(a, b)
	if sum.MantExp(nil) > ldMaxExp && sum.Sign() != 0 {
		return nil, ErrIncrNaNOrInf
	}
	return FormatLongDouble(sum), nil
}

// EqualFold reports whether b equals s ignoring ASCII case, for matching
// options such as "NX", "withscores" or "COUNT" without allocating.
func EqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
