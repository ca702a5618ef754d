package difftest

import "testing"

// TestStreamEdgesDifferential: stream edge cases of issue #17 against
// redis-server: XCLAIM and XAUTOCLAIM of entries trimmed or deleted away,
// the same stream named twice in XREAD, "$" and ID edge cases, the
// XGROUP and XINFO help texts.
func TestStreamEdgesDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	cmds := [][]string{
		{"XADD", "{e}s", "1-1", "a", "1"},
		{"XADD", "{e}s", "1-2", "a", "2"},
		{"XADD", "{e}s", "1-3", "a", "3"},
		{"XGROUP", "CREATE", "{e}s", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{e}s", ">"},
		{"XDEL", "{e}s", "1-2"},
		{"XTRIM", "{e}s", "MINID", "1-3"},
		{"XCLAIM", "{e}s", "g", "c2", "0", "1-1", "1-2", "1-3"},
		{"XPENDING", "{e}s", "g"},
		{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{e}s", "0"},
		{"XAUTOCLAIM", "{e}s", "g", "c3", "0", "0-0"},
		{"XAUTOCLAIM", "{e}s", "g", "c3", "0", "0-0", "COUNT", "1", "JUSTID"},
		{"XPENDING", "{e}s", "g"},
		{"XREAD", "STREAMS", "{e}s", "{e}s", "0", "1-1"},
		{"XREAD", "COUNT", "1", "STREAMS", "{e}s", "$"},
		{"XREAD", "STREAMS", "{e}s", "+"},
		{"XREAD", "STREAMS", "{e}s", "1-"},
		{"XREAD", "STREAMS", "{e}s", "-1"},
		{"XREAD", "STREAMS", "{e}s"},
		{"XREAD", "STREAMS", "{e}nosuch", "$"},
		{"XADD", "{e}s", "0-0", "a", "1"},
		{"XADD", "{e}s", "1-3", "a", "1"},
		{"XADD", "{e}s", "1-*", "a", "1"},
		{"XADD", "{e}n", "0-*", "a", "1"},
		{"XRANGE", "{e}s", "(1-3", "+"},
		{"XRANGE", "{e}s", "(18446744073709551615-18446744073709551615", "+"},
		{"XREVRANGE", "{e}s", "+", "(0-0"},
		{"XGROUP", "CREATE", "{e}s", "g3", "$", "ENTRIESREAD", "-3"},
		{"XGROUP", "SETID", "{e}s", "g", "$", "ENTRIESREAD", "1"},
		{"XINFO", "GROUPS", "{e}s"},
		{"XGROUP", "HELP", "x"},
		{"XGROUP", "NOPE"},
		{"XGROUP"},
		{"XINFO", "HELP", "x"},
		{"XGROUP", "DESTROY", "{e}s", "nosuch"},
		{"XGROUP", "DELCONSUMER", "{e}s", "g", "c1"},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		sameReplies(t, rc, sc, cmds)
		both(t, rc, sc, []string{"DEL", "{e}s", "{e}n"})
	}
}
