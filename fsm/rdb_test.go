package fsm

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/store"
)

func TestRDBCRCJones(t *testing.T) {
	// Redis's crc64.c test vector.
	if got := rdbCRC([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %#x", got)
	}
}

// rdbRedisDumps reads DUMP payloads taken from redis-server 7.0.15 (see
// testdata/dump-redis-7.0.txt: key and hex payload per line).
func rdbRedisDumps(t testing.TB) map[string][]byte {
	t.Helper()
	f, err := os.Open("testdata/dump-redis-7.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, h, _ := strings.Cut(sc.Text(), " ")
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = b
	}
	return out
}

// rdbShow renders a decoded value compactly for comparisons.
func rdbShow(v *rdbValue) string {
	var sb strings.Builder
	sb.WriteString(v.typ.String())
	if v.typ == store.TypeString {
		return sb.String() + " " + string(v.str)
	}
	for i, e := range v.elems {
		sb.WriteString(" " + string(e))
		if v.scores != nil {
			sb.WriteString("=" + string(appendScore(nil, v.scores[i])))
		}
	}
	return sb.String()
}

func appendScore(b []byte, f float64) []byte { return fmt.Appendf(b, "%g", f) }

func TestRDBDecodeRedisPayloads(t *testing.T) {
	dumps := rdbRedisDumps(t)
	many := func(f func(i int) string) string {
		var parts []string
		for i := 1; i <= 200; i++ {
			parts = append(parts, f(i))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct{ key, want string }{
		{"s1", "string hello"},
		{"s2", "string 12345"},
		{"s3", "string -7"},
		{"s4", "string " + strings.Repeat("a", 200)}, // LZF
		{"s5", "string 1234567890123"},
		{"l1", "list a b 1 -500 70000"}, // quicklist 2, listpack node
		{"h1", "hash f1 v1 f2 2"},       // listpack
		{"i1", "set -3 1 2 100000"},     // intset
		{"st1", "set a c b"},            // hashtable
		{"z1", "zset c=-Inf a=1.5 b=2"}, // listpack
		{"h2", "hash " + many(func(i int) string { return fmt.Sprintf("f%d v%d", i, i) })}, // LZF listpack
		{"l2", "list " + many(func(i int) string { return fmt.Sprintf("e%d", i) })},        // LZF listpack node
	}
	for _, tt := range tests {
		v, err := rdbParsePayload(dumps[tt.key])
		if err != nil {
			t.Errorf("%s: %v", tt.key, err)
			continue
		}
		if err := v.check(); err != nil {
			t.Errorf("%s: check: %v", tt.key, err)
		}
		if got := rdbShow(v); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.key, got, tt.want)
		}
	}
	// The skiplist zset is written from the highest score down.
	v, err := rdbParsePayload(dumps["z2"])
	if err != nil || len(v.elems) != 200 || string(v.elems[0]) != "m200" || v.scores[0] != 200.25 || v.scores[199] != 1.25 {
		t.Errorf("z2: %v %v", err, v)
	}
}

func TestRDBDumpMatchesRedisStrings(t *testing.T) {
	// Strings without compression encode exactly as Redis does; only the
	// version (and so the checksum) differs.
	dumps := rdbRedisDumps(t)
	for _, k := range []string{"s1", "s2", "s3", "s5"} {
		want := dumps[k][:len(dumps[k])-10]
		v, _ := rdbParsePayload(dumps[k])
		got := rdbDump(v)
		if string(got[:len(got)-10]) != string(want) {
			t.Errorf("%s: got %x, want %x", k, got, want)
		}
		if binary.LittleEndian.Uint16(got[len(got)-10:]) != rdbVersionDump {
			t.Errorf("%s: version", k)
		}
	}
}

func TestRDBRoundTrip(t *testing.T) {
	vals := []*rdbValue{
		{typ: store.TypeString, str: []byte("")},
		{typ: store.TypeString, str: []byte("-2147483648")},
		{typ: store.TypeString, str: []byte("2147483648")},
		{typ: store.TypeString, str: []byte("007")},
		{typ: store.TypeString, str: []byte(strings.Repeat("x", 70000))},
		{typ: store.TypeList, elems: [][]byte{[]byte("a"), []byte(""), []byte("-1"), []byte(strings.Repeat("y", 100))}},
		{typ: store.TypeSet, elems: [][]byte{[]byte("a"), []byte("1")}},
		{typ: store.TypeHash, elems: [][]byte{[]byte("f"), []byte("v"), []byte("g"), []byte("")}},
		{typ: store.TypeZSet, elems: [][]byte{[]byte("a"), []byte("b"), []byte("c")}, scores: []float64{math.Inf(-1), 0.1, math.Inf(1)}},
	}
	for _, v := range vals {
		got, err := rdbParsePayload(rdbDump(v))
		if err != nil {
			t.Errorf("%s: %v", rdbShow(v)[:min(40, len(rdbShow(v)))], err)
			continue
		}
		if rdbShow(got) != rdbShow(v) {
			t.Errorf("round trip: got %.60q, want %.60q", rdbShow(got), rdbShow(v))
		}
	}
}

func TestRDBPayloadErrors(t *testing.T) {
	good := rdbDump(&rdbValue{typ: store.TypeString, str: []byte("hello")})
	withFooter := func(body []byte, version uint16) []byte {
		b := binary.LittleEndian.AppendUint16(append([]byte(nil), body...), version)
		return binary.LittleEndian.AppendUint64(b, rdbCRC(b))
	}
	body := good[:len(good)-10]
	flip := append([]byte(nil), good...)
	flip[1] ^= 1
	tests := []struct {
		name    string
		payload []byte
		want    error
	}{
		{"short", []byte("abc"), errDumpPayload},
		{"bad crc", flip, errDumpPayload},
		{"newer version", withFooter(body, rdbVersionMax+1), errDumpPayload},
		{"version 11", withFooter(body, rdbVersionMax), nil},
		{"trailing bytes", withFooter(append(append([]byte(nil), body...), 0), 9), errBadData},
		{"truncated", withFooter(body[:3], 9), errBadData},
		{"stream", withFooter([]byte{15, 0}, 9), errBadData},
		{"huge count", withFooter([]byte{rdbTypeList, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 9), errBadData},
		{"lzf bomb", withFooter([]byte{rdbTypeString, 0xC3, 0x01, 0x81, 0, 0, 0, 0, 0x10, 0, 0, 0, 0}, 9), errBadData},
		{"empty payload", withFooter(nil, 9), errBadData},
	}
	for _, tt := range tests {
		_, err := rdbParsePayload(tt.payload)
		if err != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestRDBCheck(t *testing.T) {
	b := func(s ...string) [][]byte {
		var out [][]byte
		for _, x := range s {
			out = append(out, []byte(x))
		}
		return out
	}
	tests := []struct {
		v  rdbValue
		ok bool
	}{
		{rdbValue{typ: store.TypeList}, false},
		{rdbValue{typ: store.TypeList, elems: b("a", "a")}, true},
		{rdbValue{typ: store.TypeSet, elems: b("a", "a")}, false},
		{rdbValue{typ: store.TypeHash, elems: b("f", "v", "f", "w")}, false},
		{rdbValue{typ: store.TypeHash, elems: b("f", "v", "v", "f")}, true},
		{rdbValue{typ: store.TypeZSet, elems: b("a"), scores: []float64{math.NaN()}}, false},
	}
	for i, tt := range tests {
		if err := tt.v.check(); (err == nil) != tt.ok {
			t.Errorf("%d: check = %v", i, err)
		}
	}
}

func TestLZFDecompress(t *testing.T) {
	// "aaaaaaaaaa": literal 'a', then a back reference of length 9 at distance 1.
	in := []byte{0x00, 'a', 0xE0, 0x00, 0x00}
	out, ok := lzfDecompress(in, 10)
	if !ok || string(out) != "aaaaaaaaaa" {
		t.Fatalf("got %q %v", out, ok)
	}
	if _, ok := lzfDecompress(in, 9); ok {
		t.Fatal("accepted wrong length")
	}
	if _, ok := lzfDecompress([]byte{0x20, 0x05}, 3); ok {
		t.Fatal("accepted reference before start")
	}
}
