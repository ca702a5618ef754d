package fsm

import (
	"strings"
	"testing"
)

func TestSet(t *testing.T) {
	runTable(t, map[string][]step{
		"plain": {{"SET k v", "+OK"}, {"read GET k", `"v"`}, {"read GET nokey", "nil"}},
		"nx xx": {
			{"SET k v XX", "nil"}, {"SET k v NX", "+OK"}, {"SET k w NX", "nil"},
			{"SET k w XX", "+OK"}, {"GET k", `"w"`},
		},
		"get option": {
			{"SET k v GET", "nil"}, {"SET k w GET", `"v"`}, {"SET k x NX GET", `"w"`},
			{"GET k", `"w"`}, {"SET other y XX GET", "nil"}, {"EXISTS other", ":0"},
		},
		"get on wrong type sets nothing": {
			{"mklist l", ""}, {"SET l v GET", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
			{"TYPE l", "+list"}, {"SET l v", "+OK"}, {"TYPE l", "+string"},
		},
		"syntax": {
			{"SET k v NX XX", "-ERR syntax error"}, {"SET k v EX", "-ERR syntax error"},
			{"SET k v EX 10 PX 100", "-ERR syntax error"}, {"SET k v KEEPTTL EX 10", "-ERR syntax error"},
			{"SET k v EX 10 KEEPTTL", "-ERR syntax error"}, {"SET k v FOO", "-ERR syntax error"},
			{"SET k v PERSIST", "-ERR syntax error"}, {"SET k v EX 5 EX 10", "+OK"}, {"TTL k", ":10"},
			{"EXISTS k", ":1"},
		},
		"expire errors": {
			{"SET k v EX 0", "-ERR invalid expire time in 'set' command"},
			{"SET k v PX -1", "-ERR invalid expire time in 'set' command"},
			{"SET k v EX abc", "-ERR value is not an integer or out of range"},
			{"SET k v EX 9223372036854775", "-ERR invalid expire time in 'set' command"},
			{"SET k v PX 9223372036854775807", "-ERR invalid expire time in 'set' command"},
			{"EXISTS k", ":0"},
		},
		"expiry": {
			{"SET k v EX 10", "+OK"}, {"PTTL k", ":10000"}, {"sleep 9999", ""}, {"GET k", `"v"`},
			{"sleep 1", ""}, {"read GET k", "nil"}, {"GET k", "nil"},
			{"SET k v PXAT 1700000020000", "+OK"}, {"PTTL k", ":10000"},
			{"SET k v EXAT 1700000030", "+OK"}, {"PTTL k", ":20000"},
			{"SET k w KEEPTTL", "+OK"}, {"PTTL k", ":20000"}, {"SET k w", "+OK"}, {"TTL k", ":-1"},
			{"SET k v PXAT 1000", "+OK"}, {"GET k", "nil"},
		},
	})
}

func TestStringCommands(t *testing.T) {
	wrong := "-WRONGTYPE Operation against a key holding the wrong kind of value"
	runTable(t, map[string][]step{
		"setnx setex psetex": {
			{"SETNX k v", ":1"}, {"SETNX k w", ":0"}, {"GET k", `"v"`},
			{"SETEX k 10 x", "+OK"}, {"TTL k", ":10"}, {"PSETEX k 1500 y", "+OK"}, {"PTTL k", ":1500"},
			{"SETEX k 0 x", "-ERR invalid expire time in 'setex' command"},
			{"PSETEX k -5 x", "-ERR invalid expire time in 'psetex' command"},
			{"SETEX k x x", "-ERR value is not an integer or out of range"}, {"GET k", `"y"`},
		},
		"mget mset msetnx": {
			{"MSET a 1 b 2", "+OK"}, {"mklist l", ""}, {"MGET a b c l", `["1" "2" nil nil]`},
			{"MSET a 1 b", "-ERR wrong number of arguments for 'mset' command"},
			{"MSETNX c 3 a 9", ":0"}, {"EXISTS c", ":0"}, {"MSETNX c 3 d 4", ":1"}, {"MGET c d", `["3" "4"]`},
			{"MSET a 1 a 2", "+OK"}, {"GET a", `"2"`},
		},
		"getset getdel": {
			{"GETSET k v", "nil"}, {"SET k v EX 100", "+OK"}, {"GETSET k w", `"v"`}, {"TTL k", ":-1"},
			{"GETDEL k", `"w"`}, {"EXISTS k", ":0"}, {"GETDEL k", "nil"},
			{"mklist l", ""}, {"GETSET l v", wrong}, {"GETDEL l", wrong}, {"TYPE l", "+list"},
		},
		"getex": {
			{"GETEX k", "nil"}, {"SET k v", "+OK"}, {"GETEX k EX 10", `"v"`}, {"TTL k", ":10"},
			{"GETEX k PERSIST", `"v"`}, {"TTL k", ":-1"}, {"GETEX k PX 100", `"v"`}, {"PTTL k", ":100"},
			{"GETEX k EX 0", "-ERR invalid expire time in 'getex' command"},
			{"GETEX k NX", "-ERR syntax error"}, {"GETEX k PERSIST EX 1", "-ERR syntax error"},
			{"GETEX k PXAT 1", `"v"`}, {"EXISTS k", ":0"}, {"mklist l", ""}, {"GETEX l", wrong},
		},
		"append strlen": {
			{"APPEND k Hello", ":5"}, {"APPEND k ~World", ":11"}, {"STRLEN k", ":11"}, {"STRLEN nokey", ":0"},
			{"SET e v EX 100", "+OK"}, {"APPEND e w", ":2"}, {"TTL e", ":100"},
			{"mklist l", ""}, {"APPEND l x", wrong}, {"STRLEN l", wrong},
		},
		"incr decr": {
			{"INCR n", ":1"}, {"INCRBY n 10", ":11"}, {"DECR n", ":10"}, {"DECRBY n 20", ":-10"},
			{"SET n 9223372036854775807", "+OK"}, {"INCR n", "-ERR increment or decrement would overflow"},
			{"SET n -9223372036854775808", "+OK"}, {"DECR n", "-ERR increment or decrement would overflow"},
			{"DECRBY n -9223372036854775808", "-ERR decrement would overflow"},
			{"INCRBY n x", "-ERR value is not an integer or out of range"},
			{"SET s abc", "+OK"}, {"INCR s", "-ERR value is not an integer or out of range"},
			{"SET s ~1", "+OK"}, {"INCR s", "-ERR value is not an integer or out of range"},
			{"SET t 5 EX 100", "+OK"}, {"INCR t", ":6"}, {"TTL t", ":100"}, {"mklist l", ""}, {"INCR l", wrong},
		},
		"incrbyfloat": {
			{"SET k 10.50", "+OK"}, {"INCRBYFLOAT k 0.1", `"10.6"`}, {"INCRBYFLOAT k -5", `"5.6"`},
			{"SET k 5.0e3", "+OK"}, {"INCRBYFLOAT k 2.0e2", `"5200"`}, {"INCRBYFLOAT new 1.5", `"1.5"`},
			{"INCRBYFLOAT k abc", "-ERR value is not a valid float"},
			{"INCRBYFLOAT k inf", "-ERR increment would produce NaN or Infinity"},
			{"SET s abc", "+OK"}, {"INCRBYFLOAT s 1", "-ERR value is not a valid float"},
		},
		"getrange": {
			{"SET k This~is~a~string", "+OK"},
			{"GETRANGE k 0 3", `"This"`}, {"GETRANGE k -3 -1", `"ing"`}, {"GETRANGE k 0 -1", `"This is a string"`},
			{"GETRANGE k 10 100", `"string"`}, {"GETRANGE k 5 3", `""`}, {"GETRANGE k -1 -5", `""`},
			{"SUBSTR k 0 3", `"This"`}, {"SUBSTR k -3 -1", `"ing"`},
			{"GETRANGE k -100 2", `"Thi"`}, {"GETRANGE nokey 0 1", `""`}, {"GETRANGE k a 1", "-ERR value is not an integer or out of range"},
		},
		"setrange": {
			{"SET k Hello~World", "+OK"}, {"SETRANGE k 6 Redis", ":11"}, {"GET k", `"Hello Redis"`},
			{"SETRANGE n 5 x", ":6"}, {"GET n", `"\x00\x00\x00\x00\x00x"`}, {"SETRANGE z 3 \"\"", ":0"}, {"EXISTS z", ":0"},
			{"SETRANGE k 1 \"\"", ":11"}, {"SETRANGE k -1 x", "-ERR offset is out of range"},
			{"SETRANGE k 536870912 x", "-ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
			{"SETRANGE k 536870911 \"\"", ":11"},
		},
	})
}

func TestLCS(t *testing.T) {
	runTable(t, map[string][]step{
		"docs": {
			{"MSET key1 ohmytext key2 mynewtext", "+OK"},
			{"LCS key1 key2", `"mytext"`}, {"LCS key1 key2 LEN", ":6"},
			{"LCS key1 key2 IDX", `{"matches" [[[:4 :7] [:5 :8]] [[:2 :3] [:0 :1]]] "len" :6}`},
			{"LCS key1 key2 IDX MINMATCHLEN 4", `{"matches" [[[:4 :7] [:5 :8]]] "len" :6}`},
			{"LCS key1 key2 IDX MINMATCHLEN 4 WITHMATCHLEN", `{"matches" [[[:4 :7] [:5 :8] :4]] "len" :6}`},
		},
		"errors": {
			{"MSET a x b y", "+OK"}, {"LCS a b IDX LEN", "-ERR If you want both the length and indexes, please just use IDX."},
			{"LCS a b FOO", "-ERR syntax error"}, {"LCS a b MINMATCHLEN", "-ERR syntax error"},
			{"LCS a b MINMATCHLEN x", "-ERR value is not an integer or out of range"},
			{"mklist l", ""}, {"LCS a l", "-ERR The specified keys must contain string values"},
			{"LCS none1 none2", `""`}, {"LCS none1 a LEN", ":0"},
		},
	})
}

func TestSetrangeKeepsOldValueImmutable(t *testing.T) {
	h := newHarness(t)
	h.do("SET k hello")
	old := h.s.store.Get([]byte("k"), h.now)
	h.do("SETRANGE k 0 J")
	h.do("APPEND k !")
	if string(old.Str) != "hello" {
		t.Fatalf("stored object mutated in place: %q", old.Str)
	}
	if got := h.do("GET k"); got != `"Jello!"` {
		t.Fatalf("GET = %s", got)
	}
	if strings.Contains(h.do("SET"), "wrong number") == false {
		t.Fatalf("arity not checked in Apply")
	}
}
