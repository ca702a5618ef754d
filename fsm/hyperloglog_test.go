package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// hllGet returns the raw string value at key.
func hllTestGet(t *testing.T, h *harness, key string) []byte {
	t.Helper()
	v := replyOf(h.s.Read(h.now, Lookup([]byte("get")), [][]byte{[]byte("get"), []byte(key)}))
	if v.Kind != resp.KindBulk {
		t.Fatalf("GET %s: %s", key, show(v))
	}
	return v.Str
}

func hllTestSet(t *testing.T, h *harness, key string, val []byte) {
	t.Helper()
	if r := h.apply([][]byte{[]byte("set"), []byte(key), val}); show(r) != "+OK" {
		t.Fatalf("SET: %s", show(r))
	}
}

func hllUnquote(t *testing.T, s string) []byte {
	t.Helper()
	u, err := strconv.Unquote(s)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(u)
}

// hllWithCache returns v with its cache bytes set to card (valid).
func hllWithCache(v []byte, card uint64) []byte {
	out := bytes.Clone(v)
	binary.LittleEndian.PutUint64(out[8:16], card)
	return out
}

// TestHLLGolden compares values with the bytes redis-server produces for
// the same commands (redis-cli --no-raw GET).
func TestHLLGolden(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"pfadd h a b c", ":1"},
		{"pfadd h a b c", ":0"},
		{"pfdebug decode h", `"Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"`},
		{"read pfcount h", ":3"},
		{"pfadd h2 foo bar zap a", ":1"},
		{"pfadd h3 a b c foo", ":1"},
		{"pfmerge h4 h2 h3", "+OK"},
		{"read pfcount h4", ":6"},
		{"read pfcount h2 h3", ":6"},
		{"pfdebug decode h4", `"Z:7348 v:5,1 Z:520 v:2,1 Z:566 v:1,1 Z:1570 v:1,1 Z:2703 v:2,1 Z:3068 v:1,1 Z:603"`},
		{"pfadd e", ":1"},
		{"pfadd e", ":0"},
		{"pfmerge d", "+OK"},
	})
	// Redis's bytes after PFCOUNT cached the count; ours keep the stale
	// flag (PFCOUNT is a read), so compare with the cache Redis had before.
	stale := func(s string) []byte {
		b := hllUnquote(t, s)
		return hllWithCache(b, 1<<63)
	}
	for _, tc := range []struct{ key, redis string }{
		{"h", `"HYLL\x01\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00` + "`" + `\xf3\x80P\xb1\x84K\xfb\x80BZ"`},
		{"h4", `"HYLL\x01\x00\x00\x00\x06\x00\x00\x00\x00\x00\x00\x00\\\xb3\x90B\a\x84B5\x80F!\x80J\x8e\x84K\xfb\x80BZ"`},
		{"e", `"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"`},
		{"d", `"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"`},
	} {
		if got, want := hllTestGet(t, h, tc.key), stale(tc.redis); !bytes.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", tc.key, got, want)
		}
	}
	// A value with a valid cache (as Redis stores it after PFCOUNT) is
	// answered from the cache.
	hllTestSet(t, h, "c", hllWithCache(hllTestGet(t, h, "h"), 12345))
	h.run([]step{{"read pfcount c", ":12345"}, {"read pfcount c h", ":3"}})
}

func TestHLLMurmur(t *testing.T) {
	// The hash of every length class 0..17 must be stable; spot values
	// come from the golden test above (registers and counts), here the
	// tail handling is checked against a byte-by-byte reference.
	ref := func(key []byte, seed uint32) uint64 {
		const m = 0xc6a4a7935bd1e995
		h := uint64(seed) ^ uint64(len(key))*m
		n := len(key) - len(key)%8
		for i := 0; i < n; i += 8 {
			var k uint64
			for j := 7; j >= 0; j-- {
				k = k<<8 | uint64(key[i+j])
			}
			k *= m
			k ^= k >> 47
			k *= m
			h ^= k
			h *= m
		}
		switch len(key) & 7 {
		case 7:
			h ^= uint64(key[n+6]) << 48
			fallthrough
		case 6:
			h ^= uint64(key[n+5]) << 40
			fallthrough
		case 5:
			h ^= uint64(key[n+4]) << 32
			fallthrough
		case 4:
			h ^= uint64(key[n+3]) << 24
			fallthrough
		case 3:
			h ^= uint64(key[n+2]) << 16
			fallthrough
		case 2:
			h ^= uint64(key[n+1]) << 8
			fallthrough
		case 1:
			h ^= uint64(key[n])
			h *= m
		}
		h ^= h >> 47
		h *= m
		h ^= h >> 47
		return h
	}
	key := []byte("0123456789abcdefghij")
	for n := 0; n <= len(key); n++ {
		if got, want := murmurHash64A(key[:n], hllSeed), ref(key[:n], hllSeed); got != want {
			t.Errorf("len %d: %x, want %x", n, got, want)
		}
	}
}

func TestHLLCommands(t *testing.T) {
	runTable(t, map[string][]step{
		"missing": {
			{"read pfcount nokey", ":0"},
			{"read pfcount nokey other", ":0"},
			{"pfmerge dst nokey", "+OK"},
			{"read pfcount dst", ":0"},
			{"pfdebug encoding nokey", "-ERR The specified key does not exist"},
		},
		"wrongtype": {
			{"mklist l", ""},
			{"set s hello", "+OK"},
			{"set i 12345678901234567890", "+OK"},
			{"pfadd l a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"pfadd s a", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"pfadd i a", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"read pfcount l", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"read pfcount s", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"read pfcount x s", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"pfmerge x s", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"pfmerge s", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"pfmerge l", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"exists x", ":0"},
			{"pfdebug encoding s", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"pfdebug encoding l", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"set hdr HYLLxxxxxxxxxxxxxx", "+OK"}, // encoding 'x' > 1
			{"pfadd hdr a", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
			{"set short HYLL", "+OK"},
			{"pfadd short a", "-WRONGTYPE Key is not a valid HyperLogLog string value."},
		},
		"pfdebug": {
			{"pfadd h a b c", ":1"},
			{"pfdebug encoding h", "+sparse"},
			{"pfdebug foo h", "-ERR Unknown PFDEBUG subcommand 'foo'"},
			{"pfdebug ToDense h", ":1"},
			{"pfdebug todense h", ":0"},
			{"pfdebug ENCODING h", "+dense"},
			{"pfdebug decode h", "-ERR HLL encoding is not sparse"},
			{"read pfcount h", ":3"},
			{"pfadd h d", ":1"},
			{"read pfcount h", ":4"},
		},
		"add-count": {
			{"pfadd h", ":1"},
			{"pfadd h a", ":1"},
			{"pfadd h a", ":0"},
			{"pfadd h a b c d e f g h i j k l m n o p", ":1"},
			{"read pfcount h", ":16"},
			{"pfadd g x y z", ":1"},
			{"read pfcount h g", ":19"},
			{"pfmerge h g", "+OK"},
			{"read pfcount h", ":19"},
			{"pfmerge h", "+OK"},
			{"read pfcount h", ":19"},
		},
		"ttl-kept": {
			{"pfadd h a", ":1"},
			{"pexpire h 100000", ":1"},
			{"pfadd h b", ":1"},
			{"pttl h", ":100000"},
			{"pfmerge h", "+OK"},
			{"pttl h", ":100000"},
			{"pfdebug todense h", ":1"},
			{"pttl h", ":100000"},
		},
	})
}

// TestHLLWatchVersion: a PFADD that changes nothing leaves the key's
// version alone (Redis signals no modification); one that changes it moves it.
func TestHLLWatchVersion(t *testing.T) {
	h := newHarness(t)
	h.do("pfadd h a")
	v0 := h.s.store.GetRaw([]byte("h")).Version
	h.do("pfadd h a")
	h.do("pfdebug todense h")
	if v := h.s.store.GetRaw([]byte("h")).Version; v != v0 {
		t.Fatalf("version moved %d -> %d on no-op PFADD / PFDEBUG", v0, v)
	}
	h.do("pfadd h b")
	if v := h.s.store.GetRaw([]byte("h")).Version; v == v0 {
		t.Fatal("version did not move on PFADD that changed a register")
	}
}

// TestHLLCorrupted: values with a valid header but bad sparse data.
func TestHLLCorrupted(t *testing.T) {
	h := newHarness(t)
	hdr := []byte("HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80")
	bad := append(bytes.Clone(hdr), 0x7f, 0xff, 0x00) // 16385 registers
	hllTestSet(t, h, "bad", bad)
	hllTestSet(t, h, "short", append(bytes.Clone(hdr), 0x7f, 0xfe)) // 16383 registers
	hllTestSet(t, h, "empty", bytes.Clone(hdr))
	hllTestSet(t, h, "trunc", append(bytes.Clone(hdr), 0x7f))
	// Garbage cache, valid flag: returned as is, as Redis does.
	cached := append([]byte("HYLL\x01xxxxxxxxxxx"), 0x00)
	hllTestSet(t, h, "cached", cached)
	h.run([]step{
		{"read pfcount bad", "-INVALIDOBJ Corrupted HLL object detected"},
		{"read pfcount short", "-INVALIDOBJ Corrupted HLL object detected"},
		{"read pfcount empty", "-INVALIDOBJ Corrupted HLL object detected"},
		{"read pfcount cached", ":8680820740569200760"},
		{"read pfcount cached nokey", "-INVALIDOBJ Corrupted HLL object detected"},
		// Like Redis, PFADD only reads the opcodes up to the register it
		// sets: the junk after the last register survives (redis-server agrees).
		{"pfadd bad a b c", ":1"},
		{"pfdebug decode bad", `"Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603 z:1"`},
		{"read pfcount bad", "-INVALIDOBJ Corrupted HLL object detected"},
		// A truncated XZERO reads Redis's zero terminator: Z:16129.
		{"pfdebug decode trunc", `"Z:16129"`},
		{"pfadd trunc a b c", ":1"},
		{"pfdebug decode trunc", `"Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:257"`},
		{"pfadd empty a", "-INVALIDOBJ Corrupted HLL object detected"},
		{"pfmerge empty", "-INVALIDOBJ Corrupted HLL object detected"},
		{"pfmerge x bad", "-INVALIDOBJ Corrupted HLL object detected"},
		{"exists x", ":0"},
		{"pfdebug getreg bad", "-INVALIDOBJ Corrupted HLL object detected"},
		{"pfdebug todense short", "-INVALIDOBJ Corrupted HLL object detected"},
	})
	want := hllUnquote(t, `"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80`+"`"+`\xf3\x80P\xb1\x84K\xfb\x80A"`)
	if got := hllTestGet(t, h, "trunc"); !bytes.Equal(got, want) {
		t.Fatalf("trunc: %q, redis-server has %q", got, want)
	}
}

// TestHLLPromotion adds elements one at a time until the value turns
// dense: the sparse value never exceeds 3000 bytes, and sparse and dense
// forms count the same at every step.
func TestHLLPromotion(t *testing.T) {
	h := newHarness(t)
	maxSparse := 0
	for i := 0; ; i++ {
		h.apply([][]byte{[]byte("pfadd"), []byte("h"), []byte("e" + strconv.Itoa(i))})
		v := hllTestGet(t, h, "h")
		if v[4] == hllDense {
			if len(v) != hllDenseSize {
				t.Fatalf("dense size %d", len(v))
			}
			t.Logf("promoted after %d elements, largest sparse %d bytes", i+1, maxSparse)
			break
		}
		maxSparse = max(maxSparse, len(v))
		if len(v) > hllSparseMaxLen {
			t.Fatalf("sparse value of %d bytes", len(v))
		}
		if i%50 == 0 {
			d, ok := hllSparseToDense(v)
			if !ok {
				t.Fatalf("sparse value invalid after %d adds", i+1)
			}
			var hs, hd [64]int
			hllHisto(v, &hs)
			hllHisto(d, &hd)
			if hs != hd {
				t.Fatalf("histograms differ after %d adds", i+1)
			}
		}
	}
	if maxSparse < hllSparseMaxLen-10 {
		t.Fatalf("promoted early: largest sparse %d", maxSparse)
	}
}

// TestHLLSparseMatchesDense: register by register, setting the same values
// in sparse and dense gives the same registers, for many random patterns.
func TestHLLSparseMatchesDense(t *testing.T) {
	c := &Ctx{Rand: rand.New(rand.NewPCG(1, 2))}
	for round := 0; round < 200; round++ {
		sp := hllCreate()
		dn, _ := hllSparseToDense(sp)
		dn = bytes.Clone(dn)
		n := 1 + c.Rand.IntN(400)
		for k := 0; k < n; k++ {
			idx := c.Rand.IntN(hllRegisters)
			if c.Rand.IntN(4) == 0 && k > 0 { // neighbours make VAL runs
				idx = (idx % 64) + 100
			}
			cnt := uint8(1 + c.Rand.IntN(8))
			if c.Rand.IntN(500) == 0 {
				cnt = 40
			}
			var ok bool
			sp, _, ok = hllSet(sp, true, idx, cnt)
			if !ok {
				t.Fatal("sparse set failed")
			}
			hllDenseSet(dn[hllHdrSize:], idx, cnt)
		}
		d2, ok := hllSparseToDense(sp)
		if !ok {
			t.Fatalf("round %d: sparse invalid: %s", round, hllDecode(sp))
		}
		if !bytes.Equal(d2[hllHdrSize:], dn[hllHdrSize:]) {
			t.Fatalf("round %d: registers differ", round)
		}
	}
}

// TestHLLCopyOnWrite: a stored value shared with a snapshot is never
// changed in place by PFADD, PFMERGE or PFDEBUG.
func TestHLLCopyOnWrite(t *testing.T) {
	h := newHarness(t)
	h.do("pfadd s a b c")
	for i := 0; i < 3000; i++ {
		h.apply([][]byte{[]byte("pfadd"), []byte("d"), []byte("x" + strconv.Itoa(i))})
	}
	for _, line := range []string{"pfadd s zz", "pfmerge s d", "pfadd d q1 q2 q3 q4", "pfmerge d s", "pfdebug todense s"} {
		f := fields(line)
		key := f[len(f)-1]
		if f[0][2] == 'a' || f[0][2] == 'm' { // pfadd/pfmerge: the first key
			key = f[1]
		}
		before := h.s.store.GetRaw(key).Str
		saved := bytes.Clone(before)
		h.do(line)
		if !bytes.Equal(before, saved) {
			t.Fatalf("%s changed the old value in place", line)
		}
	}
}

// TestHLLAccuracy counts 1,000,000 distinct elements through PFADD; the
// error must be within 3 standard errors (3 × 0.81%).
func TestHLLAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("1M elements")
	}
	h := newHarness(t)
	const n, batch = 1_000_000, 1000
	args := make([][]byte, 2+batch)
	args[0], args[1] = []byte("pfadd"), []byte("h")
	for i := 0; i < n; i += batch {
		for j := 0; j < batch; j++ {
			args[2+j] = []byte("element:" + strconv.Itoa(i+j))
		}
		h.apply(args)
		if i == 0 || i == 9000 || i == 99000 {
			checkHLLError(t, h, i+batch)
		}
	}
	checkHLLError(t, h, n)
}

func checkHLLError(t *testing.T, h *harness, n int) {
	t.Helper()
	got, _ := strconv.Atoi(strings.TrimPrefix(h.read("pfcount h"), ":"))
	rel := math.Abs(float64(got)-float64(n)) / float64(n)
	t.Logf("n=%d pfcount=%d error=%.3f%%", n, got, rel*100)
	if rel > 3*0.0081 {
		t.Errorf("n=%d: pfcount %d, error %.3f%% > 2.43%%", n, got, rel*100)
	}
}

func TestHLLSelftest(t *testing.T) {
	h := newHarness(t)
	if got := h.read("pfselftest"); got != "+OK" {
		t.Fatal(got)
	}
}

func TestHLLMeta(t *testing.T) {
	for _, tc := range []struct {
		name  string
		arity int
		flags []string
	}{
		{"pfadd", -2, []string{"write", "denyoom", "fast"}},
		{"pfcount", -2, []string{"readonly", "may_replicate"}},
		{"pfmerge", -2, []string{"write", "denyoom"}},
		{"pfdebug", 3, []string{"write", "denyoom", "admin"}},
		{"pfselftest", 1, []string{"admin"}},
	} {
		m := Lookup([]byte(tc.name)).Meta
		if m.Arity != tc.arity || fmt.Sprint(m.Flags.Names()) != fmt.Sprint(tc.flags) {
			t.Errorf("%s: arity %d flags %v", tc.name, m.Arity, m.Flags.Names())
		}
	}
}

// FuzzPFCount runs the HLL commands on arbitrary bytes as a value (after
// an "HYLL" header most of the time): no panic, and a write that fails
// leaves the value unchanged.
func FuzzPFCount(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff"), true)
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f"), true)
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\xff\x00\x40\x01"), true)
	f.Add([]byte("\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7e\x00\x80\x7f"), true)
	f.Add(append([]byte("\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80"), make([]byte, 12288)...), true)
	f.Add([]byte("anything"), false)
	f.Fuzz(func(t *testing.T, data []byte, header bool) {
		val := data
		if header {
			val = append([]byte("HYLL"), data...)
		}
		h := newHarness(t)
		for _, line := range [][]string{
			{"pfcount", "k"}, {"pfcount", "k", "k2"}, {"pfdebug", "decode", "k"},
			{"pfadd", "k", "a", "b", "c", "d", "e"}, {"pfmerge", "k2", "k"},
			{"pfmerge", "k"}, {"pfdebug", "getreg", "k"}, {"pfadd", "k", "z"},
		} {
			h.s.store.Put([]byte("k"), &store.Object{Type: store.TypeString, Str: bytes.Clone(val)})
			args := make([][]byte, len(line))
			for i, a := range line {
				args[i] = []byte(a)
			}
			var r resp.Value
			if Lookup(args[0]).Meta.Flags&resp.FlagWrite != 0 {
				r = h.apply(args)
			} else {
				r = replyOf(h.s.Read(h.now, Lookup(args[0]), args))
			}
			if r.Kind == resp.KindError && strings.Contains(string(r.Str), "internal error") {
				t.Fatalf("%v on %q: %s", line, val, r.Str)
			}
			if r.Kind == resp.KindError && line[0] != "pfdebug" {
				if got := h.s.store.GetRaw([]byte("k")).Str; !bytes.Equal(got, val) {
					t.Fatalf("%v failed (%s) but changed the value", line, r.Str)
				}
			}
		}
	})
}

func BenchmarkPFAdd(b *testing.B) {
	for _, tc := range []struct {
		name string
		pre  int
	}{{"sparse", 100}, {"dense", 100000}} {
		b.Run(tc.name, func(b *testing.B) {
			h := newHarness(nil)
			for i := 0; i < tc.pre; i++ {
				h.apply([][]byte{[]byte("pfadd"), []byte("h"), []byte("p" + strconv.Itoa(i))})
			}
			args := [][]byte{[]byte("pfadd"), []byte("h"), nil}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				args[2] = []byte("e" + strconv.Itoa(i%1000))
				h.apply(args)
			}
		})
	}
}

func BenchmarkPFCount(b *testing.B) {
	h := newHarness(nil)
	for i := 0; i < 100; i++ {
		args := [][]byte{[]byte("pfadd"), []byte("h")}
		for j := 0; j < 1000; j++ {
			args = append(args, []byte(strconv.Itoa(i*1000+j)))
		}
		h.apply(args)
	}
	cmd := Lookup([]byte("pfcount"))
	args := [][]byte{[]byte("pfcount"), []byte("h")}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		replyOf(h.s.Read(h.now, cmd, args))
	}
}
