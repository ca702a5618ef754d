package fsm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

func TestZSetZAdd(t *testing.T) {
	runTable(t, map[string][]step{
		"basic": {
			{"zadd z 1 a 2 b 3 c", ":3"},
			{"zadd z 1 a 5 b", ":0"},
			{"zadd z ch 1 a 6 b 7 d", ":2"},
			{"zrange z 0 -1 withscores", `["a" ,1 "c" ,3 "b" ,6 "d" ,7]`},
			{"zadd z 1", "-ERR wrong number of arguments for 'zadd' command"},
			{"zadd z nx 1", "-ERR syntax error"},
			{"zadd z 1 a 2", "-ERR syntax error"},
			{"zadd z x a", "-ERR value is not a valid float"},
			{"zadd z nan a", "-ERR value is not a valid float"},
			{"zadd z xx nx 1 a", "-ERR XX and NX options at the same time are not compatible"},
			{"zadd z gt lt 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible"},
			{"zadd z nx gt 1 a", "-ERR GT, LT, and/or NX options at the same time are not compatible"},
			{"zadd z incr 1 a 2 b", "-ERR INCR option supports a single increment-element pair"},
			{"set s x", "+OK"},
			{"zadd s 1 a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		},
		"inf": {
			{"zadd z -inf a +inf b 0 c", ":3"},
			{"zrange z 0 -1 withscores", `["a" ,-inf "c" ,0 "b" ,inf]`},
			{"zadd z incr -inf b", "-ERR resulting score is not a number (NaN)"},
			{"zscore z b", ",inf"},
			{"zincrby z +inf a", "-ERR resulting score is not a number (NaN)"},
			{"zincrby z 1 c", ",1"},
		},
		"nx xx": {
			{"zadd z xx 1 a", ":0"},
			{"exists z", ":0"},
			{"zadd z xx incr 1 a", "nil"},
			{"zadd z nx 1 a", ":1"},
			{"zadd z nx 5 a 2 b", ":1"},
			{"zscore z a", ",1"},
			{"zadd z xx 9 a 9 c", ":0"},
			{"zscore z a", ",9"},
			{"zscore z c", "nil"},
			{"zadd z nx incr 1 a", "nil"},
			{"zadd z xx incr 1 a", ",10"},
		},
		"gt lt ch": {
			{"zadd z 5 a", ":1"},
			{"zadd z gt ch 3 a", ":0"},
			{"zadd z gt ch 7 a", ":1"},
			{"zadd z lt ch 8 a 1 b", ":1"},
			{"zadd z lt ch 6 a", ":1"},
			{"zadd z gt 1 c", ":1"},
			{"zadd z gt incr -1 a", "nil"},
			{"zadd z lt incr -1 a", ",5"},
			{"zadd z xx gt ch 100 a 100 zz", ":1"},
			{"zrange z 0 -1 withscores", `["b" ,1 "c" ,1 "a" ,100]`},
		},
		"zincrby": {
			{"zincrby z 2.5 m", ",2.5"},
			{"zincrby z -1 m", ",1.5"},
			{"zincrby z x m", "-ERR value is not a valid float"},
			{"zscore z m", ",1.5"},
		},
	})
}

func TestZSetRanges(t *testing.T) {
	setup := step{"zadd z 1 a 2 b 3 c 4 d 5 e", ":5"}
	runTable(t, map[string][]step{
		"rank": {
			setup,
			{"zrange z 0 -1", `["a" "b" "c" "d" "e"]`},
			{"zrange z -2 -1", `["d" "e"]`},
			{"zrange z 3 100", `["d" "e"]`},
			{"zrange z 3 1", `[]`},
			{"zrange z -100 0", `["a"]`},
			{"zrange z 5 10", `[]`},
			{"zrange z 0 1 rev withscores", `["e" ,5 "d" ,4]`},
			{"zrevrange z 0 1", `["e" "d"]`},
			{"zrevrange z -1 -1 withscores", `["a" ,1]`},
			{"zrange z 0 1 limit 0 1", "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"},
			{"zrange z 0 -1 limit 0 -1", `["a" "b" "c" "d" "e"]`},
			{"zrange z 0 1 limit 0", "-ERR syntax error"},
			{"zrange z a 1", "-ERR value is not an integer or out of range"},
			{"zrange z 0 1 foo", "-ERR syntax error"},
			{"zrange nokey 0 -1", `[]`},
			{"zrevrange z 0 1 rev", "-ERR syntax error"},
		},
		"score": {
			setup,
			{"zrange z 2 4 byscore", `["b" "c" "d"]`},
			{"zrange z (2 (4 byscore", `["c"]`},
			{"zrange z -inf +inf byscore limit 1 2", `["b" "c"]`},
			{"zrange z +inf -inf byscore rev limit 1 2 withscores", `["d" ,4 "c" ,3]`},
			{"zrange z 4 2 byscore rev", `["d" "c" "b"]`},
			{"zrange z 2 4 byscore rev", `[]`},
			{"zrangebyscore z (1 5 limit 0 -1", `["b" "c" "d" "e"]`},
			{"zrangebyscore z 1 5 limit -1 2", `[]`},
			{"zrangebyscore z 1 5 limit 5 2", `[]`},
			{"zrangebyscore z 1 5 limit 4 0", `[]`},
			{"zrangebyscore z 1 5 withscores limit 3 10", `["d" ,4 "e" ,5]`},
			{"zrevrangebyscore z 5 (3", `["e" "d"]`},
			{"zrevrangebyscore z (3 5", `[]`},
			{"zrangebyscore z x 5", "-ERR min or max is not a float"},
			{"zrangebyscore z (nan 5", "-ERR min or max is not a float"},
			{"zrangebyscore z 1 5 rev", "-ERR syntax error"},
			{"zrangebyscore z 1 5 byscore", "-ERR syntax error"},
			{`zrangebyscore z "" (3`, `["a" "b"]`},
			{"zrangebyscore z 3 1e400", `["c" "d" "e"]`},
			{"zcount z (1 3", ":2"},
			{"zcount z -inf +inf", ":5"},
			{"zcount z 3 1", ":0"},
			{"zcount z (3 (3", ":0"},
			{"zcount z a 1", "-ERR min or max is not a float"},
			{"zcount nokey 1 2", ":0"},
		},
		"lex": {
			{"zadd z 0 a 0 b 0 c 0 d 0 e 0 aa", ":6"},
			{"zrange z - + bylex", `["a" "aa" "b" "c" "d" "e"]`},
			{"zrange z [aa (d bylex", `["aa" "b" "c"]`},
			{"zrange z (a [c bylex limit 1 1", `["b"]`},
			{"zrange z + - bylex rev limit 0 2", `["e" "d"]`},
			{"zrange z - + bylex withscores", "-ERR syntax error, WITHSCORES not supported in combination with BYLEX"},
			{"zrangebylex z a c", "-ERR min or max not valid string range item"},
			{`zrangebylex z "" +`, "-ERR min or max not valid string range item"},
			{"zrangebylex z -a +", "-ERR min or max not valid string range item"},
			{"zrangebylex z + -", `[]`},
			{"zrevrangebylex z [c (a", `["c" "b" "aa"]`},
			{"zlexcount z - +", ":6"},
			{"zlexcount z [b [b", ":1"},
			{"zlexcount z (b [b", ":0"},
			{"zlexcount z [d [b", ":0"},
			{"zlexcount z x y", "-ERR min or max not valid string range item"},
		},
		"ties": {
			{"zadd z 1 c 1 a 1 b 0 z 2 0", ":5"},
			{"zrange z 0 -1", `["z" "a" "b" "c" "0"]`},
			{"zrank z b", ":2"},
			{"zrevrank z b", ":2"},
			{"zrevrange z 0 -1", `["0" "c" "b" "a" "z"]`},
		},
		"zrank": {
			setup,
			{"zrank z a", ":0"},
			{"zrevrank z a", ":4"},
			{"zrank z nope", "nil"},
			{"zrank z c withscore", "[:2 ,3]"},
			{"zrevrank z c WITHSCORE", "[:2 ,3]"},
			{"zrank z nope withscore", "nil"},
			{"zrank z c withscores", "-ERR syntax error"},
			{"zrank z c withscore x", "-ERR syntax error"},
			{"zrank nokey c", "nil"},
		},
		"rangestore": {
			setup,
			{"zrangestore d z 1 2", ":2"},
			{"zrange d 0 -1 withscores", `["b" ,2 "c" ,3]`},
			{"zrangestore d z 5 +inf byscore rev", ":0"},
			{"zrangestore d z +inf 4 byscore rev limit 0 1", ":1"},
			{"zrange d 0 -1", `["e"]`},
			{"zrangestore d z 0 -1 withscores", "-ERR syntax error"},
			{"zrangestore d z 10 20", ":0"},
			{"exists d", ":0"},
			{"set s x", "+OK"},
			{"zrangestore s z 0 0", ":1"},
			{"type s", "+zset"},
			{"zrangestore d s2 0 0", ":0"},
			{"zrangestore z z [a [c bylex", ":3"},
			{"zcard z", ":3"},
			{"set str v", "+OK"},
			{"zrangestore d str 0 1", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		},
	})
}

func TestZSetRemove(t *testing.T) {
	setup := step{"zadd z 1 a 2 b 3 c 4 d 5 e", ":5"}
	runTable(t, map[string][]step{
		"zrem": {
			setup,
			{"zrem z a x b", ":2"},
			{"zrem nokey a", ":0"},
			{"zrem z c d e", ":3"},
			{"exists z", ":0"},
		},
		"byrank": {
			setup,
			{"zremrangebyrank z 1 -2", ":3"},
			{"zrange z 0 -1", `["a" "e"]`},
			{"zremrangebyrank z 5 10", ":0"},
			{"zremrangebyrank z x 1", "-ERR value is not an integer or out of range"},
			{"zremrangebyrank z 0 -1", ":2"},
			{"exists z", ":0"},
		},
		"byscore": {
			setup,
			{"zremrangebyscore z (1 3", ":2"},
			{"zremrangebyscore z x 3", "-ERR min or max is not a float"},
			{"zremrangebyscore nokey 1 3", ":0"},
			{"zremrangebyscore z -inf (5", ":2"},
			{"zrange z 0 -1", `["e"]`},
		},
		"bylex": {
			{"zadd z 0 a 0 b 0 c", ":3"},
			{"zremrangebylex z (a +", ":2"},
			{"zremrangebylex z a +", "-ERR min or max not valid string range item"},
			{"zrange z 0 -1", `["a"]`},
		},
	})
}

func TestZSetPop(t *testing.T) {
	setup := step{"zadd z 1 a 2 b 3 c", ":3"}
	runTable(t, map[string][]step{
		"zpop": {
			setup,
			{"zpopmin z", `["a" ,1]`},
			{"zpopmax z 5", `["c" ,3 "b" ,2]`},
			{"exists z", ":0"},
			{"zpopmin z", `[]`},
			{"zpopmin z -1", "-ERR value is out of range, must be positive"},
			{"zpopmin z 1 2", "-ERR syntax error"},
			{"zadd z 1 a", ":1"},
			{"zpopmin z 0", `[]`},
			{"zcard z", ":1"},
		},
		"zmpop": {
			setup,
			{"zmpop 2 nokey z min count 2", `["z" [["a" ,1] ["b" ,2]]]`},
			{"zmpop 1 z max", `["z" [["c" ,3]]]`},
			{"zmpop 1 z max", "nil"},
			{"zmpop 0 z max", "-ERR numkeys should be greater than 0"},
			{"zmpop x z max", "-ERR numkeys should be greater than 0"},
			{"zmpop 2 z max", "-ERR syntax error"},
			{"zmpop 1 z middle", "-ERR syntax error"},
			{"zmpop 1 z min count 0", "-ERR count should be greater than 0"},
			{"zmpop 1 z min count 1 count 1", "-ERR syntax error"},
			{"set s x", "+OK"},
			{"zmpop 1 s min", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		},
		"bzpop": {
			setup,
			{"bzpopmin nokey z 0", `["z" "a" ,1]`},
			{"bzpopmax z 0.5", `["z" "c" ,3]`},
			{"bzpopmax nokey 0", "nil"},
			{"bzpopmax z x", "-ERR timeout is not a float or out of range"},
			{"bzpopmax z -1", "-ERR timeout is negative"},
			{"bzmpop 0 1 z min", `["z" [["b" ,2]]]`},
			{"bzmpop 0 1 z min", "nil"},
			{"bzmpop -1 1 z min", "-ERR timeout is negative"},
			{"bzmpop 0 0 z min", "-ERR numkeys should be greater than 0"},
		},
	})
}

func TestZSetScores(t *testing.T) {
	runTable(t, map[string][]step{
		"zscore": {
			{"zadd z 1.5 a 1e30 b", ":2"},
			{"zscore z a", ",1.5"},
			{"zscore z nope", "nil"},
			{"zscore nokey a", "nil"},
			{"zmscore z a nope b", "[,1.5 nil ,1e+30]"},
			{"zmscore nokey a", "[nil]"},
			{"zcard z", ":2"},
			{"zcard nokey", ":0"},
			{"set s x", "+OK"},
			{"zmscore s a", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"zcard s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		},
	})
}

func TestZSetSetOps(t *testing.T) {
	setup := []step{
		{"zadd a 1 x 2 y 3 z", ":3"},
		{"zadd b 10 y 20 z 30 w", ":3"},
	}
	cases := map[string][]step{
		"union": {
			{"zunion 2 a b withscores", `["x" ,1 "y" ,12 "z" ,23 "w" ,30]`},
			{"zunion 2 a b weights 2 1 aggregate max withscores", `["x" ,2 "y" ,10 "z" ,20 "w" ,30]`},
			{"zunion 2 a b aggregate min", `["x" "y" "z" "w"]`},
			{"zunion 2 a nokey", `["x" "y" "z"]`},
			{"zunion 0 a", "-ERR at least 1 input key is needed for 'zunion' command"},
			{"zunion 3 a b", "-ERR syntax error"},
			{"zunion 2 a b weights 1", "-ERR syntax error"},
			{"zunion 2 a b weights 1 x", "-ERR weight value is not a float"},
			{"zunion 2 a b aggregate avg", "-ERR syntax error"},
			{"zunionstore d 2 a b weights 1 0", ":4"},
			{"zrange d 0 -1 withscores", `["w" ,0 "x" ,1 "y" ,2 "z" ,3]`},
			{"zunionstore d 2 a b withscores", "-ERR syntax error"},
			{"zunionstore d 1 nokey", ":0"},
			{"exists d", ":0"},
		},
		"inf weights": {
			{"zadd i -inf m", ":1"},
			{"zunion 1 i weights 0 withscores", `["m" ,0]`},
			{"zadd j +inf m", ":1"},
			{"zunion 2 i j withscores", `["m" ,0]`},
		},
		"inter": {
			{"zinter 2 a b withscores", `["y" ,12 "z" ,23]`},
			{"zinter 2 a b aggregate max withscores", `["y" ,10 "z" ,20]`},
			{"zinter 2 a nokey", `[]`},
			{"zinterstore d 2 a b aggregate min", ":2"},
			{"zrange d 0 -1 withscores", `["y" ,2 "z" ,3]`},
			{"zinterstore d 2 a a", ":3"},
			{"zrange d 0 -1 withscores", `["x" ,2 "y" ,4 "z" ,6]`},
			{"zintercard 2 a b", ":2"},
			{"zintercard 2 a b limit 1", ":1"},
			{"zintercard 2 a b limit 0", ":2"},
			{"zintercard 2 a b limit -1", "-ERR LIMIT can't be negative"},
			{"zintercard 2 a b withscores", "-ERR syntax error"},
			{"zintercard 0 a", "-ERR at least 1 input key is needed for 'zintercard' command"},
		},
		"diff": {
			{"zdiff 2 a b withscores", `["x" ,1]`},
			{"zdiff 1 a", `["x" "y" "z"]`},
			{"zdiff 2 a a", `[]`},
			{"zdiff 2 a b weights 1 1", "-ERR syntax error"},
			{"zdiffstore d 2 b a", ":1"},
			{"zrange d 0 -1 withscores", `["w" ,30]`},
			{"zdiffstore d 2 nokey a", ":0"},
			{"exists d", ":0"},
		},
		"wrongtype": {
			{"set s v", "+OK"},
			{"zunion 2 a s", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"zunion 2 a s weights x", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"zunionstore s 1 a", ":3"},
			{"type s", "+zset"},
		},
	}
	for name, steps := range cases {
		cases[name] = append(append([]step{}, setup...), steps...)
	}
	runTable(t, cases)
}

func TestZSetWithPlainSets(t *testing.T) {
	h := newHarness(t)
	if Lookup([]byte("sadd")) == nil {
		s := store.NewIntSet(nil)
		s.Add([]byte("y"))
		s.Add([]byte("q"))
		h.s.store.Put([]byte("s"), &store.Object{Type: store.TypeSet, Coll: s})
	} else {
		h.do("sadd s y q")
	}
	h.run([]step{
		{"zadd a 1 x 2 y", ":2"},
		{"zunion 2 a s withscores", `["q" ,1 "x" ,1 "y" ,3]`},
		{"zinter 2 a s weights 1 5 withscores", `["y" ,7]`},
		{"zdiff 2 a s", `["x"]`},
		{"zdiff 2 s a withscores", `["q" ,1]`},
	})
}

func TestZSetRandMember(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"zrandmember nokey", "nil"},
		{"zrandmember nokey 5", "[]"},
		{"zadd z 1 a 2 b 3 c", ":3"},
		{"zrandmember z 0", "[]"},
		{"zrandmember z 10 withscores", `["a" ,1 "b" ,2 "c" ,3]`},
		{"zrandmember z 1 withscore", "-ERR syntax error"},
		{"zrandmember z x", "-ERR value is not an integer or out of range"},
		{"zrandmember z 9223372036854775807 withscores", "-ERR value is out of range"},
		{"zrandmember z -9223372036854775808", "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"},
	})
	for _, cmd := range []string{"zrandmember z 2", "zrandmember z -7", "zrandmember z -3 withscores", "zrandmember z"} {
		v := h.apply(fields(cmd))
		n := map[string]int{"zrandmember z 2": 2, "zrandmember z -7": 7, "zrandmember z -3 withscores": 6}[cmd]
		if cmd == "zrandmember z" {
			if v.Kind != resp.KindBulk {
				t.Fatalf("%s: %s", cmd, show(v))
			}
			continue
		}
		if len(v.Elems) != n {
			t.Fatalf("%s: %s", cmd, show(v))
		}
		if cmd == "zrandmember z 2" && string(v.Elems[0].Str) == string(v.Elems[1].Str) {
			t.Fatalf("%s repeated a member: %s", cmd, show(v))
		}
	}
	// Uniform enough: every member is picked from a larger set.
	for i := range 100 {
		h.do(fmt.Sprintf("zadd big %d m%d", i, i))
	}
	seen := map[string]bool{}
	for range 40 {
		for _, e := range h.apply(fields("zrandmember big 10")).Elems {
			seen[string(e.Str)] = true
		}
	}
	if len(seen) < 90 {
		t.Fatalf("only %d distinct members drawn", len(seen))
	}
}

func TestZSetScan(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"zscan nokey 0", `["0" []]`},
		{"zadd z 1.5 a 2 b", ":2"},
		{"zscan z 0", `["0" ["a" "1.5" "b" "2"]]`},
		{"zscan z 0 match b*", `["0" ["b" "2"]]`},
		{"zscan z x", "-ERR invalid cursor"},
		{"zscan z 0 type zset", "-ERR syntax error"},
		{"zscan z 0 count 0", "-ERR syntax error"},
	})
	for i := range 300 {
		h.do(fmt.Sprintf("zadd big %d.1 m%d", i, i))
	}
	seen := map[string]string{}
	cursor := "0"
	for calls := 0; ; calls++ {
		v := h.apply(fields("zscan big " + cursor + " count 20"))
		for i := 0; i < len(v.Elems[1].Elems); i += 2 {
			seen[string(v.Elems[1].Elems[i].Str)] = string(v.Elems[1].Elems[i+1].Str)
		}
		cursor = string(v.Elems[0].Str)
		if cursor == "0" {
			break
		}
		if calls > 100 {
			t.Fatal("scan does not end")
		}
	}
	if len(seen) != 300 || seen["m1"] != "1.1000000000000001" || seen["m0"] != "0.10000000000000001" {
		t.Fatalf("scan saw %d members, m1=%s m0=%s", len(seen), seen["m1"], seen["m0"])
	}
}

func TestZSetEncodingAndReady(t *testing.T) {
	h := newHarness(t)
	h.do("zadd z 1 a")
	z := h.s.store.Get([]byte("z"), 0).Coll.(*store.ZSet)
	if z.Encoding() != "listpack" {
		t.Fatal(z.Encoding())
	}
	h.do("zadd z 1 " + strings.Repeat("x", 65))
	if z := h.s.store.Get([]byte("z"), 0).Coll.(*store.ZSet); z.Encoding() != "skiplist" {
		t.Fatal(z.Encoding())
	}
	h.do("zunionstore d 1 z")
	h.do("zrem d " + strings.Repeat("x", 65))
	h.do("zunionstore d 1 d")
	if z := h.s.store.Get([]byte("d"), 0).Coll.(*store.ZSet); z.Encoding() != "listpack" {
		t.Fatal("a stored small result should be a listpack")
	}
	c := &Ctx{Store: store.New(), Now: t0}
	zaddCmd(c, fields("zadd k 1 a"))
	zaddCmd(c, fields("zadd k 2 a"))
	if len(c.Ready) != 1 || string(c.Ready[0]) != "k" {
		t.Fatalf("ready keys %q", c.Ready)
	}
}

func TestZSetMovableKeys(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []int
	}{
		{"zunion 2 a b withscores", []int{2, 3}},
		{"zunionstore d 2 a b", []int{1, 3, 4}},
		{"zintercard 1 a limit 1", []int{2}},
		{"zmpop 2 a b min", []int{2, 3}},
		{"bzmpop 0 1 a min", []int{3}},
		{"zunion 5 a", nil},
		{"zunion x a", nil},
	} {
		args := fields(tc.line)
		got := Lookup(args[0]).Meta.KeyIndexes(args)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: keys %v, want %v", tc.line, got, tc.want)
		}
	}
}
