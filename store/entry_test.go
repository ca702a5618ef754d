package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Tests of the key tree's layout (entry.go): which keys are inline, that
// every path converts between the layouts, and that a View keeps its point
// in time whichever layout a key moves to.

// recordOf is key's stored record, nil if absent.
func recordOf(s *Store, key string) *record {
	e, ok := s.find([]byte(key))
	if !ok {
		return nil
	}
	return e.r
}

func TestInlineLayoutChoice(t *testing.T) {
	small, limit, big := strings.Repeat("s", 3), strings.Repeat("m", inlineMax), strings.Repeat("b", inlineMax+1)
	tests := []struct {
		name   string
		o      *Object
		inline bool
	}{
		{"small string", str(small, 0), true},
		{"empty string", str("", 0), true},
		{"string at the limit", str(limit, 0), true},
		{"string over the limit", str(big, 0), false},
		{"small string with expiry", str(small, 5000), false},
		{"collection", &Object{Type: TypeList, Coll: &testColl{items: []string{"a"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			want := *tt.o
			want.Version, want.Touched = 42, 1234
			in := want
			s.Put([]byte("key"), &in)
			r := recordOf(s, "key")
			if (r.obj == nil) != tt.inline {
				t.Fatalf("inline = %v, want %v", r.obj == nil, tt.inline)
			}
			got := s.Get([]byte("key"), 0)
			if got.Type != want.Type || !bytes.Equal(got.Str, want.Str) || got.ExpireAt != want.ExpireAt ||
				got.Version != 42 || got.Touched != 1234 {
				t.Fatalf("Get = %+v, want %+v", got, want)
			}
			if cap(r.keyBytes()) != len("key") || (tt.inline && cap(got.Str) != len(got.Str)) {
				t.Fatal("a key or inline value handed out has room to append over other bytes")
			}
		})
	}
}

// TestInlineCopiesItsInput: an inline string keeps neither the caller's key
// nor its value, so changing them afterwards changes nothing stored.
func TestInlineCopiesItsInput(t *testing.T) {
	s := New()
	key, val := []byte("key"), []byte("val")
	s.Put(key, &Object{Type: TypeString, Str: val})
	key[0], val[0] = 'X', 'X'
	if o := s.Get([]byte("key"), 0); o == nil || string(o.Str) != "val" {
		t.Fatalf("Get after the caller changed its slices = %+v", o)
	}
	// An append to a returned key must not reach the value behind it.
	k := s.KeysInSlot(CursorSlot(cursorOf([]byte("key"))), 1)[0]
	_ = append(k, 'Z')
	if o := s.Get([]byte("key"), 0); string(o.Str) != "val" {
		t.Fatalf("an append to a returned key changed the value: %q", o.Str)
	}
}

// TestExpiryConvertsLayout sets and clears a deadline on a small string:
// the key moves to an Object and back, and the expiry index follows.
func TestExpiryConvertsLayout(t *testing.T) {
	s := New()
	key := []byte("k")
	s.Put(key, str("v", 0))
	s.Put(key, str("v", 500))
	if r := recordOf(s, "k"); r.obj == nil || r.obj.ExpireAt != 500 {
		t.Fatalf("with a deadline: record %+v, want an Object expiring at 500", r)
	}
	if got := s.Expired(500, 10); len(got) != 1 || string(got[0]) != "k" {
		t.Fatalf("Expired(500) = %q", got)
	}
	if s.Get(key, 500) != nil || s.Get(key, 499) == nil {
		t.Fatal("the deadline does not hide the key at 500 only")
	}
	s.Put(key, str("w", 0))
	if r := recordOf(s, "k"); r.obj != nil {
		t.Fatalf("deadline cleared: record %+v, want inline", r)
	}
	if s.expires.Len() != 0 || len(s.Expired(1<<60, 10)) != 0 {
		t.Fatal("the expiry index still holds the key")
	}
	if o := s.Get(key, 1<<60); o == nil || string(o.Str) != "w" || o.ExpireAt != 0 {
		t.Fatalf("Get = %+v, want w without expiry", o)
	}
	checkInvariants(t, s, map[string]int64{"k": 0})
}

// TestViewKeepsInlineStrings changes every kind of key in every way after
// a Snapshot and checks the View still shows what it was taken with:
// records are shared with the View and must never change.
func TestViewKeepsInlineStrings(t *testing.T) {
	s := New()
	big := strings.Repeat("B", inlineMax+1)
	for i := range 300 {
		o := str(fmt.Sprint("v", i), 0)
		switch i % 3 {
		case 1:
			o = str(big, 0)
		case 2:
			o = str(fmt.Sprint("e", i), 9000)
		}
		o.Version, o.Touched = uint64(i+1), int64(i)
		s.Put([]byte(fmt.Sprint("k", i)), o)
	}
	before := contents(s)
	v := s.Snapshot()
	for i := range 300 {
		key := []byte(fmt.Sprint("k", i))
		switch i % 5 {
		case 0: // small to small
			s.Put(key, &Object{Type: TypeString, Str: []byte("new"), Version: 999, Touched: 999})
		case 1: // to big, or to small
			s.Put(key, str(big+"x", 0))
		case 2: // gains or loses a deadline
			s.Put(key, str("ttl", 7000))
		case 3: // an Object of its own, changed in place
			o := s.Mutable(key, 0)
			o.Version, o.Touched = 1000, 1000
		case 4:
			s.Delete(key)
		}
	}
	if got := viewContents(t, v); got != before {
		t.Fatalf("the View changed:\n got %.300s\nwant %.300s", got, before)
	}
}

// TestMutableInlineString: Mutable on an inline string gives an Object of
// its own whose in-place changes are stored, and a View taken before
// keeps the old metadata.
func TestMutableInlineString(t *testing.T) {
	s := New()
	s.Put([]byte("k"), &Object{Type: TypeString, Str: []byte("v"), Version: 1, Touched: 10})
	v := s.Snapshot()
	o := s.Mutable([]byte("k"), 0)
	o.Version, o.Touched = 2, 20
	if got := s.Get([]byte("k"), 0); got.Version != 2 || got.Touched != 20 || string(got.Str) != "v" {
		t.Fatalf("after an in-place change: %+v", got)
	}
	if again := s.Mutable([]byte("k"), 0); again != o {
		t.Fatal("a second Mutable in the same generation copied again")
	}
	if got := viewContents(t, v); got != "\"k\"=1:\"v\":0:1:10\n" {
		t.Fatalf("View = %q", got)
	}
}

// TestLookupsAmongEqualCursors finds, replaces and deletes keys that share
// one cursor (a 48-bit hash collision), in either layout.
func TestLookupsAmongEqualCursors(t *testing.T) {
	s := New()
	keys := []string{"b", "a", "c", "", "ab"}
	for _, k := range keys {
		putAt(s, 77, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, ok := s.findAt(77, k); !ok {
			t.Fatalf("%q not found among equal cursors", k)
		}
	}
	if _, ok := s.findAt(77, "zz"); ok {
		t.Fatal("found a key never stored")
	}
	var got []string
	s.Scan(77, 100, func(k []byte, _ *Object) { got = append(got, string(k)) })
	if !slices.Equal(got, keys) {
		t.Fatalf("Scan = %q, want %q", got, keys)
	}
}

// findAt is find for a key stored at a chosen cursor (putAt).
func (s *Store) findAt(cur uint64, key string) (entry, bool) {
	var found entry
	ok := false
	s.keys.Ascend(entry{cur: cur}, func(e entry) bool {
		if e.cur == cur && string(e.r.key) == key {
			found, ok = e, true
		}
		return e.cur == cur && !ok
	})
	return found, ok
}

func TestFindAllocatesNothing(t *testing.T) {
	s := New()
	fill(s, 1000)
	key := []byte("key:500")
	if n := testing.AllocsPerRun(100, func() { s.find(key) }); n != 0 {
		t.Fatalf("find allocates %v times", n)
	}
}

// TestAscendScratchObject: the Objects Ascend and Scan hand out are right
// for each key, though an inline string's is reused.
func TestAscendScratchObject(t *testing.T) {
	s := New()
	fill(s, 500)
	want := map[string]string{}
	for i := range 500 {
		k := fmt.Sprintf("key:%d", i)
		want[k] = fmt.Sprintf("%q:%d", s.Get([]byte(k), 0).Str, s.Get([]byte(k), 0).Version)
	}
	check := func(k []byte, o *Object) {
		if got := fmt.Sprintf("%q:%d", o.Str, o.Version); got != want[string(k)] {
			t.Fatalf("%s: visited %s, want %s", k, got, want[string(k)])
		}
	}
	s.Ascend(func(k []byte, o *Object) bool { check(k, o); return true })
	for cur := uint64(0); ; {
		if cur = s.Scan(cur, 7, check); cur == 0 {
			break
		}
	}
}
