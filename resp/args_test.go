package resp

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"123456", 123456, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551615", 0, false},
		{"18446744073709551616", 0, false},
		{"99999999999999999999", 0, false},
		{"100000000000000000000", 0, false},
		{"", 0, false},
		{"-", 0, false},
		{"+1", 0, false},
		{"-0", 0, false},
		{"00", 0, false},
		{"01", 0, false},
		{"-01", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1a", 0, false},
		{"1.0", 0, false},
		{"1e3", 0, false},
		{"--1", 0, false},
		{"0x10", 0, false},
		{"\x001", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseInt([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrNotInteger) {
			t.Errorf("ParseInt(%q) error %v, want ErrNotInteger", tt.in, err)
		}
	}
}

func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false},
		{"-1", 0, false},
		{"-0", 0, false},
		{"+1", 0, false},
		{"01", 0, false},
		{"", 0, false},
		{"1 ", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseUint([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseUint(%q) = %d, %v; want %d ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"-1.5", -1.5, true},
		{"+1.5", 1.5, true},
		{".5", 0.5, true},
		{"5.", 5, true},
		{"1e3", 1000, true},
		{"1E3", 1000, true},
		{"1e+3", 1000, true},
		{"1e-3", 0.001, true},
		{"5.0e3", 5000, true},
		{"inf", math.Inf(1), true},
		{"+inf", math.Inf(1), true},
		{"-inf", math.Inf(-1), true},
		{"INF", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true},
		{"0x10", 16, true},
		{"0x1p4", 16, true},
		{"0X1.8P1", 3, true},
		{"-0x.8", -0.5, true},
		{"1.7976931348623157e308", math.MaxFloat64, true},
		{"4.9e-324", 5e-324, true},
		{"0e-999", 0, true},
		{"0.0000", 0, true},
		{"1e309", 0, false},  // overflow (ERANGE, HUGE_VAL)
		{"1e-400", 0, false}, // underflow to zero (ERANGE, 0)
		{"nan", 0, false},
		{"NaN", 0, false},
		{"-nan", 0, false},
		{"", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1x", 0, false},
		{"1e", 0, false},
		{"1e+", 0, false},
		{"e3", 0, false},
		{".", 0, false},
		{"-", 0, false},
		{"+", 0, false},
		{"1.2.3", 0, false},
		{"0x", 0, false},
		{"0x1p", 0, false},
		{"0xg", 0, false},
		{"1_000", 0, false},
		{"0x_1p0", 0, false},
		{"in", 0, false},
		{"infinit", 0, false},
		{"++1", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseFloat([]byte(tt.in))
		if tt.ok != (err == nil) || got != tt.want {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrNotFloat) {
			t.Errorf("ParseFloat(%q) error %v, want ErrNotFloat", tt.in, err)
		}
	}
}

func TestFormatFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{10.5 + 0.1, "10.6"},
		{5.0e3, "5000"},
		{1.5, "1.5"},
		{-1.5, "-1.5"},
		{3, "3"},
		{1e20, "100000000000000000000"},
		{1e-20, "0"},
		{-1e-20, "0"},
		{1.23456789e-10, "0.00000000012345679"}, // rounded to 17 decimals
		{1.5e-17, "0.00000000000000002"},
		{0.1, "0.1"},
		{math.Inf(1), "inf"},
		{math.Inf(-1), "-inf"},
	}
	for _, tt := range tests {
		if got := string(FormatFloat(tt.in)); got != tt.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIncrByFloat(t *testing.T) {
	tests := []struct {
		cur, incr string
		nilCur    bool
		want      string
		err       error
	}{
		{"10.5", "0.1", false, "10.6", nil},
		{"0.1", "0.2", false, "0.3", nil},
		{"", "5.0e3", true, "5000", nil},
		{"5.0e3", "2.0e2", false, "5200", nil},
		{"3.0e3", "200", false, "3200", nil},
		{"10.50", "0.1", false, "10.6", nil},
		{"1", "-1", false, "0", nil},
		{"-1", "0.5", false, "-0.5", nil},
		{"1e18", "1", false, "1000000000000000001", nil}, // exact in a 64-bit mantissa, not in float64
		{"", "1e-20", true, "0", nil},
		{"", "0x10", true, "16", nil},
		{"abc", "1", false, "", ErrNotFloat},
		{"1", "abc", false, "", ErrNotFloat},
		{"1", "nan", false, "", ErrNotFloat},
		{"1", " 1", false, "", ErrNotFloat},
		{"1", "1e5000", false, "", ErrNotFloat},
		{"1", "1e-5000", false, "", ErrNotFloat},
		{"1", "inf", false, "", ErrIncrNaNOrInf},
		{"-inf", "1", false, "", ErrIncrNaNOrInf},
		{"1.1e4932", "1.1e4932", false, "", ErrIncrNaNOrInf},
	}
	for _, tt := range tests {
		var cur []byte
		if !tt.nilCur {
			cur = []byte(tt.cur)
		}
		got, err := IncrByFloat(cur, []byte(tt.incr))
		if !errors.Is(err, tt.err) || (err == nil && string(got) != tt.want) {
			t.Errorf("IncrByFloat(%q, %q) = %q, %v; want %q, %v", tt.cur, tt.incr, got, err, tt.want, tt.err)
		}
	}
}

func TestIncrByFloatBeyondFloat64(t *testing.T) {
	got, err := IncrByFloat([]byte("1e400"), []byte("0"))
	if err != nil || len(got) != 401 || string(got[:19]) != "1000000000000000000" {
		t.Errorf("IncrByFloat(1e400, 0) = %q, %v", got, err)
	}
}

func TestParseLongDouble(t *testing.T) {
	for _, in := range []string{"1.", ".5", "-0", "1e4931", "0x1p-16445", "infinity", "-INF"} {
		if _, err := ParseLongDouble([]byte(in)); err != nil {
			t.Errorf("ParseLongDouble(%q) = %v, want ok", in, err)
		}
	}
	for _, in := range []string{"", "nan", "1e4933", "0x1p16384", "0x1p-16446", "1e99999999999999999999", "1 "} {
		if _, err := ParseLongDouble([]byte(in)); err == nil {
			t.Errorf("ParseLongDouble(%q) ok, want error", in)
		}
	}
}

func TestEqualFold(t *testing.T) {
	tests := []struct {
		b, s string
		want bool
	}{
		{"NX", "nx", true},
		{"withScores", "WITHSCORES", true},
		{"nx", "nx", true},
		{"", "", true},
		{"nx", "xx", false},
		{"n", "nx", false},
		{"[", "{", false}, // '[' | 0x20 == '{': must not match
		{"@", "`", false},
	}
	for _, tt := range tests {
		if got := EqualFold([]byte(tt.b), tt.s); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v", tt.b, tt.s, got)
		}
	}
}

func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "9223372036854775807", "-9223372036854775808", "01", "+1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ParseInt(b)
		if err != nil {
			return
		}
		if got := strconv.FormatInt(n, 10); got != string(b) {
			t.Fatalf("ParseInt(%q) = %d, which formats as %q", b, n, got)
		}
	})
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range []string{"1.5", "-inf", "0x1p3", "1e-400", ".5", "nan"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := ParseFloat(b); err == nil && math.IsNaN(v) {
			t.Fatalf("ParseFloat(%q) = NaN", b)
		}
		_, _ = ParseLongDouble(b)
		_, _ = IncrByFloat(b, []byte("1"))
	})
}
