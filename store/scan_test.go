package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestScanCoversEveryKey(t *testing.T) {
	tests := []struct {
		name   string
		keys   int
		count  func(r *rand.Rand) int
		mutate bool
	}{
		{"empty", 0, func(*rand.Rand) int { return 10 }, false},
		{"count 1", 300, func(*rand.Rand) int { return 1 }, false},
		{"count 10 mutating", 2000, func(*rand.Rand) int { return 10 }, true},
		{"random counts mutating", 3000, func(r *rand.Rand) int { return 1 + r.IntN(100) }, true},
		{"count larger than keyspace", 50, func(*rand.Rand) int { return 1000 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tt.keys)))
			s := New()
			for i := range tt.keys {
				s.Put([]byte(fmt.Sprintf("stable:%d", i)), str("v", 0))
				s.Put([]byte(fmt.Sprintf("gone:%d", i)), str("v", 0))
			}
			seen := map[string]int{}
			cursor, calls, added := uint64(0), 0, 0
			for {
				count := tt.count(r)
				visited := 0
				next := s.Scan(cursor, count, func(k []byte, o *Object) {
					seen[string(k)]++
					visited++
				})
				if next != 0 && visited < count {
					t.Fatalf("Scan visited %d < count %d before the end", visited, count)
				}
				if next != 0 && next <= cursor {
					t.Fatalf("cursor went from %x to %x", cursor, next)
				}
				calls++
				if tt.mutate { // delete volatile keys, add new ones
					s.Delete([]byte(fmt.Sprintf("gone:%d", r.IntN(tt.keys))))
					s.Put([]byte(fmt.Sprintf("new:%d", added)), str("v", 0))
					added++
				}
				if cursor = next; cursor == 0 {
					break
				}
				if calls > 10*tt.keys+10 {
					t.Fatal("scan does not terminate")
				}
			}
			for i := range tt.keys {
				if seen[fmt.Sprintf("stable:%d", i)] == 0 {
					t.Fatalf("stable:%d never returned", i)
				}
			}
			if !tt.mutate {
				for k, n := range seen {
					if n != 1 {
						t.Fatalf("%q returned %d times without mutations", k, n)
					}
				}
				if len(seen) != s.Len() {
					t.Fatalf("saw %d keys of %d", len(seen), s.Len())
				}
			}
		})
	}
}

// putAt stores a key at a chosen cursor, to build hash collisions.
func putAt(s *Store, cur uint64, key string) {
	s.keys.Set(entry{cur: cur, r: newRecord([]byte(key), str("v", 0))})
	s.counts[CursorSlot(cur)]++
}

func TestScanFinishesRunOfEqualCursors(t *testing.T) {
	s := New()
	putAt(s, 0, "zero-a") // a key at cursor 0 can't be a resume point
	putAt(s, 0, "zero-b")
	putAt(s, 5, "a")
	putAt(s, 7, "b1")
	putAt(s, 7, "b2")
	putAt(s, 7, "b3")
	putAt(s, SlotCursor(3)|9, "c")
	tests := []struct {
		cursor uint64
		count  int
		want   []string
		next   uint64
	}{
		{0, 1, []string{"zero-a", "zero-b"}, 5},
		{5, 1, []string{"a"}, 7},
		{5, 2, []string{"a", "b1", "b2", "b3"}, SlotCursor(3) | 9},
		{7, 1, []string{"b1", "b2", "b3"}, SlotCursor(3) | 9},
		{6, 0, []string{"b1", "b2", "b3"}, SlotCursor(3) | 9},
		{SlotCursor(3), 5, []string{"c"}, 0},
		{SlotCursor(4), 5, nil, 0},
	}
	for _, tt := range tests {
		var got []string
		next := s.Scan(tt.cursor, tt.count, func(k []byte, _ *Object) { got = append(got, string(k)) })
		if fmt.Sprint(got) != fmt.Sprint(tt.want) || next != tt.next {
			t.Errorf("Scan(%x, %d) = %q, %x; want %q, %x", tt.cursor, tt.count, got, next, tt.want, tt.next)
		}
	}
}
