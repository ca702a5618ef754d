package fsm

import (
	"bytes"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// bitmapRun runs steps like harness.run, plus "hexset KEY HEX" (SET with
// binary bytes) and "hexget KEY" (the value in hex, or nil).
func bitmapRun(t *testing.T, steps []step) {
	t.Helper()
	h := newHarness(t)
	for i, st := range steps {
		f := strings.Fields(st.cmd)
		switch f[0] {
		case "hexset":
			b, err := hex.DecodeString(f[2])
			if err != nil {
				t.Fatal(err)
			}
			if got := show(h.apply([][]byte{[]byte("SET"), []byte(f[1]), b})); got != st.want {
				t.Errorf("step %d %q: got %s, want %s", i, st.cmd, got, st.want)
			}
		case "hexget":
			got := "nil"
			if v := h.apply([][]byte{[]byte("GET"), []byte(f[1])}); v.Kind == resp.KindBulk {
				got = hex.EncodeToString(v.Str)
			}
			if got != st.want {
				t.Errorf("step %d %q: got %s, want %s", i, st.cmd, got, st.want)
			}
		default:
			h.run([]step{st})
		}
	}
}

func runBitmapTable(t *testing.T, cases map[string][]step) {
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { bitmapRun(t, steps) })
	}
}

const (
	errBitOffsetS = "-ERR bit offset is not an integer or out of range"
	errBitValueS  = "-ERR bit is not an integer or out of range"
	errNotIntS    = "-ERR value is not an integer or out of range"
	errSyntaxS    = "-ERR syntax error"
	errWrongTypeS = "-WRONGTYPE Operation against a key holding the wrong kind of value"
	errBfTypeS    = "-ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
)

func TestBitmapsSetbitGetbit(t *testing.T) {
	runBitmapTable(t, map[string][]step{
		"doc example": {
			{"SETBIT mykey 7 1", ":0"},
			{"SETBIT mykey 7 0", ":1"},
			{"GET mykey", `"\x00"`},
			{"GETBIT mykey 0", ":0"},
			{"GETBIT mykey 7", ":0"},
			{"GETBIT mykey 100", ":0"},
			{"read GETBIT mykey 100", ":0"},
		},
		"grows zero padded": {
			{"SETBIT k 100 0", ":0"},
			{"STRLEN k", ":13"},
			{"SETBIT k 9 1", ":0"},
			{"hexget k", "00400000000000000000000000"},
			{"GETBIT k 9", ":1"},
			{"read GETBIT nokey 5", ":0"},
		},
		"msb first": {
			{"SET k a", "+OK"}, // 0x61 = 01100001
			{"GETBIT k 0", ":0"}, {"GETBIT k 1", ":1"}, {"GETBIT k 2", ":1"}, {"GETBIT k 7", ":1"},
			{"SETBIT k 6 1", ":0"},
			{"GET k", `"c"`},
		},
		"errors": {
			{"SETBIT k 4294967296 1", errBitOffsetS},
			{"SETBIT k -1 1", errBitOffsetS},
			{"SETBIT k 01 1", errBitOffsetS},
			{"SETBIT k x 1", errBitOffsetS},
			{"SETBIT k 0 2", errBitValueS},
			{"SETBIT k 0 -1", errBitValueS},
			{"SETBIT k 0 x", errBitValueS},
			{"GETBIT k 4294967296", errBitOffsetS},
			{"GETBIT k -1", errBitOffsetS},
			{"EXISTS k", ":0"},
			{"mklist l", ""},
			{"SETBIT l 0 1", errWrongTypeS},
			{"GETBIT l 0", errWrongTypeS},
			{"GETBIT l x", errBitOffsetS}, // offset parsed before the lookup
		},
		"keeps ttl": {
			{"SET k a PX 5000", "+OK"},
			{"SETBIT k 100 1", ":0"},
			{"PTTL k", ":5000"},
			{"sleep 5000", ""},
			{"GETBIT k 100", ":0"},
			{"EXISTS k", ":0"},
		},
		"max offset": {
			{"GETBIT k 4294967295", ":0"},
		},
	})
}

func TestBitmapsBitcount(t *testing.T) {
	runBitmapTable(t, map[string][]step{
		"doc example": {
			{"SET mykey foobar", "+OK"},
			{"BITCOUNT mykey", ":26"},
			{"BITCOUNT mykey 0 0", ":4"},
			{"BITCOUNT mykey 1 1", ":6"},
			{"BITCOUNT mykey 1 1 BYTE", ":6"},
			{"BITCOUNT mykey 5 30 BIT", ":17"},
			{"read BITCOUNT mykey 5 30 bit", ":17"},
		},
		"negative indexes": {
			{"SET mykey foobar", "+OK"},
			{"BITCOUNT mykey -2 -1", ":7"},
			{"BITCOUNT mykey -1 -2", ":0"},
			{"BITCOUNT mykey -100 100 BIT", ":26"},
			{"BITCOUNT mykey 0 -1 BIT", ":26"},
			{"BITCOUNT mykey 3 -100", ":0"},
			{"BITCOUNT mykey -100 -200", ":0"},
			{"BITCOUNT mykey 100 200", ":0"},
			{"BITCOUNT mykey -1 0 bit", ":0"},
		},
		"bit edges": {
			{"hexset m 0ff0", "+OK"},
			{"BITCOUNT m 2 13 BIT", ":8"},
			{"BITCOUNT m -3 -1 BIT", ":0"},
			{"BITCOUNT m 4 4 BIT", ":1"},
			{"BITCOUNT m 3 3 BIT", ":0"},
			{"BITCOUNT m 0 15 BIT", ":8"},
			{"BITCOUNT m 5 10 BIT", ":6"},
		},
		"errors": {
			{"SET k foobar", "+OK"},
			{"BITCOUNT k 0", errSyntaxS},
			{"BITCOUNT k 0 1 2", errSyntaxS},
			{"BITCOUNT k 0 1 BIT x", errSyntaxS},
			{"BITCOUNT k 0 1 bits", errSyntaxS},
			{"BITCOUNT k -1 -2 bits", ":0"},
			{"BITCOUNT k a 1", errNotIntS},
			{"BITCOUNT k 0 b", errNotIntS},
			{"BITCOUNT nokey a 1", ":0"}, // 7.2: a missing key first (8.0 changed it)
			{"BITCOUNT nokey 0 1 bits", ":0"},
			{"BITCOUNT nokey 0", ":0"},
			{"BITCOUNT nokey", ":0"},
			{"BITCOUNT nokey 0 -1 BIT", ":0"},
			{"mklist l", ""},
			{"BITCOUNT l", errWrongTypeS},
			{"BITCOUNT l 0 1", errWrongTypeS},
			{"BITCOUNT l x 1", errWrongTypeS},
			{"BITCOUNT l 0", errWrongTypeS},
		},
		"empty string": {
			{"SET e \"\"", "+OK"},
			{"BITCOUNT e", ":0"},
			{"BITCOUNT e 0 -1", ":0"},
			{"BITCOUNT e 0 -1 BIT", ":0"},
		},
	})
}

func TestBitmapsBitpos(t *testing.T) {
	runBitmapTable(t, map[string][]step{
		"doc examples": {
			{"hexset mykey fff000", "+OK"},
			{"BITPOS mykey 0", ":12"},
			{"hexset mykey 00fff0", "+OK"},
			{"BITPOS mykey 1 0", ":8"},
			{"BITPOS mykey 1 2", ":16"},
			{"BITPOS mykey 1 2 -1 BYTE", ":16"},
			{"BITPOS mykey 1 7 15 BIT", ":8"},
			{"hexset mykey 000000", "+OK"},
			{"BITPOS mykey 1", ":-1"},
			{"BITPOS mykey 1 7 -3 BIT", ":-1"},
			{"BITPOS mykey 0 7 -3 BIT", ":7"},
			{"read BITPOS mykey 0 7 -3 bit", ":7"},
		},
		"all ones": {
			{"hexset ones ffffff", "+OK"},
			// No end: the string is zero padded on the right.
			{"BITPOS ones 0", ":24"},
			{"BITPOS ones 0 0", ":24"},
			{"BITPOS ones 0 2", ":24"},
			{"BITPOS ones 0 -1", ":24"},
			{"BITPOS ones 0 -100", ":24"},
			{"BITPOS ones 0 1 BIT", errNotIntS}, // "BIT" read as the end
			// An explicit end: no 0 in range.
			{"BITPOS ones 0 0 -1", ":-1"},
			{"BITPOS ones 0 1 -1 BIT", ":-1"},
			{"BITPOS ones 0 3 3 BIT", ":-1"},
			// Start past the end: empty range.
			{"BITPOS ones 0 5", ":-1"},
			{"BITPOS ones 1 5", ":-1"},
			{"BITPOS ones 1 2 1", ":-1"},
		},
		"missing key": {
			{"BITPOS nokey 0", ":0"},
			{"BITPOS nokey 1", ":-1"},
			{"BITPOS nokey 0 5 6", ":0"},
			{"BITPOS nokey 1 5 6 BIT", ":-1"},
		},
		"bit edges": {
			{"hexset m 0ff0", "+OK"},
			{"BITPOS m 1 2 3 BIT", ":-1"},
			{"BITPOS m 1 2 5 BIT", ":4"},
			{"BITPOS m 0 4 11 BIT", ":-1"},
			{"BITPOS m 0 -12 -5 BIT", ":-1"},
			{"BITPOS m 0 4 12 BIT", ":12"},
			{"BITPOS m 0 9", ":-1"},
			{"BITPOS m 1 9 9 BIT", ":9"},
			{"BITPOS m 1 10 10 BIT", ":10"},
			{"BITPOS m 0 12 12 BIT", ":12"},
		},
		"empty string": {
			{"SET e \"\"", "+OK"},
			{"BITPOS e 0", ":-1"},
			{"BITPOS e 1", ":-1"},
			{"BITPOS e 0 0", ":-1"},
		},
		"long runs": {
			{"SETBIT k 1000 1", ":0"},
			{"BITPOS k 1", ":1000"},
			{"BITPOS k 1 3", ":1000"},
			{"BITPOS k 1 3 124", ":-1"},
			{"BITPOS k 1 3 125", ":1000"},
			{"BITPOS k 1 999 1000 BIT", ":1000"},
			{"BITPOS k 0", ":0"},
		},
		"errors": {
			{"SET k foobar", "+OK"},
			{"BITPOS k 2", "-ERR The bit argument must be 1 or 0."},
			{"BITPOS k x", errNotIntS},
			{"BITPOS k 1 x", errNotIntS},
			{"BITPOS k 1 0 x", errNotIntS},
			{"BITPOS k 1 0 x bit", errNotIntS},
			{"BITPOS k 1 0 x bits", errSyntaxS}, // the unit is read before the end
			{"BITPOS k 1 0 1 bit x", errSyntaxS},
			{"BITPOS nokey 1 x", ":-1"},
			{"BITPOS nokey 0 x", ":0"},
			{"BITPOS nokey 2 x", "-ERR The bit argument must be 1 or 0."},
			{"BITPOS nokey 1 0 1 bits", ":-1"},
			{"mklist l", ""},
			{"BITPOS l 1", errWrongTypeS},
			{"BITPOS l 1 x", errWrongTypeS},
			{"BITPOS l 3", "-ERR The bit argument must be 1 or 0."},
		},
	})
}

func TestBitmapsBitop(t *testing.T) {
	runBitmapTable(t, map[string][]step{
		"doc example": {
			{"SET key1 foobar", "+OK"},
			{"SET key2 abcdef", "+OK"},
			{"BITOP AND dest key1 key2", ":6"},
			{"GET dest", `"` + "`bc`ab" + `"`},
		},
		"ops and lengths": {
			{"hexset a ff0f", "+OK"},
			{"hexset b f0", "+OK"},
			{"BITOP AND d a b", ":2"},
			{"hexget d", "f000"},
			{"BITOP OR d a b", ":2"},
			{"hexget d", "ff0f"},
			{"BITOP XOR d a b", ":2"},
			{"hexget d", "0f0f"},
			{"BITOP NOT d a", ":2"},
			{"hexget d", "00f0"},
			{"BITOP and d a nokey", ":2"},
			{"hexget d", "0000"},
			{"BITOP or d nokey b", ":1"},
			{"hexget d", "f0"},
			{"BITOP XOR d a a b", ":2"},
			{"hexget d", "f000"},
			{"BITOP AND d a", ":2"},
			{"hexget d", "ff0f"},
		},
		"empty result deletes dest": {
			{"SET d x", "+OK"},
			{"BITOP OR d nokey1 nokey2", ":0"},
			{"EXISTS d", ":0"},
			{"SET e \"\"", "+OK"},
			{"SET d x", "+OK"},
			{"BITOP NOT d e", ":0"},
			{"EXISTS d", ":0"},
		},
		"dest overwritten, ttl dropped": {
			{"SET s a", "+OK"},
			{"SET d x PX 1000", "+OK"},
			{"BITOP NOT d s", ":1"},
			{"PTTL d", ":-1"},
			{"hexget d", "9e"},
			{"mklist l", ""},
			{"BITOP OR l s", ":1"},
			{"TYPE l", "+string"},
			{"BITOP OR s s s", ":1"},
			{"GET s", `"a"`},
		},
		"errors": {
			{"SET s a", "+OK"},
			{"BITOP NOT d s s", "-ERR BITOP NOT must be called with a single source key."},
			{"BITOP DIFF d s s", errSyntaxS},
			{"BITOP nand d s", errSyntaxS},
			{"mklist l", ""},
			{"SET d keep", "+OK"},
			{"BITOP AND d s l", errWrongTypeS},
			{"GET d", `"keep"`},
		},
	})
}

func TestBitmapsBitfield(t *testing.T) {
	runBitmapTable(t, map[string][]step{
		"doc examples": {
			{"BITFIELD mykey INCRBY i5 100 1 GET u4 0", "[:1 :0]"},
			{"BITFIELD mystring SET i8 #0 100 SET i8 #1 200", "[:0 :0]"},
			{"GET mystring", `"d\xc8"`},
			{"BITFIELD mykey2 incrby u2 100 1 OVERFLOW SAT incrby u2 102 1", "[:1 :1]"},
			{"BITFIELD mykey2 incrby u2 100 1 OVERFLOW SAT incrby u2 102 1", "[:2 :2]"},
			{"BITFIELD mykey2 incrby u2 100 1 OVERFLOW SAT incrby u2 102 1", "[:3 :3]"},
			{"BITFIELD mykey2 incrby u2 100 1 OVERFLOW SAT incrby u2 102 1", "[:0 :3]"},
			{"BITFIELD mykey3 OVERFLOW FAIL incrby u2 102 1", "[:1]"},
			{"BITFIELD mykey3 OVERFLOW FAIL incrby u2 102 1", "[:2]"},
			{"BITFIELD mykey3 OVERFLOW FAIL incrby u2 102 1", "[:3]"},
			{"BITFIELD mykey3 OVERFLOW FAIL incrby u2 102 1", "[nil]"},
			{"SET hello hello~world", "+OK"},
			{"read BITFIELD_RO hello GET i8 16", "[:108]"},
		},
		"signed wrap and sat": {
			{"BITFIELD k SET i8 0 127", "[:0]"},
			{"BITFIELD k INCRBY i8 0 1", "[:-128]"},
			{"BITFIELD k OVERFLOW SAT INCRBY i8 0 -1", "[:-128]"},
			{"BITFIELD k OVERFLOW SAT INCRBY i8 0 1000", "[:127]"},
			{"BITFIELD k OVERFLOW FAIL INCRBY i8 0 1", "[nil]"},
			{"BITFIELD k GET i8 0 GET u8 0", "[:127 :127]"},
			{"BITFIELD k SET i8 0 200", "[:127]"}, // wraps to -56
			{"BITFIELD k GET i8 0", "[:-56]"},
			{"BITFIELD k OVERFLOW SAT SET i8 0 200", "[:-56]"},
			{"BITFIELD k GET i8 0", "[:127]"},
			{"BITFIELD k OVERFLOW SAT SET i8 0 -200", "[:127]"},
			{"BITFIELD k GET i8 0", "[:-128]"},
			{"BITFIELD k OVERFLOW FAIL SET i8 0 -129", "[nil]"},
			{"BITFIELD k OVERFLOW WRAP INCRBY i8 0 -1", "[:127]"},
		},
		"i64 and u63": {
			{"BITFIELD k SET i64 0 9223372036854775807", "[:0]"},
			{"BITFIELD k INCRBY i64 0 1", "[:-9223372036854775808]"},
			{"BITFIELD k OVERFLOW SAT INCRBY i64 0 -1", "[:-9223372036854775808]"},
			{"BITFIELD k OVERFLOW SAT INCRBY i64 0 9223372036854775807", "[:-1]"},
			{"BITFIELD k OVERFLOW SAT INCRBY i64 0 9223372036854775807", "[:9223372036854775806]"},
			{"BITFIELD k OVERFLOW SAT INCRBY i64 0 9223372036854775807", "[:9223372036854775807]"},
			{"BITFIELD k OVERFLOW FAIL INCRBY i64 0 1", "[nil]"},
			{"BITFIELD k GET u63 0 GET u63 1", "[:4611686018427387903 :9223372036854775807]"},
			{"BITFIELD u SET u63 0 9223372036854775807", "[:0]"},
			{"BITFIELD u INCRBY u63 0 1", "[:0]"},
			{"BITFIELD u OVERFLOW SAT INCRBY u63 0 -1", "[:0]"},
			{"BITFIELD u OVERFLOW SAT SET u8 0 -1", "[:0]"},
			{"BITFIELD u GET u8 0", "[:255]"},
			{"BITFIELD u OVERFLOW WRAP SET u8 0 -1", "[:255]"},
			{"BITFIELD u OVERFLOW FAIL SET u8 0 256", "[nil]"},
			{"BITFIELD u OVERFLOW FAIL INCRBY u8 0 -256", "[nil]"},
			{"BITFIELD u OVERFLOW WRAP INCRBY u8 0 -256", "[:255]"},
			{"BITFIELD u OVERFLOW WRAP INCRBY u8 0 -257", "[:254]"},
			{"BITFIELD u INCRBY u1 7 1", "[:1]"},
			{"BITFIELD u GET u8 0", "[:255]"},
		},
		"unaligned and positional": {
			{"BITFIELD k SET u5 7 23", "[:0]"},
			{"hexget k", "0170"},
			{"BITFIELD k GET u5 7 GET u4 #1 GET i3 #2", "[:23 :1 :2]"},
			{"BITFIELD k SET u8 #2 255", "[:0]"},
			{"hexget k", "0170ff"},
			{"BITFIELD k GET u8 100 GET i16 20", "[:0 :-4096]"},
		},
		"reads do not write": {
			{"BITFIELD k GET u8 0", "[:0]"},
			{"EXISTS k", ":0"},
			{"BITFIELD k", "[]"},
			{"EXISTS k", ":0"},
			{"BITFIELD_RO k", "[]"},
		},
		"failed writes still grow the key": {
			{"BITFIELD k OVERFLOW FAIL INCRBY u8 16 -1", "[nil]"},
			{"hexget k", "000000"},
			{"SET t a PX 1000", "+OK"},
			{"BITFIELD t SET u8 8 255", "[:0]"},
			{"PTTL t", ":1000"},
			{"hexget t", "61ff"},
		},
		"errors": {
			{"BITFIELD k GET u64 0", errBfTypeS},
			{"BITFIELD k GET i65 0", errBfTypeS},
			{"BITFIELD k GET i0 0", errBfTypeS},
			{"BITFIELD k GET x8 0", errBfTypeS},
			{"BITFIELD k GET \"\" 0", errBfTypeS},
			{"BITFIELD k GET u8 -1", errBitOffsetS},
			{"BITFIELD k GET u8 4294967296", errBitOffsetS},
			{"BITFIELD k GET u8 #536870912", errBitOffsetS},
			{"BITFIELD k GET u8 #536870911", "[:0]"},
			{"BITFIELD k GET u8 #-1", errBitOffsetS},
			{"BITFIELD k GET u8 #", errBitOffsetS},
			{"BITFIELD k SET u8 0 x", errNotIntS},
			{"BITFIELD k OVERFLOW foo GET u8 0", "-ERR Invalid OVERFLOW type specified"},
			{"BITFIELD k OVERFLOW", errSyntaxS},
			{"BITFIELD k GET u8", errSyntaxS},
			{"BITFIELD k SET u8 0", errSyntaxS},
			{"BITFIELD k FOO u8 0", errSyntaxS},
			{"BITFIELD k SET u8 0 1 GET u64 0", errBfTypeS},
			{"EXISTS k", ":0"},
			{"BITFIELD_RO k SET u8 0 1", "-ERR BITFIELD_RO only supports the GET subcommand"},
			{"BITFIELD_RO k GET u8 0 INCRBY u8 0 1", "-ERR BITFIELD_RO only supports the GET subcommand"},
			{"BITFIELD_RO k OVERFLOW SAT GET u8 0", "[:0]"},
			{"mklist l", ""},
			{"BITFIELD l GET u8 0", errWrongTypeS},
			{"BITFIELD l SET u8 0 1", errWrongTypeS},
			{"BITFIELD_RO l GET u8 0", errWrongTypeS},
			{"BITFIELD_RO l SET u8 0 1", "-ERR BITFIELD_RO only supports the GET subcommand"},
		},
	})
}

// TestBitmapsMeta checks the command table entries against Redis 7.2.
func TestBitmapsMeta(t *testing.T) {
	cases := []struct {
		name          string
		arity         int
		flags         resp.Flag
		first, last   int
		acl0, aclLast string
	}{
		{"setbit", 4, fW | fD, 1, 1, "write", "slow"},
		{"getbit", 3, fR | fF, 1, 1, "read", "fast"},
		{"bitcount", -2, fR, 1, 1, "read", "slow"},
		{"bitpos", -3, fR, 1, 1, "read", "slow"},
		{"bitop", -4, fW | fD, 2, -1, "write", "slow"},
		{"bitfield", -2, fW | fD, 1, 1, "write", "slow"},
		{"bitfield_ro", -2, fR | fF, 1, 1, "read", "fast"},
	}
	for _, tc := range cases {
		c := Lookup([]byte(strings.ToUpper(tc.name)))
		if c == nil {
			t.Fatalf("%s not registered", tc.name)
		}
		m := c.Meta
		if m.Arity != tc.arity || m.Flags != tc.flags || m.FirstKey != tc.first || m.LastKey != tc.last ||
			m.Step != 1 || m.Group != "bitmap" || m.ACL[0] != tc.acl0 || m.ACL[2] != tc.aclLast || m.ACL[1] != "bitmap" {
			t.Errorf("%s: meta %+v", tc.name, m)
		}
	}
}

// TestBitmapsModel compares random SETBIT/BITFIELD/BITCOUNT/BITPOS against
// a bit-by-bit model.
func TestBitmapsModel(t *testing.T) {
	h := newHarness(t)
	r := rand.New(rand.NewPCG(1, 2))
	var model []byte // one byte per bit
	bitsOf := func() []byte {
		v := h.apply(fields("GET k"))
		out := make([]byte, 0, len(v.Str)*8)
		for _, b := range v.Str {
			for j := 7; j >= 0; j-- {
				out = append(out, b>>uint(j)&1)
			}
		}
		return out
	}
	for i := range 3000 {
		switch r.IntN(4) {
		case 0:
			off, val := r.IntN(300), r.IntN(2)
			got := h.apply(fields("SETBIT k " + strconv.Itoa(off) + " " + strconv.Itoa(val)))
			for len(model) <= off {
				model = append(model, make([]byte, 8)...)
			}
			if got.Int != int64(model[off]) {
				t.Fatalf("op %d SETBIT %d: got %d want %d", i, off, got.Int, model[off])
			}
			model[off] = byte(val)
		case 1:
			w, off := 1+r.IntN(16), r.IntN(300)
			v := r.Int64N(1 << w)
			h.apply(fields("BITFIELD k SET u" + strconv.Itoa(w) + " " + strconv.Itoa(off) + " " + strconv.FormatInt(v, 10)))
			for len(model) < off+w {
				model = append(model, make([]byte, 8)...)
			}
			for j := range w {
				model[off+j] = byte(v>>(w-1-j)) & 1
			}
		case 2:
			s, e := r.IntN(400)-200, r.IntN(400)-200
			got := h.apply(fields("BITCOUNT k " + strconv.Itoa(s) + " " + strconv.Itoa(e) + " BIT"))
			n := int64(len(model))
			ss, ee := int64(s), int64(e)
			want := int64(0)
			if !(ss < 0 && ee < 0 && ss > ee) {
				if ss < 0 {
					ss += n
				}
				if ee < 0 {
					ee += n
				}
				ss, ee = max(ss, 0), min(max(ee, 0), n-1)
				for j := ss; j <= ee; j++ {
					want += int64(model[j])
				}
			}
			if got.Int != want {
				t.Fatalf("op %d BITCOUNT %d %d BIT: got %d want %d", i, s, e, got.Int, want)
			}
		case 3:
			s, e, bit := r.IntN(400)-200, r.IntN(400)-200, r.IntN(2)
			got := h.apply(fields("BITPOS k " + strconv.Itoa(bit) + " " + strconv.Itoa(s) + " " + strconv.Itoa(e) + " BIT"))
			n := int64(len(model))
			ss, ee := int64(s), int64(e)
			if ss < 0 {
				ss += n
			}
			if ee < 0 {
				ee += n
			}
			ss, ee = max(ss, 0), min(max(ee, 0), n-1)
			want := int64(-1)
			if len(model) == 0 && bit == 0 {
				want = 0 // missing key
			}
			for j := ss; j <= ee; j++ {
				if model[j] == byte(bit) {
					want = j
					break
				}
			}
			if got.Int != want {
				t.Fatalf("op %d BITPOS %d %d %d BIT: got %d want %d (len %d)", i, bit, s, e, got.Int, want, n)
			}
		}
		if i%500 == 0 && !bytes.Equal(bitsOf(), model) {
			t.Fatalf("op %d: value differs from the model", i)
		}
	}
}

// TestBitmapsSnapshotIndependent: a write never changes a string a
// snapshot view holds (strings are rebuilt, never modified in place); run
// with -race while a view is persisted.
func TestBitmapsSnapshotIndependent(t *testing.T) {
	h := newHarness(t)
	h.do("SETBIT k 0 1")
	h.do("SET k2 abc")
	held := h.s.store.GetRaw([]byte("k")).Str
	held2 := h.s.store.GetRaw([]byte("k2")).Str
	v := h.s.store.Snapshot()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			if _, err := v.WriteTo(io.Discard); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := range 200 {
		h.do("SETBIT k " + strconv.Itoa(i%8) + " 1")
		h.do("BITFIELD k INCRBY u8 0 1")
		h.do("BITOP NOT k2 k2")
	}
	wg.Wait()
	if !bytes.Equal(held, []byte{0x80}) || string(held2) != "abc" {
		t.Errorf("held values changed: %x %q", held, held2)
	}
}

// TestBitmapsLarge: a 512 MB bitmap at the offset limit.
func TestBitmapsLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 512 MB")
	}
	h := newHarness(t)
	h.run([]step{
		{"SETBIT big 4294967295 1", ":0"},
		{"STRLEN big", ":536870912"},
		{"BITCOUNT big -1 -1", ":1"},
		{"BITCOUNT big -8 -1 BIT", ":1"},
		{"BITPOS big 1 -1", ":4294967295"},
		{"BITPOS big 0 -1", ":4294967288"},
		{"GETBIT big 4294967295", ":1"},
	})
}

func BenchmarkBitmapsSetbit(b *testing.B) {
	h := newHarness(&testing.T{})
	args := make([][][]byte, 4096)
	for i := range args {
		args[i] = fields("SETBIT k " + strconv.Itoa(i*24) + " 1") // a 12 KB bitmap
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.apply(args[i%len(args)])
	}
}

func BenchmarkBitmapsBitcount1MB(b *testing.B) {
	h := newHarness(&testing.T{})
	h.apply(fields("SETBIT k 8388607 1"))
	b.SetBytes(1 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.apply(fields("BITCOUNT k"))
	}
}

// FuzzBitmapsCommands runs bitmap commands with fuzzed arguments against a
// small string: no panic, and a failing write leaves the value unchanged.
func FuzzBitmapsCommands(f *testing.F) {
	f.Add(uint8(0), "GET", "u8", "#3", "SET", "i64", "100")
	f.Add(uint8(1), "1", "-5", "-1", "BIT", "", "")
	f.Add(uint8(2), "0", "3", "10", "bit", "", "")
	f.Add(uint8(3), "OVERFLOW", "FAIL", "INCRBY", "u63", "0", "-9223372036854775808")
	f.Fuzz(func(t *testing.T, which uint8, a, b, c, d, e, g string) {
		h := newHarness(t)
		h.apply([][]byte{[]byte("SET"), []byte("k"), []byte("\x0f\xf0\xaa")})
		var cmd []string
		switch which % 5 {
		case 0:
			cmd = []string{"BITFIELD", "k", a, b, c, d, e, g}
		case 1:
			cmd = []string{"BITCOUNT", "k", a, b, c}
		case 2:
			cmd = []string{"BITPOS", "k", a, b, c, d}
		case 3:
			cmd = []string{"BITFIELD_RO", "k", a, b, c}
		default:
			cmd = []string{"SETBIT", "k", a, b}
		}
		args := make([][]byte, len(cmd))
		for i, s := range cmd {
			args[i] = []byte(s)
		}
		// Keep allocations small: skip offsets that reach far.
		for _, s := range cmd[2:] {
			s = strings.TrimPrefix(s, "#")
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 1<<16 && which%5 != 1 && which%5 != 2 {
				return
			}
		}
		r := h.apply(args)
		if r.Kind == resp.KindError {
			if v := h.apply(fields("GET k")); string(v.Str) != "\x0f\xf0\xaa" {
				t.Fatalf("%q failed (%s) but changed the value to %x", cmd, r.Str, v.Str)
			}
		}
	})
}
