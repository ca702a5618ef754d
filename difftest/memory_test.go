package difftest

import (
	"strings"
	"testing"
)

// TestMemoryDifferential: MEMORY's errors and missing keys agree exactly
// with redis-server (not HELP: Debian's redis-server 7.0 ends it with
// "Prints this help.", 7.2 with "Print this help."); USAGE is a number for a key on both; STATS
// has Redis's fields in Redis's order (values are each allocator's own);
// DOCTOR answers one of Redis's reports.
func TestMemoryDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	exactCmds := [][]string{
		{"SET", "mk", "v"},
		{"HSET", "mh", "f1", "v1", "f2", "v2"},
		{"MEMORY", "USAGE", "nokey"},
		{"MEMORY", "USAGE", "mk", "SAMPLES", "-1"},
		{"MEMORY", "USAGE", "mk", "SAMPLES", "x"},
		{"MEMORY", "USAGE", "mk", "SAMPLES"},
		{"MEMORY", "USAGE", "mk", "FOO", "1"},
		{"MEMORY", "USAGE"},
		{"MEMORY", "STATS", "x"},
		{"MEMORY", "DOCTOR", "x"},
		{"MEMORY", "NOPE"},
		{"MEMORY"},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		sameReplies(t, rc, sc, exactCmds)
		for _, args := range [][]string{{"MEMORY", "USAGE", "mk"}, {"MEMORY", "USAGE", "mh", "SAMPLES", "0"}, {"memory", "usage", "mh", "samples", "1"}} {
			want, got := both(t, rc, sc, args)
			if want.typ != ':' || got.typ != ':' || got.str == "0" {
				t.Errorf("RESP%s %q: redis %s, slotraft %s", proto, args, want, got)
			}
		}
		want, got := both(t, rc, sc, []string{"MEMORY", "STATS"})
		if w, g := statsKeys(want), statsKeys(got); w != g || want.typ != got.typ {
			t.Errorf("RESP%s MEMORY STATS fields:\n  redis:    %c %s\n  slotraft: %c %s", proto, want.typ, w, got.typ, g)
		}
		want, got = both(t, rc, sc, []string{"MEMORY", "DOCTOR"})
		if want.typ != got.typ || !strings.Contains(got.str, "Sam") {
			t.Errorf("RESP%s MEMORY DOCTOR: redis %c, slotraft %s", proto, want.typ, got)
		}
	}
}

// both sends args to redis-server and to slotraft.
func both(t *testing.T, rc, sc *client, args []string) (want, got reply) {
	t.Helper()
	want, err := rc.do(args...)
	if err != nil {
		t.Fatalf("redis-server %q: %v", args, err)
	}
	got, err = sc.do(args...)
	if err != nil {
		t.Fatalf("slotraft %q: %v", args, err)
	}
	return want, got
}

// statsKeys lists MEMORY STATS' field names in order, db.0's inside.
func statsKeys(r reply) string {
	var keys []string
	for i := 0; i+1 < len(r.elems); i += 2 {
		k := r.elems[i].str
		if sub := r.elems[i+1]; len(sub.elems) > 0 {
			k += "(" + statsKeys(sub) + ")"
		}
		keys = append(keys, k)
	}
	return strings.Join(keys, " ")
}
