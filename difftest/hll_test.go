package difftest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// HyperLogLog cross-compatibility with redis-server: the same PFADDs give
// the same bytes (sparse and dense), values move both ways with GET/SET and
// count the same, PFMERGE results are equal, and the estimator returns the
// same count at every size. Keys share the {hll} tag (one slot).

// hllDo sends one command to c and fails on a transport error.
func hllDo(t *testing.T, c *client, args ...string) reply {
	t.Helper()
	r, err := c.do(args...)
	if err != nil {
		t.Fatalf("%.60q: %v", args, err)
	}
	return r
}

// hllBoth sends one command to both servers and wants the same reply.
func hllBoth(t *testing.T, rc, sc *client, args ...string) reply {
	t.Helper()
	want, got := hllDo(t, rc, args...), hllDo(t, sc, args...)
	if want.String() != got.String() {
		t.Errorf("%.80q:\n slotraft %.300s\n redis    %.300s", args, got, want)
	}
	return want
}

// hllRegistersEqual compares two HLL values except the 8 cache bytes
// (PFCOUNT caches the count in Redis; in slotraft it is a read and does not).
func hllRegistersEqual(a, b string) bool {
	if len(a) != len(b) || len(a) < 16 {
		return a == b
	}
	return a[:8] == b[:8] && a[16:] == b[16:]
}

// hllElements returns n distinct elements of varied lengths (binary too).
func hllElements(r *rand.Rand, prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		e := []byte(prefix + strconv.Itoa(i))
		for k := r.IntN(12); k > 0; k-- {
			e = append(e, byte(r.IntN(256)))
		}
		out[i] = string(e)
	}
	return out
}

func hllAdd(t *testing.T, c *client, key string, elems []string, per int) {
	t.Helper()
	var cmds [][]string
	for i := 0; i < len(elems); i += per {
		cmds = append(cmds, append([]string{"PFADD", key}, elems[i:min(i+per, len(elems))]...))
	}
	for i := 0; i < len(cmds); i += 256 {
		rs, err := c.pipeline(cmds[i:min(i+256, len(cmds))])
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.typ == '-' {
				t.Fatalf("PFADD %s: %s", key, r)
			}
		}
	}
}

func TestHLLCrossCompat(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	r := rand.New(rand.NewPCG(6, 1))
	sizes := []int{1, 3, 40, 300, 1000, 1600, 1700, 2500, 20000, 200000}
	for _, n := range sizes {
		key := fmt.Sprintf("{hll}n%d", n)
		elems := hllElements(r, "e", n)
		per := 1
		if n > 2000 {
			per = 500
		}
		hllAdd(t, rc, key, elems, per)
		hllAdd(t, sc, key, elems, per)
		// Same bytes before any PFCOUNT (both caches stale).
		want, got := hllDo(t, rc, "GET", key), hllDo(t, sc, "GET", key)
		if want.str != got.str {
			t.Errorf("n=%d: PFADD bytes differ (len %d vs redis %d)", n, len(got.str), len(want.str))
		}
		hllBoth(t, rc, sc, "PFDEBUG", "ENCODING", key)
		hllBoth(t, rc, sc, "PFDEBUG", "DECODE", key)
		card := hllBoth(t, rc, sc, "PFCOUNT", key)
		t.Logf("n=%d: %d bytes, pfcount %s", n, len(want.str), card.str)
		// After PFCOUNT Redis has cached the count: only those bytes differ.
		want, got = hllDo(t, rc, "GET", key), hllDo(t, sc, "GET", key)
		if !hllRegistersEqual(want.str, got.str) {
			t.Errorf("n=%d: bytes after PFCOUNT differ beyond the cache", n)
		}
		// Redis → slotraft (cache valid and stale) and slotraft → Redis.
		for i, v := range []string{want.str, got.str} {
			k := fmt.Sprintf("%s:copy%d", key, i)
			hllBoth(t, rc, sc, "SET", k, v)
			hllBoth(t, rc, sc, "PFCOUNT", k)
			hllBoth(t, rc, sc, "PFADD", k, "one more element")
			hllBoth(t, rc, sc, "PFCOUNT", k)
		}
		if n <= 3000 {
			hllBoth(t, rc, sc, "PFDEBUG", "GETREG", key+":copy1")
		}
	}
	// PFMERGE: sparse+sparse (stays sparse), sparse+dense, dense+dense,
	// into a missing, sparse, and dense destination, and with no source.
	merges := [][]string{
		{"{hll}m1", "{hll}n40", "{hll}n300"},
		{"{hll}m2", "{hll}n1000", "{hll}n1600"},
		{"{hll}m3", "{hll}n300", "{hll}n20000"},
		{"{hll}m4", "{hll}n20000", "{hll}n200000", "{hll}n1"},
		{"{hll}n3", "{hll}n40"},
		{"{hll}n2500", "{hll}n1", "{hll}nokey"},
		{"{hll}m1", "{hll}n1700"},
		{"{hll}m5"},
		{"{hll}n1"},
	}
	for _, m := range merges {
		hllBoth(t, rc, sc, append([]string{"PFMERGE"}, m...)...)
		want, got := hllDo(t, rc, "GET", m[0]), hllDo(t, sc, "GET", m[0])
		if !hllRegistersEqual(want.str, got.str) || (want.str[15]&0x80 != 0) != (got.str[15]&0x80 != 0) {
			t.Errorf("PFMERGE %q: bytes differ", m)
		}
		hllBoth(t, rc, sc, "PFDEBUG", "ENCODING", m[0])
		hllBoth(t, rc, sc, append([]string{"PFCOUNT"}, m...)...)
		hllBoth(t, rc, sc, "PFCOUNT", m[0])
	}
	// Errors and odd values.
	odd := map[string]string{
		"{hll}str":   "hello",
		"{hll}int":   "12345678901234567890",
		"{hll}enc":   "HYLLxxxxxxxxxxxxxx",
		"{hll}short": "HYLL\x01",
		"{hll}hdr":   "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80",
		"{hll}over":  "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x00",
		"{hll}trunc": "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f",
		"{hll}cache": "HYLL\x01xxxxxxxxxxx\x7f\xff",
		"{hll}dense": "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80" + string(make([]byte, 12288)),
		"{hll}dlong": "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80" + string(make([]byte, 12289)),
	}
	hllBoth(t, rc, sc, "RPUSH", "{hll}list", "x")
	for _, k := range []string{"{hll}str", "{hll}int", "{hll}enc", "{hll}short", "{hll}hdr", "{hll}over", "{hll}trunc", "{hll}cache", "{hll}dense", "{hll}dlong"} {
		hllBoth(t, rc, sc, "SET", k, odd[k])
		hllBoth(t, rc, sc, "PFCOUNT", k)
		hllBoth(t, rc, sc, "PFCOUNT", k, "{hll}n40")
		hllBoth(t, rc, sc, "PFDEBUG", "DECODE", k)
		hllBoth(t, rc, sc, "PFMERGE", "{hll}tmp", k)
		hllBoth(t, rc, sc, "PFADD", k, "a", "b", "c")
		w, g := hllDo(t, rc, "GET", k), hllDo(t, sc, "GET", k)
		if !hllRegistersEqual(w.str, g.str) {
			t.Errorf("%s after PFADD: %.80q, redis %.80q", k, g.str, w.str)
		}
		hllBoth(t, rc, sc, "PFDEBUG", "TODENSE", k)
	}
	for _, args := range [][]string{
		{"PFADD", "{hll}list", "a"}, {"PFCOUNT", "{hll}list"}, {"PFMERGE", "{hll}list"},
		{"PFMERGE", "{hll}x", "{hll}list"}, {"PFDEBUG", "GETREG", "{hll}list"},
		{"PFDEBUG", "GETREG", "{hll}missing"}, {"PFDEBUG", "nope", "{hll}n1"},
		{"PFDEBUG", "nope", "{hll}missing"}, {"PFDEBUG", "GETREG"}, {"PFADD"}, {"PFCOUNT"},
		{"PFMERGE"}, {"PFSELFTEST"}, {"PFSELFTEST", "x"},
	} {
		hllBoth(t, rc, sc, args...)
	}
}

// TestHLLEstimator compares PFCOUNT at many sizes on one growing HLL, and
// the multi-key count (raw registers path) of pairs.
func TestHLLEstimator(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	r := rand.New(rand.NewPCG(7, 2))
	total, step := 0, 1
	for total < 400000 {
		elems := hllElements(r, "x"+strconv.Itoa(total)+":", step)
		hllAdd(t, rc, "{hll}g", elems, 1000)
		hllAdd(t, sc, "{hll}g", elems, 1000)
		total += step
		hllBoth(t, rc, sc, "PFCOUNT", "{hll}g")
		hllBoth(t, rc, sc, "PFCOUNT", "{hll}g", "{hll}h")
		if total%3 == 0 {
			hllAdd(t, rc, "{hll}h", elems[:len(elems)/2+1], 1000)
			hllAdd(t, sc, "{hll}h", elems[:len(elems)/2+1], 1000)
		}
		step = step*5/4 + 1
	}
	w, g := hllDo(t, rc, "GET", "{hll}g"), hllDo(t, sc, "GET", "{hll}g")
	if !hllRegistersEqual(w.str, g.str) {
		t.Error("registers differ")
	}
}
