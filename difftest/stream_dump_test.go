package difftest

import (
	"strconv"
	"testing"
)

// TestStreamDumpRestoreDifferential: a stream DUMPed by redis-server
// (7.0: RDB_TYPE_STREAM_LISTPACKS_2) restores into slotraft, and one
// DUMPed by slotraft restores into redis-server, with the same entries,
// groups, pending entries and consumers as the original.
func TestStreamDumpRestoreDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	build := [][]string{
		{"XADD", "{d}s", "1-1", "a", "1", "b", "2"},
		{"XADD", "{d}s", "1-2", "a", "3", "b", "4"},
		{"XADD", "{d}s", "2-0", "c", "5"},
		{"XADD", "{d}s", "2-1", "a", "-9", "b", "1234567890123"},
		{"XDEL", "{d}s", "1-2"},
		{"XGROUP", "CREATE", "{d}s", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "{d}s", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "{d}s", ">"},
		{"XGROUP", "CREATE", "{d}s", "g2", "$"},
		{"XGROUP", "CREATECONSUMER", "{d}s", "g2", "carol"},
	}
	for i := range 150 {
		build = append(build, []string{"XADD", "{d}s", "5-" + strconv.Itoa(i), "f", strconv.Itoa(i % 4)})
	}
	sameReplies(t, rc, sc, build)
	read := func(key string) [][]string {
		return [][]string{{"XRANGE", key, "-", "+"}, {"XLEN", key}, {"XPENDING", key, "g"},
			{"XINFO", "GROUPS", key}, {"XPENDING", key, "g", "-", "+", "10", "alice"}}
	}
	cross := func(from, to *client, what string) {
		payload, err := from.do("DUMP", "{d}s")
		if err != nil || payload.typ != '$' {
			t.Fatalf("%s: DUMP: %v %v", what, payload, err)
		}
		if r, err := to.do("RESTORE", "{d}copy", "0", payload.str, "REPLACE"); err != nil || r.str != "OK" {
			t.Fatalf("%s: RESTORE: %v %v", what, r, err)
		}
		for _, args := range read("{d}s") {
			copyArgs := append([]string(nil), args...)
			for i, a := range copyArgs {
				if a == "{d}s" {
					copyArgs[i] = "{d}copy"
				}
			}
			want, err1 := from.do(args...)
			got, err2 := to.do(copyArgs...)
			if err1 == nil && err2 == nil && len(args) > 3 && args[0] == "XPENDING" {
				sameIdle(t, want, got)
			}
			if err1 != nil || err2 != nil || want.String() != got.String() {
				t.Errorf("%s %q:\n  original: %s\n  restored: %s", what, args, want, got)
			}
		}
	}
	cross(rc, sc, "redis-server to slotraft")
	cross(sc, rc, "slotraft to redis-server")
}

// sameIdle checks that the pending entries of two XPENDING replies (the
// extended form: id, consumer, idle ms, deliveries) were idle within a
// second of each other, then blanks the idle times: the two replies are
// read a moment apart, so their idle times may differ by a millisecond.
func sameIdle(t *testing.T, a, b reply) {
	t.Helper()
	if len(a.elems) != len(b.elems) {
		return // the full comparison reports it
	}
	for i := range a.elems {
		ea, eb := a.elems[i].elems, b.elems[i].elems
		if len(ea) != 4 || len(eb) != 4 {
			return
		}
		ia, err1 := strconv.ParseInt(ea[2].str, 10, 64)
		ib, err2 := strconv.ParseInt(eb[2].str, 10, 64)
		if err1 != nil || err2 != nil || ia-ib > 1000 || ib-ia > 1000 {
			t.Errorf("pending entry %d idle: %s and %s", i, ea[2], eb[2])
		}
		ea[2].str, eb[2].str = "idle", "idle"
	}
}
