package fsm

import "testing"

// TestAccessLookups: reads record accesses (OBJECT IDLETIME restarts),
// TYPE, EXISTS, TTL and OBJECT do not (Redis's LOOKUP_NOTOUCH), a
// NO-TOUCH read does not, TOUCH always does.
func TestAccessLookups(t *testing.T) {
	h := newHarness(t)
	h.run([]step{
		{"set k v", "+OK"},
		{"sleep 5000", ""},
		{"read object idletime k", ":5"},
		{"read type k", "+string"},
		{"read exists k", ":1"},
		{"read ttl k", ":-1"},
		{"read object encoding k", `"embstr"`},
		{"read object idletime k", ":5"},
		{"read get k", `"v"`},
		{"read object idletime k", ":0"},
		{"sleep 3000", ""},
		{"read strlen k", ":1"},
		{"read object idletime k", ":0"},
		{"sleep 3000", ""},
		{"read touch k nosuch k", ":2"},
		{"read object idletime k", ":0"},
		{"read object idletime nosuch", "nil"},
		{"read object freq k", "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."},
	})
	h.now += 4000
	if got := show(replyOf(h.s.ReadWith(h.now, Lookup([]byte("get")), fields("get k"), ReadOpts{NoTouch: true}))); got != `"v"` {
		t.Fatalf("NO-TOUCH get: %s", got)
	}
	h.run([]step{{"read object idletime k", ":4"}})
	if got := show(replyOf(h.s.ReadWith(h.now, Lookup([]byte("touch")), fields("touch k"), ReadOpts{NoTouch: true}))); got != ":1" {
		t.Fatalf("NO-TOUCH touch: %s", got)
	}
	h.run([]step{{"read object idletime k", ":0"}})
}

func TestAccessLFU(t *testing.T) {
	h := newHarness(t)
	lfu := &AccessSettings{LFU: true} // log factor 0: every access counts
	h.s.accessHook = func() *AccessSettings { return lfu }
	h.run([]step{
		{"set k v", "+OK"},
		{"read object freq k", ":5"}, // LFU_INIT_VAL
		{"read get k", `"v"`},
		{"read get k", `"v"`},
		{"read object freq k", ":7"},
		{"read object idletime k", "-ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."},
	})
	if got := restore(h, "r", "0", dumpOf(t, h, "k"), "FREQ", "100", "REPLACE"); got != "+OK" {
		t.Fatalf("restore: %s", got)
	}
	h.run([]step{{"read object freq r", ":100"}})
}

func TestEvictEntry(t *testing.T) {
	h := newHarness(t)
	h.run([]step{{"set a 1", "+OK"}, {"rpush b x", ":1"}, {"set c 1", "+OK"}})
	va := h.s.store.GetRaw([]byte("a")).Version
	vb := h.s.store.GetRaw([]byte("b")).Version
	h.s.notifyClasses = func() NotifyClass { return NotifyEvicted | NotifyGeneric }
	h.idx++
	r, err := h.s.ApplyResult(h.idx, &Entry{Type: EntryEvict, Now: h.now, Cmds: [][][]byte{
		EvictOp([]byte("a"), va),
		EvictOp([]byte("b"), vb+1), // rewritten since it was chosen: stays
		EvictOp([]byte("nosuch"), 1),
		{[]byte("c")}, // malformed
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := showAll(repliesOf(r.Outcomes)); got != `:1 :0 :0 -ERR bad evict op` {
		t.Fatalf("replies %s", got)
	}
	if n := Evicted(r.Outcomes); n != 1 {
		t.Fatalf("Evicted = %d, want 1", n)
	}
	if len(r.Events) != 1 || r.Events[0].Name != "evicted" || string(r.Events[0].Key) != "a" {
		t.Fatalf("events %+v, want one evicted a", r.Events)
	}
	h.run([]step{{"exists a", ":0"}, {"exists b c", ":2"}})
	if h.s.DataBytes() != h.s.store.DataBytes() || h.s.DataBytes() <= 0 {
		t.Fatalf("DataBytes %d, store %d", h.s.DataBytes(), h.s.store.DataBytes())
	}
}
