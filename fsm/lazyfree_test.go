package fsm

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// TestFreedCounts: on a group's leader (NotifyCount) an entry counts, per
// kind, the values Redis would free in the background: those over
// LAZYFREE_THRESHOLD (64 allocations) that UNLINK, DEL, expiry and
// eviction drop, and every key of a flush by its form; a small value
// counts nothing, and a follower counts nothing.
func TestFreedCounts(t *testing.T) {
	h := newHarness(t)
	big := func(key string) {
		var m []string
		for i := range 200 {
			m = append(m, fmt.Sprint("m", i))
		}
		h.do("SADD " + key + " " + strings.Join(m, " ")) // 200 members: a hashtable
	}
	for _, k := range []string{"u1", "u2", "d1", "x1", "ev"} {
		big(k)
	}
	h.do("SADD small a b c")
	h.do("PEXPIRE x1 10")
	cmds, apply := cmdLines, h.applyEntry
	h.s.notifyClasses = func() NotifyClass { return 0 } // a follower
	if r := apply(&Entry{Type: EntryCommands, Cmds: cmds("UNLINK u1")}); !r.Freed.IsZero() {
		t.Fatalf("a follower counted %+v", r.Freed)
	}
	h.s.notifyClasses = func() NotifyClass { return NotifyCount }
	r := apply(&Entry{Type: EntryCommands, Cmds: cmds("UNLINK u2 small nosuch", "DEL d1")})
	if want := (Freed{Unlink: 1, Del: 1}); r.Freed != want {
		t.Errorf("UNLINK and DEL: %+v, want %+v", r.Freed, want)
	}
	h.now += 20
	r = apply(&Entry{Type: EntryExpire, Cmds: [][][]byte{{[]byte("x1")}}})
	if want := (Freed{Expire: 1}); r.Freed != want {
		t.Errorf("active expiry: %+v, want %+v", r.Freed, want)
	}
	o := h.s.store.GetRaw([]byte("ev"))
	ver := binary.BigEndian.AppendUint64(nil, o.Version)
	r = apply(&Entry{Type: EntryEvict, Cmds: [][][]byte{{[]byte("ev"), ver}}})
	if want := (Freed{Evict: 1}); r.Freed != want {
		t.Errorf("eviction: %+v, want %+v", r.Freed, want)
	}
	h.do("SET a 1")
	h.do("SET b 1")
	r = apply(&Entry{Type: EntryCommands, Cmds: cmds("FLUSHALL ASYNC", "SET c 1", "FLUSHDB", "FLUSHALL SYNC")})
	if want := (Freed{FlushAsync: 2, FlushDefault: 1}); r.Freed != want { // a and b; then c
		t.Errorf("flushes: %+v, want %+v", r.Freed, want)
	}
}
