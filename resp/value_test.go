package resp

import (
	"math"
	"testing"
)

func TestValueAppend(t *testing.T) {
	tests := []struct {
		name   string
		v      Value
		r2, r3 string
	}{
		{"null", Null(), "$-1\r\n", "_\r\n"},
		{"null array", NullArray(), "*-1\r\n", "_\r\n"},
		{"ok", OK(), "+OK\r\n", "+OK\r\n"},
		{"queued", Queued(), "+QUEUED\r\n", "+QUEUED\r\n"},
		{"status", Status("PONG"), "+PONG\r\n", "+PONG\r\n"},
		{"status newline", Status("a\r\nb"), "+a  b\r\n", "+a  b\r\n"},
		{"error", Err(ErrWrongType), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{"plain error", Err(errPlain("boom")), "-ERR boom\r\n", "-ERR boom\r\n"},
		{"int", Int(-42), ":-42\r\n", ":-42\r\n"},
		{"int min", Int(math.MinInt64), ":-9223372036854775808\r\n", ":-9223372036854775808\r\n"},
		{"bulk", BulkString("hello"), "$5\r\nhello\r\n", "$5\r\nhello\r\n"},
		{"empty bulk", Bulk(nil), "$0\r\n\r\n", "$0\r\n\r\n"},
		{"binary bulk", Bulk([]byte("a\r\nb")), "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"array", Array(Int(1), BulkString("x")), "*2\r\n:1\r\n$1\r\nx\r\n", "*2\r\n:1\r\n$1\r\nx\r\n"},
		{"empty array", Array(), "*0\r\n", "*0\r\n"},
		{"bulk array", BulkArray([][]byte{[]byte("a"), nil}), "*2\r\n$1\r\na\r\n$0\r\n\r\n", "*2\r\n$1\r\na\r\n$0\r\n\r\n"},
		{"nested", Array(Array(Null()), NullArray()), "*2\r\n*1\r\n$-1\r\n*-1\r\n", "*2\r\n*1\r\n_\r\n_\r\n"},
		{"map", Map(BulkString("k"), Int(1), BulkString("j"), Double(1.5)), "*4\r\n$1\r\nk\r\n:1\r\n$1\r\nj\r\n$3\r\n1.5\r\n", "%2\r\n$1\r\nk\r\n:1\r\n$1\r\nj\r\n,1.5\r\n"},
		{"empty map", Map(), "*0\r\n", "%0\r\n"},
		{"set", Set(BulkString("a"), BulkString("b")), "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "~2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{"pairs", Pairs(BulkString("a"), Double(1), BulkString("b"), Double(2.5)), "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n", "*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n"},
		{"empty pairs", Pairs(), "*0\r\n", "*0\r\n"},
		{"pair map", PairMap(BulkString("k"), Array(Int(1))), "*1\r\n*2\r\n$1\r\nk\r\n*1\r\n:1\r\n", "%1\r\n$1\r\nk\r\n*1\r\n:1\r\n"},
		{"push", Push(BulkString("message"), BulkString("ch"), BulkString("hi")), "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"},
		{"double", Double(1.5), "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"double inf", Double(math.Inf(1)), "$3\r\ninf\r\n", ",inf\r\n"},
		{"double -inf", Double(math.Inf(-1)), "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double nan", Double(math.NaN()), "$3\r\nnan\r\n", ",nan\r\n"},
		{"double int", Double(3), "$1\r\n3\r\n", ",3\r\n"},
		{"double text", DoubleText(13.361389, []byte("13.36138933897018433")), "$20\r\n13.36138933897018433\r\n", ",13.36138933897018433\r\n"},
		{"bool true", Bool(true), ":1\r\n", "#t\r\n"},
		{"bool false", Bool(false), ":0\r\n", "#f\r\n"},
		{"verbatim", Verbatim("txt", []byte("Some string")), "$11\r\nSome string\r\n", "=15\r\ntxt:Some string\r\n"},
		{"big number", Value{Kind: KindBigNumber, Str: []byte("3492890328409238509324850943850943825024385")}, "$43\r\n3492890328409238509324850943850943825024385\r\n", "(3492890328409238509324850943850943825024385\r\n"},
	}
	for _, tt := range tests {
		if got := string(tt.v.Append(nil, RESP2)); got != tt.r2 {
			t.Errorf("%s RESP2 = %q, want %q", tt.name, got, tt.r2)
		}
		if got := string(tt.v.Append(nil, RESP3)); got != tt.r3 {
			t.Errorf("%s RESP3 = %q, want %q", tt.name, got, tt.r3)
		}
	}
}

type errPlain string

func (e errPlain) Error() string { return string(e) }

func TestIsError(t *testing.T) {
	if !Err(ErrSyntax).IsError() || OK().IsError() {
		t.Fatal("IsError is wrong")
	}
}

// Redis 7.2's d2string: integers when exact and |f| <= 2^62, else
// fpconv_dtoa's shortest digits and layout.
func TestFormatDouble(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1, "1"},
		{-3, "-3"},
		{1.5, "1.5"},
		{-1.5, "-1.5"},
		{0.1, "0.1"},
		{1.1, "1.1"},
		{10.6, "10.6"},
		{1234567, "1234567"},
		{5000, "5000"},
		{1 << 62, "4611686018427387904"},
		{1 << 63, "9223372036854776000"}, // beyond 2^62: fpconv digits, plain layout
		{1e20, "1e+20"},
		{1.5e20, "1.5e+20"},
		{5e18, "5e+18"},
		{123.456, "123.456"},
		{0.0001, "0.0001"},
		{0.00001, "0.00001"},
		{0.000001, "0.000001"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{1.2345678e-5, "1.2345678e-5"},
		{1234.5678901234, "1234.5678901234"},
		{3.14159, "3.14159"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{-2.5e-10, "-2.5e-10"},
		{0.30000000000000004, "0.30000000000000004"},
	}
	for _, tt := range tests {
		if got := string(FormatDouble(tt.in, true)); got != tt.want {
			t.Errorf("FormatDouble(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatNonFinite(t *testing.T) {
	tests := []struct {
		in   float64
		want string
		ok   bool
	}{
		{math.Inf(1), "inf", true},
		{math.Inf(-1), "-inf", true},
		{math.NaN(), "nan", true},
		{0, "", false},
		{-1.5, "", false},
		{math.MaxFloat64, "", false},
	}
	for _, tt := range tests {
		if b, ok := FormatNonFinite(tt.in); string(b) != tt.want || ok != tt.ok {
			t.Errorf("FormatNonFinite(%v) = %q, %v; want %q, %v", tt.in, b, ok, tt.want, tt.ok)
		}
	}
}
