package fsm

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

func TestHashCommands(t *testing.T) {
	wrong := "-WRONGTYPE Operation against a key holding the wrong kind of value"
	runTable(t, map[string][]step{
		"hset hget": {
			{"hset h f1 v1 f2 v2", ":2"},
			{"hset h f1 x f3 v3", ":1"},
			{"read hget h f1", `"x"`},
			{"read hget h nope", "nil"},
			{"read hget nokey f", "nil"},
			{"read hlen h", ":3"},
			{"read hlen nokey", ":0"},
			{"hset h", "-ERR wrong number of arguments for 'hset' command"},
			{"hset h f1 v f2", "-ERR wrong number of arguments for 'hset' command"},
			{"hmset h a", "-ERR wrong number of arguments for 'hmset' command"},
			{"hmset h a 1 b 2", "+OK"},
			{"read hmget h a b nope", `["1" "2" nil]`},
			{"read hmget nokey a b", "[nil nil]"},
			{`hset h "" ""`, ":1"},
			{`read hget h ""`, `""`},
		},
		"wrongtype": {
			{"set s v", "+OK"},
			{"hset s f v", wrong},
			{"hsetnx s f v", wrong},
			{"read hget s f", wrong},
			{"read hmget s f", wrong},
			{"read hgetall s", wrong},
			{"hdel s f", wrong},
			{"read hexists s f", wrong},
			{"read hlen s", wrong},
			{"read hkeys s", wrong},
			{"read hvals s", wrong},
			{"hincrby s f 1", wrong},
			{"hincrbyfloat s f 1", wrong},
			{"hincrbyfloat s f x", "-ERR value is not a valid float"},
			{"hincrby s f x", "-ERR value is not an integer or out of range"},
			{"read hstrlen s f", wrong},
			{"read hrandfield s", wrong},
			{"read hrandfield s 1", wrong},
			{"read hscan s 0", wrong},
			{"read hscan s x", "-ERR invalid cursor"},
			{"read get s", `"v"`},
		},
		"hsetnx": {
			{"hsetnx h f v", ":1"},
			{"hsetnx h f w", ":0"},
			{"read hget h f", `"v"`},
		},
		"hdel deletes the empty key": {
			{"hset h a 1 b 2", ":2"},
			{"hdel h a nope a", ":1"},
			{"hdel nokey a", ":0"},
			{"read exists h", ":1"},
			{"hdel h b", ":1"},
			{"read exists h", ":0"},
		},
		"hexists hstrlen": {
			{"hset h f hello", ":1"},
			{"read hexists h f", ":1"},
			{"read hexists h g", ":0"},
			{"read hexists nokey g", ":0"},
			{"read hstrlen h f", ":5"},
			{"read hstrlen h g", ":0"},
			{"read hstrlen nokey g", ":0"},
		},
		"hgetall hkeys hvals": {
			{"read hgetall nokey", "{}"},
			{"read hkeys nokey", "[]"},
			{"read hvals nokey", "[]"},
			{"hset h a 1", ":1"},
			{"read hgetall h", `{"a" "1"}`},
			{"read hkeys h", `["a"]`},
			{"read hvals h", `["1"]`},
		},
		"hincrby": {
			{"hincrby h f 5", ":5"},
			{"hincrby h f -7", ":-2"},
			{"hincrby h f x", "-ERR value is not an integer or out of range"},
			{"hincrby h f 1.5", "-ERR value is not an integer or out of range"},
			{"hset h s abc big 9223372036854775807 small -9223372036854775808", ":3"},
			{"hincrby h s 1", "-ERR hash value is not an integer"},
			{"hincrby h big 1", "-ERR increment or decrement would overflow"},
			{"hincrby h small -1", "-ERR increment or decrement would overflow"},
			{"hincrby h big -1", ":9223372036854775806"},
			{"read hget h big", `"9223372036854775806"`},
			{"hincrby nokey f 0", ":0"},
			{"read hget nokey f", `"0"`},
		},
		"hincrbyfloat": {
			{"hincrbyfloat h f 10.5", `"10.5"`},
			{"hincrbyfloat h f 0.1", `"10.6"`},
			{"hincrbyfloat h f -5", `"5.6"`},
			{"hset h e 5.0e3 s abc i 3", ":3"},
			{"hincrbyfloat h e 2.0e2", `"5200"`},
			{"hincrbyfloat h i 1", `"4"`},
			{"hincrbyfloat h s 1", "-ERR hash value is not a float"},
			{"hincrbyfloat h f x", "-ERR value is not a valid float"},
			{"hincrbyfloat h f nan", "-ERR value is not a valid float"},
			{"hincrbyfloat h f inf", "-ERR value is NaN or Infinity"},
			{"hincrbyfloat h f -inf", "-ERR value is NaN or Infinity"},
			{"read hget h f", `"5.6"`},
		},
		"hrandfield errors and edges": {
			{"read hrandfield nokey", "nil"},
			{"read hrandfield nokey 5", "[]"},
			{"read hrandfield nokey -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
			{"read hrandfield nokey -4611686018427387904 withvalues", "-ERR value is out of range"},
			{"read hrandfield nokey 4611686018427387904 withvalues", "-ERR value is out of range"},
			{"read hrandfield nokey -4611686018427387903 withvalues", "[]"},
			{"read hrandfield nokey 1 withvalue", "-ERR syntax error"},
			{"read hrandfield nokey 1 withvalues x", "-ERR syntax error"},
			{"read hrandfield nokey x", "-ERR value is not an integer or out of range"},
			{"hset h a 1", ":1"},
			{"read hrandfield h", `"a"`},
			{"read hrandfield h 0", "[]"},
			{"read hrandfield h 5", `["a"]`},
			{"read hrandfield h -3", `["a" "a" "a"]`},
			{"read hrandfield h -16777217", `-ERR value is out of range`},
			{"read hrandfield h -2 withvalues", `["a" "1" "a" "1"]`},
			{"read hrandfield h 2 WITHVALUES", `["a" "1"]`},
		},
		"hscan": {
			{"read hscan nokey 0", `["0" []]`},
			{"read hscan nokey 0 type x", `["0" []]`},
			{"hset h a 1 b 2", ":2"},
			{"read hscan h 0 type string", "-ERR syntax error"},
			{"read hscan h 0 count 0", "-ERR syntax error"},
			{"read hscan h 0 count x", "-ERR value is not an integer or out of range"},
			{"read hscan h 0 match", "-ERR syntax error"},
			{"read hscan h 0 match a", `["0" ["a" "1"]]`},
			{"read hscan h 18446744073709551615 match b count 1", `["0" ["b" "2"]]`},
			{"read hscan h 18446744073709551616", "-ERR invalid cursor"},
		},
	})
}

// hashFields returns a hash's fields through HKEYS, sorted.
func hashFields(h *harness, key string) []string {
	v := replyOf(h.s.Read(h.now, Lookup([]byte("hkeys")), fields("hkeys "+key)))
	var out []string
	for _, e := range v.Elems {
		out = append(out, string(e.Str))
	}
	sort.Strings(out)
	return out
}

func TestHashRESP3Shapes(t *testing.T) {
	h := newHarness(t)
	h.do("hset h a 1 b 2")
	v := replyOf(h.s.Read(h.now, Lookup([]byte("hgetall")), fields("hgetall h")))
	if v.Kind != resp.KindMap || len(v.Elems) != 4 {
		t.Fatalf("HGETALL is %v, want a map of 2 pairs", show(v))
	}
	if got := string(v.Append(nil, resp.RESP3)[:3]); got != "%2\r" {
		t.Fatalf("RESP3 HGETALL starts %q", got)
	}
	if got := string(v.Append(nil, resp.RESP2)[:3]); got != "*4\r" {
		t.Fatalf("RESP2 HGETALL starts %q", got)
	}
}

// HSCAN over a hashtable-encoded hash visits every field that stays for
// the whole scan, while fields come and go between calls.
func TestHashScanAcrossChanges(t *testing.T) {
	h := newHarness(t)
	const n = 1000
	args := []string{"hset", "h"}
	for i := range n {
		args = append(args, "f"+strconv.Itoa(i), "v")
	}
	h.apply(hsArgs(args))
	seen := map[string]bool{}
	cursor := "0"
	for round := 0; ; round++ {
		v := replyOf(h.s.Read(h.now, Lookup([]byte("hscan")), fields("hscan h "+cursor+" count 7")))
		if v.Kind != resp.KindArray {
			t.Fatal(show(v))
		}
		for i := 0; i < len(v.Elems[1].Elems); i += 2 {
			seen[string(v.Elems[1].Elems[i].Str)] = true
		}
		// Churn: add new fields and delete ones with odd numbers.
		h.do("hset h new" + strconv.Itoa(round) + " x")
		h.do("hdel h f" + strconv.Itoa(2*round+1))
		cursor = string(v.Elems[0].Str)
		if cursor == "0" {
			break
		}
		if round > n {
			t.Fatal("scan does not end")
		}
	}
	for i := 0; i < n; i += 2 { // even fields were never deleted
		if !seen["f"+strconv.Itoa(i)] {
			t.Fatalf("field f%d missed by the scan", i)
		}
	}
}

func TestHashRandomDeterministicAndUniform(t *testing.T) {
	h := newHarness(t)
	args := []string{"hset", "h"}
	for i := range 10 {
		args = append(args, "f"+strconv.Itoa(i), strconv.Itoa(i))
	}
	h.apply(hsArgs(args))
	// Same seed, same picks.
	c1 := &Ctx{Store: h.s.store, Now: h.now, Rand: hsRand(7)}
	c2 := &Ctx{Store: h.s.store, Now: h.now, Rand: hsRand(7)}
	a := show(hrandfieldCmd(c1, fields("hrandfield h -50 withvalues")))
	b := show(hrandfieldCmd(c2, fields("hrandfield h -50 withvalues")))
	if a != b {
		t.Fatalf("same seed gave %s and %s", a, b)
	}
	// Distinct picks: never a repeat, and each field about equally often.
	counts := map[string]int{}
	c := &Ctx{Store: h.s.store, Now: h.now, Rand: hsRand(1)}
	const rounds = 20000
	for range rounds {
		v := hrandfieldCmd(c, fields("hrandfield h 3"))
		got := map[string]bool{}
		for _, e := range v.Elems {
			if got[string(e.Str)] {
				t.Fatalf("repeat in %s", show(v))
			}
			got[string(e.Str)] = true
			counts[string(e.Str)]++
		}
	}
	want := rounds * 3 / 10
	for f, n := range counts {
		if n < want*9/10 || n > want*11/10 {
			t.Errorf("field %s picked %d times, want about %d", f, n, want)
		}
	}
	if got := hashFields(h, "h"); len(got) != 10 {
		t.Fatalf("fields %v", got)
	}
}

// A failed write changes nothing (not even the key's version).
func TestHashFailedWriteChangesNothing(t *testing.T) {
	h := newHarness(t)
	h.do("hset h s abc")
	before := h.s.store.Get([]byte("h"), h.now).Version
	for _, cmd := range []string{"hincrby h s 1", "hincrbyfloat h s 1", "hincrby h s x", "hset h a"} {
		if got := h.do(cmd); !strings.HasPrefix(got, "-") {
			t.Fatalf("%s: %s", cmd, got)
		}
	}
	if v := h.s.store.Get([]byte("h"), h.now).Version; v != before {
		t.Fatalf("version moved from %d to %d", before, v)
	}
	if h.do("hincrby nokey f x") == ":0" || h.s.store.Get([]byte("nokey"), h.now) != nil {
		t.Fatal("a failed HINCRBY created its key")
	}
}

func TestHashEncodingThroughCommands(t *testing.T) {
	h := newHarness(t)
	enc := func(key string) string {
		return h.s.store.Get([]byte(key), h.now).Coll.(*store.Hash).Encoding()
	}
	h.do("hset small f v")
	if enc("small") != "listpack" {
		t.Fatal(enc("small"))
	}
	h.do("hset long f " + strings.Repeat("x", 65))
	if enc("long") != "hashtable" {
		t.Fatal(enc("long"))
	}
	h.do("hsetnx small2 f v")
	h.do("hincrbyfloat small2 g 1")
	if enc("small2") != "listpack" {
		t.Fatal(enc("small2"))
	}
}

func hsArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func hsRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }
