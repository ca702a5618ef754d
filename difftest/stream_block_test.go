package difftest

import (
	"strings"
	"testing"
	"time"
)

// TestStreamBlockingDifferential: a blocked XREAD or XREADGROUP is woken,
// or not, as redis-server wakes it: an XADD that a DEL undid in the same
// transaction wakes no XREAD; a deleted, renamed, retyped or flushed key,
// or a destroyed group, ends an XREADGROUP with its error. There Redis 7.0
// (the installed redis-server) answers "UNBLOCKED the stream key no longer
// exists" or "NOGROUP the consumer group this client was blocked on no
// longer exists", while 7.2 (blocked.c's rewrite) runs the command again
// and answers its own error: slotraft's reply is checked against 7.2's.
func TestStreamBlockingDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	scenarios := []struct {
		name  string
		setup [][]string
		block []string
		then  [][]string
		v72   string // Redis 7.2's reply, where 7.0's differs
	}{
		{"XADD undone by DEL in MULTI", [][]string{{"XADD", "{b}a", "1-1", "f", "v"}},
			[]string{"XREAD", "BLOCK", "1500", "STREAMS", "{b}a", "$"},
			[][]string{{"MULTI"}, {"XADD", "{b}a", "*", "f", "v"}, {"DEL", "{b}a"}, {"EXEC"}}, ""},
		{"group's key deleted", [][]string{{"XGROUP", "CREATE", "{b}b", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "{b}b", ">"},
			[][]string{{"DEL", "{b}b"}}, "-NOGROUP No such key '{b}b' or consumer group 'g' in XREADGROUP with GROUP option"},
		{"group's key retyped in MULTI", [][]string{{"XGROUP", "CREATE", "{b}c", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "{b}c", ">"},
			[][]string{{"MULTI"}, {"DEL", "{b}c"}, {"SET", "{b}c", "x"}, {"EXEC"}}, "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"group destroyed", [][]string{{"XGROUP", "CREATE", "{b}d", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "{b}d", ">"},
			[][]string{{"XGROUP", "DESTROY", "{b}d", "g"}}, "-NOGROUP No such key '{b}d' or consumer group 'g' in XREADGROUP with GROUP option"},
		{"group's key renamed", [][]string{{"XGROUP", "CREATE", "{b}e", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "{b}e", ">"},
			[][]string{{"RENAME", "{b}e", "{b}e2"}}, "-NOGROUP No such key '{b}e' or consumer group 'g' in XREADGROUP with GROUP option"},
		{"renamed stream, plain XREAD", [][]string{{"XADD", "{b}f", "1-1", "f", "v"}},
			[]string{"XREAD", "BLOCK", "1500", "STREAMS", "{b}f", "$"},
			[][]string{{"RENAME", "{b}f", "{b}f2"}}, ""},
		{"flushed", [][]string{{"XGROUP", "CREATE", "{b}g", "g", "$", "MKSTREAM"}},
			[]string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "{b}g", ">"},
			[][]string{{"FLUSHALL"}}, "-NOGROUP No such key '{b}g' or consumer group 'g' in XREADGROUP with GROUP option"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			results := make(chan [2]string, 2)
			for i, addr := range []string{redisAddr, slotraftAddr} {
				go func() {
					results <- [2]string{[]string{"redis", "slotraft"}[i], blockThen(t, addr, sc.setup, sc.block, sc.then)}
				}()
			}
			got := map[string]string{}
			for range 2 {
				r := <-results
				got[r[0]] = r[1]
			}
			if sc.v72 != "" {
				if got["slotraft"] != sc.v72 {
					t.Errorf("blocked %q: slotraft %s, want Redis 7.2's %s", sc.block, got["slotraft"], sc.v72)
				}
				return
			}
			if got["redis"] != got["slotraft"] || got["redis"] == "never blocked" {
				t.Errorf("blocked %q:\n  redis:    %s\n  slotraft: %s", sc.block, got["redis"], got["slotraft"])
			}
		})
	}
}

// blockThen runs setup, blocks a second connection on block, waits until
// the server counts it blocked, runs then on the first connection and
// returns the blocked command's reply.
func blockThen(t *testing.T, addr string, setup [][]string, block []string, then [][]string) string {
	c, b := connect(t, addr, "2"), connect(t, addr, "2")
	for _, args := range setup {
		if _, err := c.do(args...); err != nil {
			return "setup: " + err.Error()
		}
	}
	b.send(block...)
	if err := b.w.Flush(); err != nil {
		return "send: " + err.Error()
	}
	_ = b.conn.SetDeadline(time.Now().Add(30 * time.Second))
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, err := c.do("INFO", "clients")
		if err == nil && !strings.Contains(info.str, "blocked_clients:0\r\n") {
			break
		}
		if time.Now().After(deadline) {
			return "never blocked"
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, args := range then {
		if _, err := c.do(args...); err != nil {
			return "then: " + err.Error()
		}
	}
	r, err := b.read()
	if err != nil {
		return "read: " + err.Error()
	}
	return r.String()
}
