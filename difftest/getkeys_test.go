package difftest

import (
	"strings"
	"testing"
)

// getkeysCases are full commands for COMMAND GETKEYS and
// GETKEYSANDFLAGS: key specs by index, keyword and keynum, the getkeys
// functions (SORT, MIGRATE, GEORADIUS, XREAD, SET, BITFIELD, the numkeys
// commands and their fallbacks), subcommands, and every error.
var getkeysCases = [][]string{
	{"SET", "k", "v"}, {"SET", "k", "v", "GET"}, {"SET", "k", "v", "EX", "10", "get"}, {"GET", "k"},
	{"MSET", "a", "1", "b", "2"}, {"MSET", "a", "1", "b"}, {"MGET", "a", "b", "c"}, {"DEL", "a", "b"},
	{"APPEND", "k", "v"}, {"GETDEL", "k"}, {"GETEX", "k", "PERSIST"}, {"INCR", "k"}, {"RENAME", "a", "b"},
	{"COPY", "a", "b", "REPLACE"}, {"MSETNX", "a", "1", "b", "2"}, {"EXPIRE", "k", "10"}, {"TOUCH", "a", "b"},
	{"EVAL", "return 1", "0"}, {"EVAL", "return 1", "2", "a", "b", "x"}, {"EVAL", "return 1", "3", "a"},
	{"EVAL", "return 1", "x", "a"}, {"EVALSHA", "abc", "1", "k"}, {"EVAL_RO", "return 1", "1", "k"},
	{"FCALL", "f", "0"}, {"FCALL", "f", "1", "k", "a"}, {"FCALL_RO", "f", "2", "a", "b"},
	{"XREAD", "STREAMS", "a", "b", "0", "0"}, {"XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", "a", "0"},
	{"XREAD", "STREAMS", "a", "b", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"},
	{"XREADGROUP", "GROUP", "g", "c", "NOACK", "STREAMS", "s1", "s2", ">", ">"},
	{"ZUNIONSTORE", "d", "2", "a", "b"}, {"ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"},
	{"ZUNIONSTORE", "d", "x", "a"}, {"ZUNIONSTORE", "d", "3", "a", "b"}, {"ZINTERSTORE", "d", "1", "a"},
	{"ZDIFFSTORE", "d", "2", "a", "b"}, {"ZUNION", "2", "a", "b"}, {"ZINTER", "1", "a", "WITHSCORES"},
	{"ZDIFF", "2", "a", "b"}, {"ZINTERCARD", "2", "a", "b", "LIMIT", "1"}, {"SINTERCARD", "2", "a", "b"},
	{"SINTERSTORE", "d", "a", "b"}, {"SUNION", "a", "b"}, {"SMOVE", "a", "b", "m"},
	{"SORT", "k"}, {"SORT", "k", "STORE", "d"}, {"SORT", "k", "BY", "w_*", "GET", "#", "STORE", "d"},
	{"SORT", "k", "LIMIT", "0", "10", "STORE", "d1", "STORE", "d2"}, {"SORT", "k", "BY", "store"},
	{"SORT_RO", "k", "BY", "w_*"},
	{"MIGRATE", "h", "1", "k", "0", "1000"}, {"MIGRATE", "h", "1", "", "0", "1000", "KEYS", "a", "b"},
	{"MIGRATE", "h", "1", "", "0", "1000", "COPY", "REPLACE", "AUTH", "pw", "KEYS", "a"},
	{"MIGRATE", "h", "1", "k", "0", "1000", "KEYS", "a"}, {"MIGRATE", "h", "1", "", "0", "1000", "AUTH2", "u", "p", "KEYS", "a"},
	{"LMOVE", "a", "b", "LEFT", "RIGHT"}, {"BLMOVE", "a", "b", "LEFT", "RIGHT", "0"}, {"RPOPLPUSH", "a", "b"},
	{"LMPOP", "2", "a", "b", "LEFT"}, {"BLMPOP", "0", "2", "a", "b", "LEFT", "COUNT", "2"}, {"BLMPOP", "0", "x", "a", "LEFT"},
	{"ZMPOP", "1", "z", "MIN"}, {"BZMPOP", "0", "2", "a", "b", "MAX"}, {"BLPOP", "a", "b", "0"}, {"BZPOPMIN", "a", "0"},
	{"GEORADIUS", "g", "0", "0", "1", "km"}, {"GEORADIUS", "g", "0", "0", "1", "km", "STORE", "d"},
	{"GEORADIUS", "g", "0", "0", "1", "km", "STOREDIST", "d", "ASC"}, {"GEORADIUSBYMEMBER", "g", "m", "1", "km", "STORE", "d"},
	{"GEORADIUS_RO", "g", "0", "0", "1", "km"}, {"GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"},
	{"GEOADD", "g", "0", "0", "m"}, {"PFMERGE", "d", "a", "b"}, {"PFCOUNT", "a", "b"}, {"BITOP", "AND", "d", "a", "b"},
	{"BITFIELD", "k", "GET", "u8", "0"}, {"BITFIELD", "k", "SET", "u8", "0", "1"}, {"BITFIELD", "k", "OVERFLOW", "SAT", "GET", "u8", "0"},
	{"BITFIELD", "k", "GET", "u8"}, {"BITFIELD_RO", "k", "GET", "u8", "0"}, {"LCS", "a", "b"},
	{"OBJECT", "FREQ", "k"}, {"OBJECT", "ENCODING", "k"}, {"MEMORY", "USAGE", "k"}, {"MEMORY", "USAGE", "k", "SAMPLES", "5"},
	{"XADD", "s", "*", "f", "v"}, {"XGROUP", "CREATE", "s", "g", "$"}, {"XINFO", "STREAM", "s"}, {"XAUTOCLAIM", "s", "g", "c", "0", "0"},
	{"HSET", "h", "f", "v"}, {"LPUSH", "l", "a"}, {"ZADD", "z", "1", "m"}, {"SETRANGE", "k", "0", "v"}, {"DUMP", "k"},
	{"RESTORE", "k", "0", "x"}, {"WATCH", "a", "b"}, {"TYPE", "k"}, {"EXISTS", "a", "b"}, {"UNLINK", "a"},
	{"SPUBLISH", "c", "m"}, {"SSUBSCRIBE", "c"}, {"PUBLISH", "c", "m"}, {"PING"}, {"CLUSTER", "INFO"},
	{"CLUSTER", "COUNTKEYSINSLOT", "1"}, {"OBJECT"}, {"OBJECT", "NOPE", "k"}, {"NOSUCH", "k"}, {"GET"},
	{"GET", "a", "b"}, {"MSET", "a"}, {"CONFIG", "GET", "x"}, {"INFO"},
}

// getkeys72 are Redis 7.2's replies to a command alone: 7.2 lowered the
// subcommands' arity from -4 to -3, so redis-server 7.0 answers its arity
// error instead.
var getkeys72 = map[string]string{
	"PING":   "-ERR The command has no key arguments",
	"OBJECT": "-ERR The command has no key arguments",
	"INFO":   "-ERR The command has no key arguments",
	"GET":    "-ERR Invalid number of arguments specified for command",
}

// TestGetKeysDifferential: COMMAND GETKEYS and GETKEYSANDFLAGS answer as
// redis-server for every case, keys, flags and errors, in RESP2 and RESP3
// (a command alone as Redis 7.2, getkeys72).
func TestGetKeysDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
			for _, tc := range getkeysCases {
				args := append([]string{"COMMAND", sub}, tc...)
				want, got := both(t, rc, sc, args)
				w := want.String()
				if v, ok := getkeys72[tc[0]]; ok && len(tc) == 1 && strings.HasPrefix(w, "-ERR wrong number of arguments") {
					w = v
				}
				if w != got.String() {
					t.Errorf("RESP%s %s:\n  redis:    %s\n  slotraft: %s", proto, strings.Join(args, " "), w, got)
				}
			}
		}
	}
}

// TestCommandInfoKeySpecsDifferential: COMMAND INFO's key specifications
// (Redis's own, generated from its command files) agree with
// redis-server's.
func TestCommandInfoKeySpecsDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	rc, sc := connect(t, redisAddr, "3"), connect(t, slotraftAddr, "3")
	for _, name := range []string{"set", "get", "mset", "del", "sort", "sort_ro", "migrate", "xread", "xreadgroup",
		"georadius", "geosearchstore", "eval", "fcall", "zunionstore", "lmove", "blmpop", "bitfield", "object|freq",
		"memory|usage", "spublish", "rename", "bitop", "lcs", "xautoclaim", "restore"} {
		want, got := both(t, rc, sc, []string{"COMMAND", "INFO", name})
		if len(want.elems) != 1 || len(want.elems[0].elems) < 9 || len(got.elems) != 1 || len(got.elems[0].elems) < 9 {
			t.Errorf("COMMAND INFO %s: redis %s, slotraft %s", name, want, got)
			continue
		}
		if w, g := want.elems[0].elems[8].String(), got.elems[0].elems[8].String(); w != g {
			t.Errorf("COMMAND INFO %s key specs:\n  redis:    %s\n  slotraft: %s", name, w, g)
		}
	}
}
