package fsm

import "testing"

// TestCountExpiredAndChanges: with NotifyCount (a group's leader), an
// entry counts the expired leftovers it deletes (a write over one, a DEL
// of one, active expiry) and its write commands that ran without an
// error; without it nothing is counted, and no event is collected for the
// bit alone.
func TestCountExpiredAndChanges(t *testing.T) {
	h := newHarness(t)
	h.do("SET a 1 PX 10")
	h.do("SET b 1 PX 10")
	h.do("SET c 1 PX 10")
	h.do("SET d 1 PX 10")
	h.now += 20
	cmds := func(lines ...string) [][][]byte {
		var out [][][]byte
		for _, l := range lines {
			out = append(out, fields(l))
		}
		return out
	}
	apply := func(e *Entry) *ApplyResult {
		h.idx++
		e.Now = h.now
		r, err := h.s.ApplyResult(h.idx, e)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Not counted: a follower's entry.
	h.s.notifyClasses = func() NotifyClass { return 0 }
	if r := apply(&Entry{Type: EntryCommands, Cmds: cmds("SET a 2")}); r.Expired != 0 || r.Changes != 0 {
		t.Fatalf("follower: expired %d changes %d, want 0 0", r.Expired, r.Changes)
	}
	h.s.notifyClasses = func() NotifyClass { return NotifyCount }
	r := apply(&Entry{Type: EntryCommands, Cmds: cmds("SET b 2", "DEL c", "GET b", "INCR b", "LPUSH b x", "SET e 1")})
	if r.Expired != 2 || r.Changes != 4 { // b and c expired; SET, DEL, INCR, SET (LPUSH: WRONGTYPE, GET: a read)
		t.Errorf("leader: expired %d changes %d, want 2 4", r.Expired, r.Changes)
	}
	if len(r.Events) != 0 {
		t.Errorf("events %v collected without a class", r.Events)
	}
	r = apply(&Entry{Type: EntryExpire, Cmds: [][][]byte{{[]byte("a"), []byte("d"), []byte("zz")}}})
	if r.Expired != 1 { // d; a was rewritten, zz is absent
		t.Errorf("active expiry: expired %d, want 1", r.Expired)
	}
}
