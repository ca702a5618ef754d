package store

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// zmodel is the obvious sorted set: a map and a sort on every question.
type zmodel map[string]float64

func (m zmodel) sorted() []zitem {
	out := make([]zitem, 0, len(m))
	for k, v := range m {
		out = append(out, zitem{score: v, member: k})
	}
	sort.Slice(out, func(i, j int) bool { return zless(out[i], out[j]) })
	return out
}

func zsetItems(z *ZSet) []zitem {
	var out []zitem
	z.Ascend(0, func(m string, s float64) bool {
		out = append(out, zitem{score: s, member: m})
		return true
	})
	return out
}

// zcheck verifies every node's count and order, and that the index agrees.
func zcheck(t *testing.T, z *ZSet) {
	t.Helper()
	var walk func(n *znode, depth int) (int, int)
	leafDepth := -1
	walk = func(n *znode, depth int) (int, int) {
		cnt := len(n.items)
		if n.leaf() {
			if leafDepth == -1 {
				leafDepth = depth
			} else if leafDepth != depth {
				t.Fatalf("leaves at depths %d and %d", leafDepth, depth)
			}
		} else {
			if len(n.children) != len(n.items)+1 {
				t.Fatalf("node with %d items has %d children", len(n.items), len(n.children))
			}
			for _, c := range n.children {
				c2, _ := walk(c, depth+1)
				cnt += c2
			}
		}
		if cnt != n.count {
			t.Fatalf("node count %d, counted %d", n.count, cnt)
		}
		return cnt, depth
	}
	if z.tree.root != nil {
		walk(z.tree.root, 0)
	}
	items := zsetItems(z)
	if !slices.IsSortedFunc(items, func(a, b zitem) int {
		if zless(a, b) {
			return -1
		}
		return 1
	}) {
		t.Fatal("items out of order")
	}
	if z.index.Len() != len(items) {
		t.Fatalf("index has %d members, tree %d", z.index.Len(), len(items))
	}
}

func TestZSetRandomAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	z := NewZSet(nil)
	m := zmodel{}
	ops := 30000
	if testing.Short() {
		ops = 8000
	}
	for i := range ops {
		mem := fmt.Sprintf("m%d", r.IntN(600))
		switch op := r.IntN(10); {
		case op < 5:
			s := float64(r.IntN(50)) // many ties
			_, had := m[mem]
			if z.Add([]byte(mem), s) == had {
				t.Fatalf("op %d: Add(%s) new=%v, model had=%v", i, mem, !had, had)
			}
			m[mem] = s
		case op < 8:
			_, had := m[mem]
			if z.Remove([]byte(mem)) != had {
				t.Fatalf("op %d: Remove(%s) mismatch", i, mem)
			}
			delete(m, mem)
		case op < 9 && len(m) > 0:
			a, b := r.IntN(len(m)+2)-1, r.IntN(len(m)+2)-1
			want := m.sorted()
			lo, hi := max(min(a, b), 0), min(max(a, b), len(want))
			got := z.RemoveRange(lo, hi)
			if lo < hi && got != hi-lo || lo >= hi && got != 0 {
				t.Fatalf("RemoveRange(%d,%d) = %d", lo, hi, got)
			}
			for _, it := range want[lo:max(hi, lo)] {
				delete(m, it.member)
			}
		default:
			want := m.sorted()
			if z.Len() != len(want) {
				t.Fatalf("op %d: Len %d, want %d", i, z.Len(), len(want))
			}
			for k, it := range want {
				if rank, s, ok := z.Rank([]byte(it.member)); !ok || rank != k || s != it.score {
					t.Fatalf("op %d: Rank(%s) = %d %v %v, want %d", i, it.member, rank, s, ok, k)
				}
				if mem, s := z.At(k); mem != it.member || s != it.score {
					t.Fatalf("op %d: At(%d) = %s", i, k, mem)
				}
			}
			if len(want) > 0 {
				k := r.IntN(len(want))
				var got []zitem
				z.Descend(k, func(m string, s float64) bool {
					got = append(got, zitem{s, m})
					return len(got) < 7
				})
				for j, it := range got {
					if it != want[k-j] {
						t.Fatalf("Descend(%d)[%d] = %v, want %v", k, j, it, want[k-j])
					}
				}
				got = got[:0]
				z.Ascend(k, func(m string, s float64) bool {
					got = append(got, zitem{s, m})
					return len(got) < 7
				})
				for j, it := range got {
					if it != want[k+j] {
						t.Fatalf("Ascend(%d)[%d] = %v", k, j, it)
					}
				}
				s := float64(r.IntN(50))
				below := 0
				for _, it := range want {
					if it.score < s {
						below++
					}
				}
				if got := z.CountScoreBelow(s, false); got != below {
					t.Fatalf("CountScoreBelow(%v) = %d, want %d", s, got, below)
				}
			}
			zcheck(t, z)
		}
	}
	zcheck(t, z)
	if !slices.Equal(zsetItems(z), m.sorted()) {
		t.Fatal("final contents differ from the model")
	}
}

func TestZSetTiesOrderByMember(t *testing.T) {
	z := NewZSet(nil)
	for _, m := range []string{"c", "a", "b", "aa", ""} {
		z.Add([]byte(m), 1)
	}
	z.Add([]byte("z"), math.Inf(-1))
	z.Add([]byte("y"), math.Inf(1))
	var got []string
	z.Ascend(0, func(m string, _ float64) bool { got = append(got, m); return true })
	if want := []string{"z", "", "a", "aa", "b", "c", "y"}; !slices.Equal(got, want) {
		t.Fatalf("order %q, want %q", got, want)
	}
}

func TestZSetEncoding(t *testing.T) {
	z := NewZSet(nil)
	for i := range int(DefaultLimits().ZSetEntries) {
		z.Add([]byte(fmt.Sprint(i)), 1)
	}
	if z.Encoding() != "listpack" {
		t.Fatal("128 members should be a listpack")
	}
	z.Add([]byte("0"), 5) // an update converts nothing
	z.Add([]byte("x"), 1)
	if z.Encoding() != "skiplist" {
		t.Fatal("129 members should be a skiplist")
	}
	z.RemoveRange(0, 100)
	if z.Encoding() != "skiplist" {
		t.Fatal("shrinking converted back")
	}
	z.FitEncoding(nil)
	if z.Encoding() != "listpack" {
		t.Fatal("FitEncoding kept a skiplist for a small set")
	}
	y := NewZSet(nil)
	y.Add([]byte(strings.Repeat("a", 64)), 1)
	if y.Encoding() != "listpack" {
		t.Fatal("a 64-byte member fits a listpack")
	}
	y.Add([]byte(strings.Repeat("a", 65)), 1)
	if y.Encoding() != "skiplist" {
		t.Fatal("a 65-byte member needs a skiplist")
	}
	if NewZSetHint(nil, 129, 1).Encoding() != "skiplist" || NewZSetHint(nil, 3, 65).Encoding() != "skiplist" ||
		NewZSetHint(nil, 128, 64).Encoding() != "listpack" {
		t.Fatal("NewZSetHint")
	}
}

func TestZSetCloneIndependent(t *testing.T) {
	z := NewZSet(nil)
	for i := range 5000 {
		z.Add([]byte(fmt.Sprint(i)), float64(i%100))
	}
	before := zsetItems(z)
	c := z.Clone().(*ZSet)
	for i := range 2500 {
		c.Remove([]byte(fmt.Sprint(i * 2)))
		c.Add([]byte(fmt.Sprint("n", i)), -1)
	}
	if !slices.Equal(zsetItems(z), before) {
		t.Fatal("changing the clone changed the original")
	}
	z.Add([]byte("orig-only"), 7)
	if _, ok := c.Score([]byte("orig-only")); ok {
		t.Fatal("changing the original changed the clone")
	}
	zcheck(t, z)
	zcheck(t, c)
}

// TestZSetSnapshotWhileMutating persists a View in a goroutine while the
// store's sorted set is changed through Mutable (run with -race).
func TestZSetSnapshotWhileMutating(t *testing.T) {
	s := New()
	key := []byte("z")
	z := NewZSet(nil)
	for i := range 20000 {
		z.Add([]byte(fmt.Sprint(i)), float64(i))
	}
	s.Put(key, &Object{Type: TypeZSet, Coll: z})
	want := zsetItems(z)
	view := s.Snapshot()
	var wg sync.WaitGroup
	var buf bytes.Buffer
	wg.Go(func() {
		if _, err := view.WriteTo(&buf); err != nil {
			t.Error(err)
		}
	})
	for i := range 20000 {
		o := s.Mutable(key, 0)
		zz := o.Coll.(*ZSet)
		zz.Remove([]byte(fmt.Sprint(i)))
		zz.Add([]byte(fmt.Sprint("x", i)), -float64(i))
		if i%5000 == 0 {
			s.Snapshot() // new generations: later writes copy again
		}
	}
	wg.Wait()
	restored := New()
	if err := restored.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if got := zsetItems(restored.Get(key, 0).Coll.(*ZSet)); !slices.Equal(got, want) {
		t.Fatal("the view did not keep its point in time")
	}
}

func TestZSetCodecRoundTrip(t *testing.T) {
	s := New()
	z := NewZSet(nil)
	for _, sc := range []float64{math.Inf(-1), -0.5, 0, 1e300, math.Inf(1), math.SmallestNonzeroFloat64} {
		z.Add([]byte(fmt.Sprint("m", sc)), sc)
	}
	z.Add([]byte(""), 3)
	s.Put([]byte("a"), &Object{Type: TypeZSet, Coll: z})
	big := NewZSet(nil)
	for i := range 300 {
		big.Add([]byte(fmt.Sprint(i)), float64(i)/3)
	}
	big.RemoveRange(0, 290) // stays a skiplist
	s.Put([]byte("b"), &Object{Type: TypeZSet, Coll: big, ExpireAt: 99})
	r := restoredCopy(t, s)
	for k, orig := range map[string]*ZSet{"a": z, "b": big} {
		got := r.Get([]byte(k), 0).Coll.(*ZSet)
		if !slices.Equal(zsetItems(got), zsetItems(orig)) || got.Encoding() != orig.Encoding() {
			t.Fatalf("%s: restored %v %s", k, zsetItems(got), got.Encoding())
		}
	}
}

func zsetRecord(z *ZSet) []byte {
	var buf bytes.Buffer
	e := &encoder{bw: bufio.NewWriter(&buf)}
	encodeZSet(e, z)
	e.bw.Flush()
	return buf.Bytes()
}

func FuzzZSetDecode(f *testing.F) {
	z := NewZSet(nil)
	z.Add([]byte("a"), 1)
	z.Add([]byte("b"), math.Inf(1))
	f.Add(zsetRecord(z))
	f.Add([]byte{0, 2, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		d := &decoder{br: bufio.NewReader(bytes.NewReader(data))}
		c, err := decodeZSet(d)
		if err != nil {
			return
		}
		got := c.(*ZSet)
		zcheck(t, got)
		again, err := decodeZSet(&decoder{br: bufio.NewReader(bytes.NewReader(zsetRecord(got)))})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(zsetItems(again.(*ZSet)), zsetItems(got)) {
			t.Fatal("re-encoding changed the set")
		}
	})
}

func TestZSetMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("1M members")
	}
	n := millionN()
	z := NewZSet(nil)
	for i := range n {
		z.Add([]byte(fmt.Sprintf("member:%07d", i)), float64(i%1000))
	}
	if z.Len() != n {
		t.Fatal(z.Len())
	}
	c := z.Clone().(*ZSet)
	c.Remove([]byte("member:0000000"))
	if r, _, _ := z.Rank(fmt.Appendf(nil, "member:%07d", n-1)); r != n-1 {
		t.Fatalf("rank %d", r)
	}
	if got := z.CountScoreBelow(500, false); got != n/2 {
		t.Fatalf("CountScoreBelow = %d", got)
	}
	s := New()
	s.Put([]byte("z"), &Object{Type: TypeZSet, Coll: z})
	r := restoredCopy(t, s)
	if r.Get([]byte("z"), 0).Coll.Len() != n {
		t.Fatal("restore lost members")
	}
}

func BenchmarkZSetAdd(b *testing.B) {
	z := NewZSet(nil)
	mem := make([][]byte, 1<<20)
	for i := range mem {
		mem[i] = []byte(fmt.Sprintf("member:%d", i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		z.Add(mem[i&(1<<20-1)], float64(i))
	}
}

func BenchmarkZSetRank(b *testing.B) {
	z := NewZSet(nil)
	for i := range 1_000_000 {
		z.Add([]byte(fmt.Sprint(i)), float64(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		z.Rank([]byte(fmt.Sprint(i % 1_000_000)))
	}
}

func BenchmarkZSetClone(b *testing.B) {
	z := NewZSet(nil)
	for i := range 1_000_000 {
		z.Add([]byte(fmt.Sprint(i)), float64(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := z.Clone().(*ZSet)
		c.Add([]byte("x"), float64(i)) // the first write after a clone copies one path
	}
}
