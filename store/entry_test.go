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
		{"small string with expiry", str(small, 5000), true},
		{"string at the limit with expiry", str(limit, 5000), true},
		{"string over the limit with expiry", str(big, 5000), false},
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
			if r.inline() != tt.inline {
				t.Fatalf("inline = %v, want %v", r.inline(), tt.inline)
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

// TestExpiryOnInlineString sets, moves and clears a deadline on a small
// string (which stays inline, its deadline in its bytes) and on a large one
// (an Object), and checks what Get, Expired and the expiry index say.
func TestExpiryOnInlineString(t *testing.T) {
	for _, tt := range []struct {
		name   string
		value  string
		inline bool
	}{{"small", "v", true}, {"large", strings.Repeat("L", inlineMax+1), false}} {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			key := []byte("k")
			check := func(at int64) {
				t.Helper()
				r := recordOf(s, "k")
				if r.inline() != tt.inline || r.expireAt() != at {
					t.Fatalf("record inline %v expiring at %d, want inline %v at %d", r.inline(), r.expireAt(), tt.inline, at)
				}
				if o := s.GetRaw(key); string(o.Str) != tt.value || o.ExpireAt != at {
					t.Fatalf("GetRaw = %q expiring at %d, want %d", o.Str, o.ExpireAt, at)
				}
				checkInvariants(t, s, map[string]int64{"k": at})
			}
			for _, at := range []int64{0, 500, 300, 0, 1 << 62} {
				s.Put(key, str(tt.value, at))
				check(at)
			}
			s.Put(key, str(tt.value, 500))
			if got := s.Expired(500, 10); len(got) != 1 || string(got[0]) != "k" {
				t.Fatalf("Expired(500) = %q", got)
			}
			if s.Get(key, 500) != nil || s.Get(key, 499) == nil {
				t.Fatal("the deadline does not hide the key from 500 on")
			}
			s.Delete(key)
			if s.expires.Len() != 0 || s.Len() != 0 {
				t.Fatal("Delete left the key or its deadline")
			}
		})
	}
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
		case 2: // gains, moves or loses a deadline
			s.Put(key, str("ttl", int64(7000*(i%2))))
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

// TestMutableKeepsExpiryIndex: Mutable stores a new record for a key with a
// deadline (a collection shared with a View, an inline string); the expiry
// index must hold the new record, not keep the old one and its value alive.
func TestMutableKeepsExpiryIndex(t *testing.T) {
	s := New()
	s.Put([]byte("list"), &Object{Type: TypeList, Coll: &testColl{items: []string{"a"}}, ExpireAt: 700})
	s.Put([]byte("str"), str("v", 800))
	model := map[string]int64{"list": 700, "str": 800}
	s.Snapshot()
	for _, k := range []string{"list", "str"} {
		o := s.Mutable([]byte(k), 0)
		if o == nil || o.ExpireAt != model[k] {
			t.Fatalf("Mutable(%q) = %+v, want the deadline %d", k, o, model[k])
		}
		checkInvariants(t, s, model)
	}
	if got := s.Expired(1000, 10); len(got) != 2 {
		t.Fatalf("Expired(1000) = %q, want both keys", got)
	}
}
