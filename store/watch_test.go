package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

func watchPut(s *Store, key string) {
	s.Put([]byte(key), &Object{Type: TypeString, Str: []byte("v")})
}

func TestWatchSlotDeletions(t *testing.T) {
	s := New()
	a, b := slots.Of([]byte("a")), slots.Of([]byte("b"))
	if s.SlotDeletions(a) != 0 {
		t.Fatal("fresh store has deletions")
	}
	watchPut(s, "a")
	watchPut(s, "{a}x")
	if s.SlotDeletions(a) != 0 {
		t.Fatal("a put counted as a deletion")
	}
	s.Delete([]byte("a"))
	s.Delete([]byte("nope")) // nothing removed: not counted
	if s.SlotDeletions(a) != 1 || s.SlotDeletions(b) != 0 {
		t.Fatalf("deletions a=%d b=%d", s.SlotDeletions(a), s.SlotDeletions(b))
	}
	// A View keeps its counts while the store goes on deleting.
	v := s.Snapshot()
	s.Delete([]byte("{a}x"))
	if s.SlotDeletions(a) != 2 || v.dels[a] != 1 {
		t.Fatalf("after snapshot: store %d, view %d", s.SlotDeletions(a), v.dels[a])
	}
	// FLUSHALL counts one deletion in every slot that held keys.
	watchPut(s, "b")
	s.Flush()
	if s.SlotDeletions(a) != 2 || s.SlotDeletions(b) != 1 {
		t.Fatalf("after flush a=%d b=%d", s.SlotDeletions(a), s.SlotDeletions(b))
	}
	// The counts survive a snapshot round trip.
	r := restoredCopy(t, s)
	if r.SlotDeletions(a) != 2 || r.SlotDeletions(b) != 1 || len(r.deletionSlots()) != 2 {
		t.Fatalf("restored a=%d b=%d slots %v", r.SlotDeletions(a), r.SlotDeletions(b), r.deletionSlots())
	}
	// A store without deletions writes exactly the version-1 format.
	var plain bytes.Buffer
	n := New()
	watchPut(n, "k")
	n.Snapshot().WriteTo(&plain)
	if len(n.deletionSlots()) != 0 || bytes.Contains(plain.Bytes(), []byte{delsTag}) {
		t.Fatal("a store without deletions wrote a deletion record")
	}
	if err := New().Restore(bytes.NewReader(plain.Bytes())); err != nil {
		t.Fatal(err)
	}
}

func TestWatchDelsCorrupt(t *testing.T) {
	// Build snapshots by hand around a dels record.
	mk := func(rec []byte) []byte {
		var b bytes.Buffer
		b.WriteString(snapshotMagic)
		b.Write([]byte{0, 1, 0}) // version 1, 0 records
		b.Write(rec)
		b.WriteByte(endMarker)
		return withCRC(b.Bytes())
	}
	good := mk([]byte{delsTag, 2, 3, 5, 7, 1})
	st := New()
	if err := st.Restore(bytes.NewReader(good)); err != nil {
		t.Fatalf("good: %v", err)
	}
	if st.SlotDeletions(3) != 5 || st.SlotDeletions(7) != 1 {
		t.Fatalf("counts %d %d", st.SlotDeletions(3), st.SlotDeletions(7))
	}
	for name, rec := range map[string][]byte{
		"zero slots":   {delsTag, 0},
		"out of order": {delsTag, 2, 7, 1, 3, 1},
		"duplicate":    {delsTag, 2, 3, 1, 3, 1},
		"zero count":   {delsTag, 1, 3, 0},
		"slot range":   {delsTag, 1, 0x80, 0x80, 0x01, 1},
		"truncated":    {delsTag, 2, 3, 1},
		"too many":     {delsTag, 0x81, 0x80, 0x01},
		"not last":     {delsTag, 1, 3, 1, delsTag, 1, 4, 1},
	} {
		if err := New().Restore(bytes.NewReader(mk(rec))); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
		}
	}
}

func withCRC(b []byte) []byte {
	d := &decoder{}
	d.hash(b)
	var sum [8]byte
	for i := range 8 {
		sum[i] = byte(d.crc >> (56 - 8*i))
	}
	return append(b, sum[:]...)
}
