package fsm

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/slotraft/slotraft/store"
)

// streamFixture builds a stream with entries over several listpack nodes
// (the same fields, other fields, a deleted entry), two groups, pending
// entries and consumers.
func streamFixture(t *testing.T) *harness {
	h := newHarness(t)
	h.run([]step{
		{"xadd s 1-1 a 1 b 2", `"1-1"`},
		{"xadd s 1-2 a 3 b 4", `"1-2"`},
		{"xadd s 2-0 c 5", `"2-0"`},
		{"xadd s 2-1 a -9 b 1234567890123", `"2-1"`},
	})
	for i := range 250 {
		h.do(fmt.Sprintf("xadd s %d-%d f%d v%d x %s", 3+i/7, i%7, i%3, i, "123456789012345678901234567890123456789012345678901234567890123456789"))
	}
	h.run([]step{
		{"xdel s 1-2", ":1"},
		{"xgroup create s g 0", "+OK"},
		{"xreadgroup group g alice count 3 streams s >", `[["s" [["1-1" ["a" "1" "b" "2"]] ["2-0" ["c" "5"]] ["2-1" ["a" "-9" "b" "1234567890123"]]]]]`},
		{"xreadgroup group g bob count 1 streams s >", `[["s" [["3-0" ["f0" "v0" "x" "123456789012345678901234567890123456789012345678901234567890123456789"]]]]]`},
		{"xack s g 2-0", ":1"},
		{"xgroup create s g2 $", "+OK"},
		{"xgroup createconsumer s g2 carol", ":1"},
	})
	return h
}

// streamPayload is a DUMP payload of the stream at key as type t.
func streamPayload(t *testing.T, h *harness, key string, typ byte) []byte {
	o := h.s.store.Get([]byte(key), h.now)
	if o == nil {
		t.Fatalf("no stream %s", key)
	}
	b := rdbAppendStream(nil, o.Coll.(*store.Stream), typ)
	b = binary.LittleEndian.AppendUint16(b, 11)
	return binary.LittleEndian.AppendUint64(b, rdbCRC(b))
}

// TestStreamDumpRestore: a stream survives DUMP and RESTORE in each of
// Redis's three stream formats, its entries, groups, pending entries and
// consumers as XRANGE, XINFO and XPENDING show them (in the oldest format
// without what it does not carry: entries-read is estimated, and the
// active time is the seen time before _3).
func TestStreamDumpRestore(t *testing.T) {
	h := streamFixture(t)
	full := h.read("xinfo stream s full")
	for _, tc := range []struct {
		typ   byte
		exact bool
	}{{rdbTypeStreamListpacks3, true}, {rdbTypeStreamListpacks2, false}, {rdbTypeStreamListpacks, false}} {
		dst := fmt.Sprintf("d%d", tc.typ)
		if got := restore(h, dst, "0", streamPayload(t, h, "s", tc.typ)); got != "+OK" {
			t.Fatalf("type %d: RESTORE = %s", tc.typ, got)
		}
		for _, cmd := range []string{"xrange %s - +", "xlen %s", "xpending %s g", "xpending %s g - + 10 alice", "xinfo consumers %s g"} {
			if a, b := h.read(fmt.Sprintf(cmd, "s")), h.read(fmt.Sprintf(cmd, dst)); a != b {
				t.Errorf("type %d: %q\n  source: %s\n  copy:   %s", tc.typ, cmd, a, b)
			}
		}
		if got := h.read("xinfo stream " + dst + " full"); tc.exact && got != full {
			t.Errorf("type %d: XINFO STREAM FULL\n  source: %s\n  copy:   %s", tc.typ, full, got)
		}
	}
	if got := h.do("dump s"); got == "" || got[0] == '-' {
		t.Fatalf("DUMP of a stream: %s", got)
	}
	payload := dumpOf(t, h, "s")
	if v := binary.LittleEndian.Uint16(payload[len(payload)-10:]); v != rdbVersionStreamDump || payload[0] != rdbTypeStreamListpacks2 {
		t.Fatalf("DUMP wrote type %d, RDB version %d", payload[0], v)
	}
	if got := restore(h, "again", "0", payload); got != "+OK" {
		t.Fatalf("RESTORE of DUMP = %s", got)
	}
	if a, b := h.read("xinfo groups s"), h.read("xinfo groups again"); a != b {
		t.Errorf("XINFO GROUPS\n  source: %s\n  copy:   %s", a, b)
	}
}

// TestStreamRestoreBadData: a damaged stream payload is "Bad data format"
// and creates nothing, whatever byte is cut or changed.
func TestStreamRestoreBadData(t *testing.T) {
	h := streamFixture(t)
	good := streamPayload(t, h, "s", rdbTypeStreamListpacks3)
	body := good[:len(good)-10]
	for cut := 1; cut < len(body); cut += 37 {
		p := append([]byte(nil), body[:cut]...)
		p = binary.LittleEndian.AppendUint16(p, 11)
		p = binary.LittleEndian.AppendUint64(p, rdbCRC(p))
		if got := restore(h, "bad", "0", p); got != "-ERR Bad data format" {
			t.Fatalf("payload cut at %d: %s", cut, got)
		}
	}
	if got := h.read("exists bad"); got != ":0" {
		t.Fatalf("a bad payload created the key: %s", got)
	}
}

func FuzzStreamRestore(f *testing.F) {
	s := store.NewStream()
	s.Add(store.StreamID{Ms: 1, Seq: 1}, [][]byte{[]byte("a"), []byte("1")})
	s.Add(store.StreamID{Ms: 2}, [][]byte{[]byte("b"), []byte("x")})
	s.CreateGroup([]byte("g"), store.StreamID{Ms: 1, Seq: 1}, 1)
	g := s.MutGroup([]byte("g"))
	g.CreateConsumer([]byte("c"), 5)
	g.SetPending(store.PendingEntry{ID: store.StreamID{Ms: 1, Seq: 1}, Consumer: "c", DeliveryTime: 5, DeliveryCount: 1})
	for _, typ := range []byte{rdbTypeStreamListpacks, rdbTypeStreamListpacks2, rdbTypeStreamListpacks3} {
		f.Add(rdbAppendStream(nil, s, typ))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v, err := rdbDecode(body)
		if err == nil && v.typ == store.TypeStream && v.stream == nil {
			t.Fatal("a stream value without a stream")
		}
	})
}
