package fsm

import "testing"

// TestCountExpiredAndChanges: with NotifyCount (a group's leader), an
// entry counts the expired leftovers it deletes (a write over one, a DEL
// of one, active expiry) and the keys its commands changed (Redis's
// dirty, by key); without it nothing is counted, and no event is collected for the
// bit alone.
func TestCountExpiredAndChanges(t *testing.T) {
	h := newHarness(t)
	h.do("SET a 1 PX 10")
	h.do("SET b 1 PX 10")
	h.do("SET c 1 PX 10")
	h.do("SET d 1 PX 10")
	h.now += 20
	cmds, apply := cmdLines, h.applyEntry
	// Not counted: a follower's entry.
	h.s.notifyClasses = func() NotifyClass { return 0 }
	if r := apply(&Entry{Type: EntryCommands, Cmds: cmds("SET a 2")}); r.Expired != 0 || r.Changes != 0 {
		t.Fatalf("follower: expired %d changes %d, want 0 0", r.Expired, r.Changes)
	}
	h.s.notifyClasses = func() NotifyClass { return NotifyCount }
	r := apply(&Entry{Type: EntryCommands, Cmds: cmds("SET b 2", "DEL c", "GET b", "INCR b", "LPUSH b x", "SET e 1")})
	// b and c expired; SET b, INCR b, SET e change a key each (DEL c finds
	// it expired and deletes nothing, as in Redis; LPUSH: WRONGTYPE; GET:
	// a read).
	if r.Expired != 2 || r.Changes != 3 {
		t.Errorf("leader: expired %d changes %d, want 2 3", r.Expired, r.Changes)
	}
	if len(r.Events) != 0 {
		t.Errorf("events %v collected without a class", r.Events)
	}
	r = apply(&Entry{Type: EntryExpire, Cmds: [][][]byte{{[]byte("a"), []byte("d"), []byte("zz")}}})
	if r.Expired != 1 { // d; a was rewritten, zz is absent
		t.Errorf("active expiry: expired %d, want 1", r.Expired)
	}
}
