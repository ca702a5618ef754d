package store

import (
	"fmt"
	"strings"
	"testing"
)

// forkFixture is a store with strings (inline and not), a hash and a list,
// some with deadlines.
func forkFixture() *Store {
	s := New()
	for i := range 300 {
		s.Put([]byte(fmt.Sprint("s", i)), str(fmt.Sprint(i), int64(i%3)*1000))
	}
	s.Put([]byte("big"), str(strings.Repeat("x", 1000), 0))
	h := NewHash(nil)
	h.Set([]byte("f"), []byte("v"))
	s.Put([]byte("h"), &Object{Type: TypeHash, Coll: h})
	l := NewList()
	l.PushBack([]byte("a"), []byte("b"))
	s.Put([]byte("l"), &Object{Type: TypeList, Coll: l})
	return s
}

// change applies every kind of change to s: replace, delete, insert, in
// place changes of collections, a new deadline, a flush.
func change(s *Store) {
	for i := 0; i < 300; i += 3 {
		s.Put([]byte(fmt.Sprint("s", i)), str("changed", 99))
	}
	for i := 1; i < 300; i += 3 {
		s.Delete([]byte(fmt.Sprint("s", i)))
	}
	s.Put([]byte("new"), str("n", 5))
	if o := s.Mutable([]byte("h"), 0); o != nil {
		o.Coll.(*Hash).Set([]byte("f"), []byte("changed"))
		o.Coll.(*Hash).Set([]byte("g"), []byte("added"))
	}
	if o := s.Mutable([]byte("l"), 0); o != nil {
		o.Coll.(*List).PushBack([]byte("c"))
	}
	if o := s.Mutable([]byte("big"), 0); o != nil {
		o.Str = []byte("y")
	}
}

// describe renders what a test compares of a store: its contents, its
// collections' elements, its counts and its deadlines.
func describe(s *Store) string {
	var b strings.Builder
	b.WriteString(contents(s))
	if o := s.GetRaw([]byte("h")); o != nil {
		h := o.Coll.(*Hash)
		fmt.Fprintf(&b, "hash %d\n", h.Len())
	}
	if o := s.GetRaw([]byte("l")); o != nil {
		fmt.Fprintf(&b, "list %d\n", o.Coll.(*List).Len())
	}
	fmt.Fprintf(&b, "len %d expiring %d bytes %d slot0 %d", s.Len(), s.ExpiringLen(), s.DataBytes(), s.CountInSlot(0))
	for slot := range uint16(slotCount) {
		if d := s.SlotDeletions(slot); d != 0 {
			fmt.Fprintf(&b, " dels[%d]=%d", slot, d)
		}
	}
	return b.String()
}

// TestForkIsolation: changes to a fork leave the original as it was, and
// changes to the original leave the fork as it was, whichever changes
// first (run with -race: the test changes both sides in turn, as fsm
// serialises them).
func TestForkIsolation(t *testing.T) {
	tests := []struct {
		name       string
		changeFork bool
		changeOrig bool
	}{
		{"fork changes", true, false},
		{"original changes", false, true},
		{"both change", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := forkFixture()
			before := describe(s)
			f := s.Fork()
			if got := describe(f); got != before {
				t.Fatalf("fork differs from the original:\n%s\n---\n%s", got, before)
			}
			if tc.changeFork {
				change(f)
			}
			if tc.changeOrig {
				change(s)
				s.Flush()
			}
			switch {
			case tc.changeFork && !tc.changeOrig:
				if got := describe(s); got != before {
					t.Fatalf("original changed with the fork:\n%s", got)
				}
			case tc.changeOrig && !tc.changeFork:
				if got := describe(f); got != before {
					t.Fatalf("fork changed with the original:\n%s", got)
				}
			default:
				ref := forkFixture()
				change(ref)
				if got, want := describe(f), describe(ref); got != want {
					t.Fatalf("fork:\n%s\nwant:\n%s", got, want)
				}
				if s.Len() != 0 {
					t.Fatalf("original has %d keys after its flush", s.Len())
				}
			}
		})
	}
}

// TestForkOfFork: a fork can be forked and snapshotted like any store.
func TestForkOfFork(t *testing.T) {
	s := forkFixture()
	before := describe(s)
	f := s.Fork()
	g := f.Fork()
	v := f.Snapshot()
	change(g)
	change(f)
	if got := describe(s); got != before {
		t.Fatalf("original changed:\n%s", got)
	}
	if v.Len() != s.Len() {
		t.Fatalf("view of the fork has %d keys, want %d", v.Len(), s.Len())
	}
}
