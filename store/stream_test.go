package store

import (
	"strconv"
	"testing"
)

func TestStreamCloneIndependent(t *testing.T) {
	s := NewStream()
	for i := 1; i <= 300; i++ {
		s.Add(StreamID{1, uint64(i)}, [][]byte{[]byte("f"), []byte(strconv.Itoa(i))})
	}
	s.CreateGroup([]byte("g"), StreamID{}, 0)
	g := s.MutGroup([]byte("g"))
	g.CreateConsumer([]byte("c"), 1)
	g.SetPending(PendingEntry{ID: StreamID{1, 1}, Consumer: "c", DeliveryTime: 1, DeliveryCount: 1})

	c := s.Clone().(*Stream)
	// Change the clone every way.
	c.Add(StreamID{2, 0}, [][]byte{[]byte("x"), []byte("y")})
	c.Delete([]StreamID{{1, 5}})
	c.Trim(TrimArgs{MaxLen: 10})
	cg := c.MutGroup([]byte("g"))
	cg.Ack(StreamID{1, 1})
	cg.CreateConsumer([]byte("d"), 2)
	cg.MutConsumer([]byte("c")).SeenTime = 99
	cg.LastID = StreamID{9, 9}
	c.CreateGroup([]byte("h"), StreamID{}, 0)

	if s.Length() != 300 || s.Nodes() != 3 || s.NumGroups() != 1 || s.LastID != (StreamID{1, 300}) {
		t.Fatalf("original changed: len %d nodes %d groups %d last %v", s.Length(), s.Nodes(), s.NumGroups(), s.LastID)
	}
	og := s.Group([]byte("g"))
	if og.PendingLen() != 1 || og.NumConsumers() != 1 || og.Consumer([]byte("c")).SeenTime != 1 ||
		og.Consumer([]byte("c")).PendingLen() != 1 || og.LastID != (StreamID{}) {
		t.Fatal("original group changed")
	}
	if c.Length() != 10 || c.Group([]byte("g")).PendingLen() != 0 || c.Group([]byte("g")).NumConsumers() != 2 {
		t.Fatalf("clone: len %d", c.Length())
	}
	// And the other way round.
	s.MutGroup([]byte("g")).DeleteConsumer([]byte("c"))
	if c.Group([]byte("g")).Consumer([]byte("c")) == nil {
		t.Fatal("clone lost a consumer deleted from the original")
	}
}

func TestStreamIDs(t *testing.T) {
	if id, ok := (StreamID{1, 1<<64 - 1}).Incr(); !ok || id != (StreamID{2, 0}) {
		t.Fatal(id)
	}
	if _, ok := MaxStreamID.Incr(); ok {
		t.Fatal("max incremented")
	}
	if id, ok := (StreamID{2, 0}).Decr(); !ok || id != (StreamID{1, 1<<64 - 1}) {
		t.Fatal(id)
	}
	if _, ok := (StreamID{}).Decr(); ok {
		t.Fatal("0-0 decremented")
	}
	if s := (StreamID{5, 7}).String(); s != "5-7" {
		t.Fatal(s)
	}
}

// TestStreamMillion adds 1,000,000 entries (skipped with -short).
func TestStreamMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	s := NewStream()
	fv := [][]byte{[]byte("field"), []byte("value")}
	n := millionN()
	for i := 1; i <= n; i++ {
		s.Add(StreamID{uint64(i), 0}, fv)
	}
	if s.Length() != n || s.Nodes() != n/100 {
		t.Fatalf("len %d nodes %d", s.Length(), s.Nodes())
	}
	if n := s.Trim(TrimArgs{MaxLen: 1000, Approx: true, Limit: 10000}); n != 10000 {
		t.Fatalf("trimmed %d", n)
	}
}

func BenchmarkStreamAdd(b *testing.B) {
	s := NewStream()
	fv := [][]byte{[]byte("field"), []byte("value")}
	for i := 0; i < b.N; i++ {
		s.Add(StreamID{uint64(i + 1), 0}, fv)
	}
}
