package fsm

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// dumpOf returns DUMP key's payload (nil if the key is missing).
func dumpOf(t *testing.T, h *harness, key string) []byte {
	t.Helper()
	v := h.apply([][]byte{[]byte("dump"), []byte(key)})
	if v.Kind == resp.KindNull {
		return nil
	}
	if v.Kind != resp.KindBulk {
		t.Fatalf("dump %s: %s", key, show(v))
	}
	return v.Str
}

func restore(h *harness, key string, ttl string, payload []byte, opts ...string) string {
	args := [][]byte{[]byte("restore"), []byte(key), []byte(ttl), payload}
	for _, o := range opts {
		args = append(args, []byte(o))
	}
	return show(h.apply(args))
}

func TestDumpRestoreEveryType(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"set s 12345", "+OK"},
		{"sadd set a b 1", ":3"},
		{"hset hash f v g 7", ":2"},
		{"zadd z 1.5 a -inf b 3 c", ":3"},
	})
	checks := map[string]string{
		"s":    "get s",
		"set":  "sort set alpha",
		"hash": "hmget hash f g",
		"z":    "zrange z 0 -1 withscores",
	}
	for key, read := range checks {
		want := h.do(read)
		p := dumpOf(t, h, key)
		if got := restore(h, key, "0", p); got != "-BUSYKEY Target key name already exists." {
			t.Errorf("%s: restore over existing: %s", key, got)
		}
		if got := restore(h, key, "0", p, "REPLACE"); got != "+OK" {
			t.Errorf("%s: restore replace: %s", key, got)
		}
		if got := h.do(read); got != want {
			t.Errorf("%s: after restore %s, want %s", key, got, want)
		}
		if got := h.do("ttl " + key); got != ":-1" {
			t.Errorf("%s: ttl %s", key, got)
		}
	}
	if got := dumpOf(t, h, "missing"); got != nil {
		t.Errorf("dump missing: %q", got)
	}
}

func TestRestoreOptionsAndErrors(t *testing.T) {
	h := newHarness(t)
	h.do("set s hello")
	p := dumpOf(t, h, "s")
	bad := append([]byte(nil), p...)
	bad[2] ^= 0xff
	tests := []struct {
		key, ttl string
		payload  []byte
		opts     []string
		want     string
	}{
		{"a", "-1", p, nil, "-ERR Invalid TTL value, must be >= 0"},
		{"a", "x", p, nil, "-ERR value is not an integer or out of range"},
		{"a", "0", bad, nil, "-ERR DUMP payload version or checksum are wrong"},
		{"a", "0", []byte("xx"), nil, "-ERR DUMP payload version or checksum are wrong"},
		{"a", "0", p, []string{"FOO"}, "-ERR syntax error"},
		{"a", "0", p, []string{"IDLETIME"}, "-ERR syntax error"},
		{"a", "0", p, []string{"IDLETIME", "-1"}, "-ERR Invalid IDLETIME value, must be >= 0"},
		{"a", "0", p, []string{"FREQ", "256"}, "-ERR Invalid FREQ value, must be >= 0 and <= 255"},
		{"a", "0", p, []string{"FREQ", "1", "IDLETIME", "1"}, "-ERR syntax error"},
		{"s", "x", p, nil, "-BUSYKEY Target key name already exists."}, // BUSYKEY is checked before the TTL
		{"b", "5000", p, nil, "+OK"},
		{"c", strconv.FormatInt(h.now+10000, 10), p, []string{"ABSTTL"}, "+OK"},
		{"d", "1", p, []string{"ABSTTL"}, "+OK"}, // already expired: not created
		{"e", "0", p, []string{"IDLETIME", "100", "FREQ", "x"}, "-ERR syntax error"},
		{"f", "0", p, []string{"IDLETIME", "100"}, "+OK"},
	}
	for _, tt := range tests {
		if got := restore(h, tt.key, tt.ttl, tt.payload, tt.opts...); got != tt.want {
			t.Errorf("restore %s %s %v: got %s, want %s", tt.key, tt.ttl, tt.opts, got, tt.want)
		}
	}
	h.run([]step{
		{"pttl b", ":5000"},
		{"pttl c", ":10000"},
		{"exists a d", ":0"},
		{"object idletime f", ":100"},
		{"get f", `"hello"`},
		{"object idletime f", ":0"}, // GET recorded an access
	})
}

func TestRestoreRejectsBadValues(t *testing.T) {
	h := newHarness(t)
	footer := func(body ...byte) []byte {
		b := binary.LittleEndian.AppendUint16(body, 9)
		return binary.LittleEndian.AppendUint64(b, rdbCRC(b))
	}
	for name, p := range map[string][]byte{
		"empty set":      footer(rdbTypeSet, 0),
		"duplicate":      footer(rdbTypeSet, 2, 1, 'a', 1, 'a'),
		"stream":         footer(15, 0),
		"truncated hash": footer(rdbTypeHash, 1, 1, 'f'),
	} {
		if got := restore(h, "k", "0", p); got != "-ERR Bad data format" {
			t.Errorf("%s: %s", name, got)
		}
	}
}

func TestCopyClonesCollections(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"sadd a x", ":1"},
		{"copy a b", ":1"},
		{"sadd b y", ":1"},
		{"scard a", ":1"},
		{"srem a x", ":1"},
		{"smembers b", `["x" "y"]`},
		{"hset h f v", ":1"},
		{"copy h h2", ":1"},
		{"hset h2 g w", ":1"},
		{"hlen h", ":1"},
		{"zadd z 1 m", ":1"},
		{"rename z z2", "+OK"},
		{"zscore z2 m", ",1"},
		{"object encoding z2", `"listpack"`},
		{"object encoding h2", `"listpack"`},
	})
}

// FuzzRestorePayload feeds arbitrary payload bodies (with a valid footer,
// so the decoders are reached) to RESTORE: an error or a key, never a
// panic.
func FuzzRestorePayload(f *testing.F) {
	for _, p := range []string{
		"\x00\x05hello", "\x02\x03\x01a\x01c\x01b", "\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00\xfd\xff\xff\xff\x01\x00\x00\x00\x02\x00\x00\x00\xa0\x86\x01\x00",
		"\x10\x15\x15\x00\x00\x00\x04\x00\x82f1\x03\x82v1\x03\x82f2\x03\x02\x01\xff",
		"\x12\x01\x02\x17\x17\x00\x00\x00\x05\x00\x81a\x02\x81b\x02\x01\x01\xde\x0c\x02\xf2p\x11\x01\x04\xff", // a list
		"\x11\x1d\x1d\x00\x00\x00\x06\x00\x81c\x02\x84-inf\x05\x81a\x02\x831.5\x04\x81b\x02\x02\x01\xff",
		"\x00\xc3\t@\xc8\x01aa\xe0\xbb\x00\x01aa", "\x05\x01\x01a\x00\x00\x00\x00\x00\x00\xf8\x3f",
	} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b := binary.LittleEndian.AppendUint16(append([]byte(nil), body...), 11)
		p := binary.LittleEndian.AppendUint64(b, rdbCRC(b))
		h := newHarness(t)
		got := restore(h, "k", "0", p)
		if got != "+OK" && got != "-ERR Bad data format" {
			t.Fatalf("restore: %s", got)
		}
		if got == "+OK" { // what was restored dumps and restores again
			if r := restore(h, "k", "0", dumpOf(t, h, "k"), "REPLACE"); r != "+OK" {
				t.Fatalf("restore of dump: %s", r)
			}
		}
	})
}
