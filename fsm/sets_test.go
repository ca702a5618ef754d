package fsm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

func TestSetCommands(t *testing.T) {
	wrong := "-WRONGTYPE Operation against a key holding the wrong kind of value"
	runTable(t, map[string][]step{
		"sadd srem scard": {
			{"sadd s a b a", ":2"},
			{"sadd s b c", ":1"},
			{"read scard s", ":3"},
			{"read scard nokey", ":0"},
			{"srem s a x a", ":1"},
			{"srem nokey a", ":0"},
			{"srem s b c", ":2"},
			{"read exists s", ":0"},
		},
		"wrongtype": {
			{"set str v", "+OK"},
			{"sadd s a", ":1"},
			{"sadd str a", wrong},
			{"srem str a", wrong},
			{"read smembers str", wrong},
			{"read sismember str a", wrong},
			{"read smismember str a", wrong},
			{"read scard str", wrong},
			{"spop str", wrong},
			{"spop str 1", wrong},
			{"read srandmember str", wrong},
			{"read srandmember str 2", wrong},
			{"smove str s a", wrong},
			{"smove s str a", wrong},
			{"smove nokey str a", ":0"},
			{"read sinter nokey str", wrong},
			{"read sunion nokey str", wrong},
			{"read sdiff nokey str", wrong},
			{"read sdiff str nokey", wrong},
			{"sinterstore d nokey str", wrong},
			{"sunionstore d s str", wrong},
			{"sdiffstore d s str", wrong},
			{"read sintercard 2 nokey str", wrong},
			{"read sscan str 0", wrong},
			{"read smembers s", `["a"]`},
		},
		"membership": {
			{"sadd s a b", ":2"},
			{"read sismember s a", ":1"},
			{"read sismember s z", ":0"},
			{"read sismember nokey z", ":0"},
			{"read smismember s a z b", "[:1 :0 :1]"},
			{"read smismember nokey a", "[:0]"},
			{"read smembers nokey", "[]"},
		},
		"spop": {
			{"spop nokey", "nil"},
			{"spop nokey 3", "[]"},
			{"spop nokey -1", "-ERR value is out of range, must be positive"},
			{"spop nokey x", "-ERR value is out of range, must be positive"},
			{"spop nokey 1 2", "-ERR syntax error"},
			{"sadd s a", ":1"},
			{"spop s 0", "[]"},
			{"spop s", `"a"`},
			{"read exists s", ":0"},
			{"sadd s a", ":1"},
			{"spop s 5", `["a"]`},
			{"read exists s", ":0"},
		},
		"srandmember": {
			{"read srandmember nokey", "nil"},
			{"read srandmember nokey 3", "[]"},
			{"read srandmember nokey -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
			{"read srandmember nokey x", "-ERR value is not an integer or out of range"},
			{"read srandmember nokey 1 2", "-ERR syntax error"},
			{"sadd s a", ":1"},
			{"read srandmember s", `"a"`},
			{"read srandmember s -3", `["a" "a" "a"]`},
			{"read srandmember s -16777217", `-ERR value is out of range`},
			{"read srandmember missing -16777217", `[]`},
			{"read srandmember s 3", `["a"]`},
			{"read srandmember s 0", "[]"},
		},
		"smove": {
			{"sadd a x y", ":2"},
			{"smove a b x", ":1"},
			{"smove a b x", ":0"},
			{"smove a a y", ":1"},
			{"smove a a z", ":0"},
			{"read smembers b", `["x"]`},
			{"smove a b y", ":1"},
			{"read exists a", ":0"},
			{"sorted smembers b", `["x" "y"]`},
		},
		"inter union diff": {
			{"sadd a 1 2 3 4", ":4"},
			{"sadd b 2 3 5", ":3"},
			{"sadd c 3 4 5", ":3"},
			{"sorted sinter a b", `["2" "3"]`},
			{"read sinter a b c", `["3"]`},
			{"read sinter a nokey", "[]"},
			{"sorted sunion a b", `["1" "2" "3" "4" "5"]`},
			{"sorted sunion nokey b", `["2" "3" "5"]`},
			{"sorted sdiff a b", `["1" "4"]`},
			{"read sdiff a b c", `["1"]`},
			{"read sdiff nokey a", "[]"},
			{"sorted sdiff a nokey", `["1" "2" "3" "4"]`},
			{"read sintercard 2 a b", ":2"},
			{"read sintercard 2 a b limit 1", ":1"},
			{"read sintercard 2 a b limit 0", ":2"},
			{"read sintercard 2 a nokey", ":0"},
			{"read sintercard 0 a", "-ERR numkeys should be greater than 0"},
			{"read sintercard x a", "-ERR numkeys should be greater than 0"},
			{"read sintercard 2 a", "-ERR Number of keys can't be greater than number of args"},
			{"read sintercard 1 a limit -1", "-ERR LIMIT can't be negative"},
			{"read sintercard 1 a limit x", "-ERR LIMIT can't be negative"},
			{"read sintercard 1 a limt 1", "-ERR syntax error"},
			{"read sintercard 1 a limit", "-ERR syntax error"},
		},
		"store commands": {
			{"sadd a 1 2 3", ":3"},
			{"sadd b 3 4", ":2"},
			{"set d x", "+OK"},
			{"expire d 100", ":1"},
			{"sinterstore d a b", ":1"},
			{"read ttl d", ":-1"},
			{"read smembers d", `["3"]`},
			{"sunionstore d a b", ":4"},
			{"sdiffstore d a b", ":2"},
			{"sorted smembers d", `["1" "2"]`},
			{"sinterstore d a nokey", ":0"},
			{"read exists d", ":0"},
			{"sunionstore d a", ":3"},
			{"sdiffstore d a a", ":0"},
			{"read exists d", ":0"},
			{"sunionstore a a b", ":4"},
			{"sorted smembers a", `["1" "2" "3" "4"]`},
		},
		"sscan": {
			{"read sscan nokey 0", `["0" []]`},
			{"sadd s a b 1", ":3"},
			{"read sscan s x", "-ERR invalid cursor"},
			{"read sscan s 0 type set", "-ERR syntax error"},
			{"read sscan s 0 count 0", "-ERR syntax error"},
			{"read sscan s 0 match a", `["0" ["a"]]`},
			{"read sscan s 12345 match 1 count 1", `["0" ["1"]]`},
		},
	})
}

func TestSetRESP3Shapes(t *testing.T) {
	h := newHarness(t)
	h.do("sadd s a b c")
	for _, cmd := range []string{"smembers s", "sinter s", "sunion s", "sdiff s"} {
		if v := replyOf(h.s.Read(h.now, Lookup(fields(cmd)[0]), fields(cmd))); v.Kind != resp.KindSet || len(v.Elems) != 3 {
			t.Errorf("%s: %s is not a set of 3", cmd, show(v))
		}
	}
	if v := h.apply(fields("spop s 2")); v.Kind != resp.KindSet {
		t.Errorf("SPOP with count: %s is not a set", show(v))
	}
	if v := replyOf(h.s.Read(h.now, Lookup([]byte("srandmember")), fields("srandmember s 2"))); v.Kind != resp.KindArray {
		t.Errorf("SRANDMEMBER with count: %s is not an array", show(v))
	}
}

func TestSetEncodings(t *testing.T) {
	h := newHarness(t)
	enc := func(key string) string {
		return h.s.store.Get([]byte(key), h.now).Coll.(*store.Set).Encoding()
	}
	many := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(" " + prefix + strconv.Itoa(i))
		}
		return b.String()
	}
	cases := []struct {
		cmds []string
		want string
	}{
		{[]string{"sadd k 1 2 3"}, "intset"},
		{[]string{"sadd k 1 2 a"}, "listpack"},
		{[]string{"sadd k 1", "sadd k a"}, "listpack"},
		{[]string{"sadd k a" + many("", 128)}, "hashtable"}, // 129 arguments
		{[]string{"sadd k" + many("", 512)}, "intset"},
		{[]string{"sadd k" + many("", 513)}, "hashtable"},
		{[]string{"sadd k" + many("", 200), "sadd k a"}, "hashtable"},
		{[]string{"sadd k " + strings.Repeat("x", 65)}, "hashtable"},
		{[]string{"sadd k 1 2", "srem k 1"}, "intset"},
		{[]string{"sadd k" + many("m", 129), "srem k" + many("m", 128)}, "hashtable"}, // never back
		{[]string{"sadd a 1 2", "sadd b 2 x", "sunionstore k a b"}, "listpack"},
		{[]string{"sadd a 1 2", "sadd b 2 3", "sunionstore k a b"}, "intset"},
		{[]string{"sadd a 1", "smove a k 1"}, "intset"},
	}
	for _, tc := range cases {
		h.do("flushall")
		for _, cmd := range tc.cmds {
			if got := h.do(cmd); strings.HasPrefix(got, "-") {
				t.Fatalf("%s: %s", cmd, got)
			}
		}
		if got := enc("k"); got != tc.want {
			t.Errorf("%q: encoding %s, want %s", tc.cmds, got, tc.want)
		}
	}
}

func TestSetRandomUniform(t *testing.T) {
	h := newHarness(t)
	h.do("sadd s a b c d e f g h i j")
	c := &Ctx{Store: h.s.store, Now: h.now, Rand: hsRand(3)}
	counts := map[string]int{}
	const rounds = 20000
	for range rounds {
		for _, e := range srandmemberCmd(c, fields("srandmember s 8")).Elems {
			counts[string(e.Str)]++
		}
	}
	want := rounds * 8 / 10
	for m, n := range counts {
		if n < want*95/100 || n > want*105/100 {
			t.Errorf("member %s picked %d times, want about %d", m, n, want)
		}
	}
	// SPOP is replicated: the same entry pops the same members everywhere.
	a, b := newHarness(t), newHarness(t)
	for _, x := range []*harness{a, b} {
		x.do("sadd s" + strings.Repeat(" m", 1) + " 1 2 3 4 5 6 7 8 9 10 11 12")
	}
	if x, y := a.do("spop s 4"), b.do("spop s 4"); x != y {
		t.Fatalf("replicas popped %s and %s", x, y)
	}
}

// SSCAN over a hashtable-encoded set visits every member that stays for the
// whole scan, while members come and go between calls.
func TestSetScanAcrossChanges(t *testing.T) {
	h := newHarness(t)
	const n = 1000
	args := []string{"sadd", "s"}
	for i := range n {
		args = append(args, "m"+strconv.Itoa(i))
	}
	h.apply(hsArgs(args))
	seen := map[string]bool{}
	cursor := "0"
	for round := 0; ; round++ {
		v := replyOf(h.s.Read(h.now, Lookup([]byte("sscan")), fields("sscan s "+cursor+" count 5")))
		for _, e := range v.Elems[1].Elems {
			seen[string(e.Str)] = true
		}
		h.do("sadd s new" + strconv.Itoa(round))
		h.do("srem s m" + strconv.Itoa(2*round+1))
		if cursor = string(v.Elems[0].Str); cursor == "0" {
			break
		}
		if round > n {
			t.Fatal("scan does not end")
		}
	}
	for i := 0; i < n; i += 2 {
		if !seen["m"+strconv.Itoa(i)] {
			t.Fatalf("member m%d missed by the scan", i)
		}
	}
}

func TestSintercardKeys(t *testing.T) {
	cmd := Lookup([]byte("sintercard"))
	if got := cmd.Meta.KeyIndexes(fields("sintercard 2 a b limit 1")); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Fatalf("keys %v", got)
	}
	if got := cmd.Meta.KeyIndexes(fields("sintercard 3 a b")); len(got) != 0 {
		t.Fatalf("keys %v for a bad numkeys", got)
	}
	if cmd.Meta.Flags&resp.FlagMovableKeys == 0 {
		t.Fatal("not movablekeys")
	}
}
