package difftest

import (
	"fmt"
	"testing"
	"time"
)

// TestLazyFreeDifferential: INFO memory's lazyfreed_objects counts what
// Redis frees in the background, the same on both after the same
// commands: UNLINK of a value over 64 allocations (a 200-member set)
// counts, of a small one not; DEL counts once lazyfree-lazy-user-del is
// on; FLUSHALL ASYNC counts every key, FLUSHALL SYNC none, FLUSHALL
// without an argument every key with lazyfree-lazy-user-flush; CONFIG
// RESETSTAT zeroes it. lazyfree_pending_objects is 0 once done (Redis's
// background thread is quick here; slotraft never queues).
func TestLazyFreeDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "2"), connect(t, startSlotraft(t), "2")
	big := []string{"SADD", "big{x}"}
	for i := range 200 {
		big = append(big, fmt.Sprint("member-", i))
	}
	steps := []struct {
		cmds [][]string
		want string // lazyfreed_objects after them
	}{
		{[][]string{{"CONFIG", "RESETSTAT"}}, "0"},
		{[][]string{big, {"SADD", "small{x}", "a", "b"}, {"UNLINK", "big{x}", "small{x}", "nosuch{x}"}}, "1"},
		{[][]string{big, {"DEL", "big{x}"}}, "1"}, // DEL frees at once by default
		{[][]string{{"CONFIG", "SET", "lazyfree-lazy-user-del", "yes"}, big, {"DEL", "big{x}"}}, "2"},
		{[][]string{{"SET", "a{x}", "1"}, {"SET", "b{x}", "1"}, {"FLUSHALL", "ASYNC"}}, "4"},
		{[][]string{{"SET", "a{x}", "1"}, {"FLUSHALL", "SYNC"}, {"SET", "a{x}", "1"}, {"FLUSHALL"}}, "4"},
		{[][]string{{"CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"}, {"SET", "a{x}", "1"}, {"FLUSHALL"}}, "5"},
		{[][]string{{"CONFIG", "RESETSTAT"}}, "0"},
	}
	for _, st := range steps {
		sameReplies(t, rc, sc, st.cmds)
		settled(t, rc)
		want, got := both(t, rc, sc, []string{"INFO", "memory"})
		for _, f := range []string{"lazyfreed_objects", "lazyfree_pending_objects"} {
			if w, g := infoValue(want.str, f), infoValue(got.str, f); w != g || w == "" {
				t.Errorf("after %q: %s redis %q, slotraft %q", st.cmds, f, w, g)
			}
		}
		if g := infoValue(got.str, "lazyfreed_objects"); g != st.want {
			t.Errorf("after %q: lazyfreed_objects %s, want %s", st.cmds, g, st.want)
		}
	}
	sameReplies(t, rc, sc, [][]string{{"CONFIG", "SET", "lazyfree-lazy-user-del", "no", "lazyfree-lazy-user-flush", "no"}})
}

// settled waits until redis-server's background thread freed what it
// was given (lazyfree_pending_objects 0), so its count is final.
func settled(t *testing.T, rc *client) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := rc.do("INFO", "memory")
		if err != nil {
			t.Fatal(err)
		}
		if infoValue(r.str, "lazyfree_pending_objects") == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server still frees in the background: %s", r.str)
		}
		time.Sleep(10 * time.Millisecond) // redis-server offers no way to wait for its background thread
	}
}
