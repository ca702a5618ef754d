package store

import (
	"fmt"
	"testing"
)

// TestFreeEffort: Redis 7.2's lazyfreeGetFreeEffort: one allocation for a
// string and any compact encoding, the elements of a hashtable set or hash
// and of a skiplist sorted set, a quicklist's nodes, a stream's radix tree
// nodes plus its groups and their pending entries.
func TestFreeEffort(t *testing.T) {
	members := func(n int) [][]byte {
		var out [][]byte
		for i := range n {
			out = append(out, fmt.Appendf(nil, "member-%d", i))
		}
		return out
	}
	set := func(n int) *Object {
		s := NewSet(nil, nil, n)
		for _, m := range members(n) {
			s.Add(m)
		}
		return &Object{Type: TypeSet, Coll: s}
	}
	hash := func(n int) *Object {
		h := NewHash(nil)
		for _, m := range members(n) {
			h.Set(m, m)
		}
		return &Object{Type: TypeHash, Coll: h}
	}
	zset := func(n int) *Object {
		z := NewZSet(nil)
		for i, m := range members(n) {
			z.Add(m, float64(i))
		}
		return &Object{Type: TypeZSet, Coll: z}
	}
	list := func(n int, size int) *Object {
		l := NewList()
		for range n {
			l.PushBack(make([]byte, size))
		}
		return &Object{Type: TypeList, Coll: l}
	}
	stream := func(entries, groups, pending int) *Object {
		s := NewStream()
		for i := range entries {
			s.Add(StreamID{Ms: uint64(i + 1)}, [][]byte{[]byte("f"), []byte("v")})
		}
		for g := range groups {
			name := fmt.Appendf(nil, "g%d", g)
			s.CreateGroup(name, StreamID{}, 0)
			grp := s.MutGroup(name)
			grp.CreateConsumer([]byte("c"), 0)
			for i := range pending {
				grp.SetPending(PendingEntry{ID: StreamID{Ms: uint64(i + 1)}, Consumer: "c", DeliveryCount: 1})
			}
		}
		return &Object{Type: TypeStream, Coll: s}
	}
	for _, tc := range []struct {
		name string
		o    *Object
		want int
	}{
		{"nil", nil, 0},
		{"string", &Object{Type: TypeString, Str: make([]byte, 1<<20)}, 1},
		{"listpack set", set(100), 1},
		{"hashtable set", set(200), 200},
		{"listpack hash", hash(100), 1},
		{"hashtable hash", hash(600), 600},
		{"listpack zset", zset(100), 1},
		{"skiplist zset", zset(200), 200},
		{"listpack list", list(10, 10), 1},
		{"quicklist of 8 KB nodes", list(1000, 100), 13}, // 102,000 listpack bytes in nodes of 8185
		{"stream of one node", stream(10, 0, 0), 2},      // the root and one key
		{"stream with groups", stream(10, 2, 3), 2 + 2*(1+3)},
		{"stream of many nodes", stream(10_000, 0, 0), 101}, // 100 nodes of 100 entries: a lower bound past 64
	} {
		if got := FreeEffort(tc.o); got != tc.want {
			t.Errorf("%s: effort %d, want %d", tc.name, got, tc.want)
		}
	}
}
