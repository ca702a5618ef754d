package store

import (
	"slices"
	"testing"
)

// testColl is a minimal Collection: Clone copies the slice.
type testColl struct{ items []string }

func (c *testColl) Len() int          { return len(c.items) }
func (c *testColl) Clone() Collection { return &testColl{items: slices.Clone(c.items)} }

func collOf(s *Store, key string) *testColl {
	o := s.Get([]byte(key), 0)
	if o == nil {
		return nil
	}
	return o.Coll.(*testColl)
}

func TestMutableCopyOnWrite(t *testing.T) {
	s := New()
	s.Put([]byte("l"), &Object{Type: TypeList, Coll: &testColl{items: []string{"a"}}})

	first := s.Mutable([]byte("l"), 0)
	if first != s.GetRaw([]byte("l")) {
		t.Fatal("an Object stored since the last snapshot should be mutated in place")
	}
	first.Coll.(*testColl).items = append(first.Coll.(*testColl).items, "b")

	view := s.Snapshot()
	second := s.Mutable([]byte("l"), 0)
	if second == first {
		t.Fatal("Mutable after Snapshot returned the Object the View shares")
	}
	second.Coll.(*testColl).items[0] = "changed"
	second.Coll.(*testColl).items = append(second.Coll.(*testColl).items, "c")

	var inView []string
	view.keys.Scan(func(e entry) bool {
		inView = e.r.obj.Coll.(*testColl).items
		return false
	})
	if !slices.Equal(inView, []string{"a", "b"}) {
		t.Fatalf("view sees %v, want [a b]", inView)
	}
	if got := collOf(s, "l").items; !slices.Equal(got, []string{"changed", "b", "c"}) {
		t.Fatalf("store sees %v", got)
	}
	if again := s.Mutable([]byte("l"), 0); again != second {
		t.Fatal("a second Mutable in the same generation should not copy again")
	}
}

func TestMutableHidesExpired(t *testing.T) {
	s := New()
	s.Put([]byte("l"), &Object{Type: TypeList, Coll: &testColl{items: []string{"a"}}, ExpireAt: 100})
	if s.Mutable([]byte("l"), 100) != nil {
		t.Fatal("Mutable returned a key expired at now")
	}
	if s.Mutable([]byte("missing"), 0) != nil {
		t.Fatal("Mutable returned a missing key")
	}
	if s.Mutable([]byte("l"), 99) == nil {
		t.Fatal("Mutable hid a live key")
	}
}
