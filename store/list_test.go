package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func listContents(l *List) []string {
	var out []string
	l.Walk(0, false, func(v []byte) bool {
		out = append(out, string(v))
		return true
	})
	return out
}

func listOfStrings(ss ...string) *List {
	l := NewList()
	for _, s := range ss {
		l.PushBack([]byte(s))
	}
	return l
}

// listCheck verifies l against the model and its internal invariants.
func listCheck(t *testing.T, l *List, model []string, what string) {
	t.Helper()
	if l.Len() != len(model) {
		t.Fatalf("%s: Len %d, model %d", what, l.Len(), len(model))
	}
	if got := listContents(l); !slices.Equal(got, model) {
		t.Fatalf("%s: contents\n%v\nmodel\n%v", what, got, model)
	}
	n, lp := 0, 0
	for i := range l.nch {
		k := l.chunk(i)
		if k.n() <= 0 || k.n() > listChunkMax {
			t.Fatalf("%s: chunk %d holds %d", what, i, k.n())
		}
		n += k.n()
		for _, v := range k.items() {
			lp += lpEntrySize(v)
		}
	}
	if n != l.n || lp != l.lp {
		t.Fatalf("%s: counted n=%d lp=%d, list says n=%d lp=%d", what, n, lp, l.n, l.lp)
	}
}

// listModel mirrors List operations on a plain slice.
type listModel []string

func (m listModel) norm(start, stop int) (int, int, bool) {
	n := len(m)
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

func TestListRandomOpsAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type pair struct {
		l *List
		m listModel
	}
	lists := []*pair{{NewList(), nil}}
	val := func() string {
		if rng.IntN(4) == 0 {
			return strconv.Itoa(rng.IntN(5))
		}
		return fmt.Sprintf("v%d", rng.IntN(30))
	}
	steps := 20000
	if testing.Short() {
		steps = 4000
	}
	for step := range steps {
		p := lists[rng.IntN(len(lists))]
		l, m := p.l, p.m
		idx := func() int { return rng.IntN(len(m)+6) - 3 - len(m)/2*rng.IntN(2)*2 }
		op := rng.IntN(14)
		switch op {
		case 0, 1:
			k := 1 + rng.IntN(300)
			var vs [][]byte
			for range k {
				vs = append(vs, []byte(val()))
			}
			l.PushFront(vs...)
			for _, v := range vs {
				m = append(listModel{string(v)}, m...)
			}
		case 2, 3:
			k := 1 + rng.IntN(300)
			for range k {
				v := val()
				l.PushBack([]byte(v))
				m = append(m, v)
			}
		case 4:
			k := rng.IntN(200)
			got := l.PopFront(k)
			k = min(k, len(m))
			for i, v := range got {
				if string(v) != m[i] {
					t.Fatalf("step %d PopFront: %q at %d, want %q", step, v, i, m[i])
				}
			}
			if len(got) != k {
				t.Fatalf("step %d PopFront %d: got %d", step, k, len(got))
			}
			m = m[k:]
		case 5:
			k := rng.IntN(200)
			got := l.PopBack(k)
			k = min(k, len(m))
			for i, v := range got {
				if string(v) != m[len(m)-1-i] {
					t.Fatalf("step %d PopBack: %q at %d", step, v, i)
				}
			}
			m = m[:len(m)-k]
		case 6:
			i := idx()
			v, ok := l.Index(i)
			j := i
			if j < 0 {
				j += len(m)
			}
			if wantOK := j >= 0 && j < len(m); ok != wantOK || (ok && string(v) != m[j]) {
				t.Fatalf("step %d Index(%d) = %q %v", step, i, v, ok)
			}
		case 7:
			i, v := idx(), val()
			ok := l.Set(i, []byte(v))
			j := i
			if j < 0 {
				j += len(m)
			}
			if wantOK := j >= 0 && j < len(m); ok != wantOK {
				t.Fatalf("step %d Set(%d) = %v", step, i, ok)
			}
			if ok {
				m = slices.Clone(m)
				m[j] = v
			}
		case 8:
			pivot, v, after := val(), val(), rng.IntN(2) == 0
			ok := l.Insert([]byte(pivot), []byte(v), after)
			at := slices.Index(m, pivot)
			if ok != (at >= 0) {
				t.Fatalf("step %d Insert pivot %q: %v", step, pivot, ok)
			}
			if ok {
				if after {
					at++
				}
				m = slices.Insert(slices.Clone(m), at, v)
			}
		case 9:
			count, v := rng.IntN(7)-3, val()
			got := l.Remove(count, []byte(v))
			var keep listModel
			removed := 0
			limit := count
			if limit < 0 {
				limit = -limit
			}
			if count >= 0 {
				for _, e := range m {
					if e == v && (limit == 0 || removed < limit) {
						removed++
						continue
					}
					keep = append(keep, e)
				}
			} else {
				for i := len(m) - 1; i >= 0; i-- {
					if m[i] == v && removed < limit {
						removed++
						continue
					}
					keep = append(listModel{m[i]}, keep...)
				}
			}
			if got != removed {
				t.Fatalf("step %d Remove(%d, %q) = %d, want %d", step, count, v, got, removed)
			}
			m = keep
		case 10:
			start, stop := idx(), idx()
			if rng.IntN(3) == 0 {
				start, stop = rng.IntN(5), len(m)-rng.IntN(5)
			}
			l.Trim(start, stop)
			if s, e, ok := m.norm(start, stop); ok {
				m = m[s : e+1]
			} else {
				m = nil
			}
		case 11:
			start, stop := idx(), idx()
			var got []string
			l.Range(start, stop, func(v []byte) bool { got = append(got, string(v)); return true })
			var want []string
			if s, e, ok := m.norm(start, stop); ok {
				want = m[s : e+1]
			}
			if !slices.Equal(got, want) || l.RangeLen(start, stop) != len(want) {
				t.Fatalf("step %d Range(%d,%d) = %v, want %v", step, start, stop, got, want)
			}
		case 12:
			v := val()
			rank := rng.IntN(5) - 2
			if rank == 0 {
				rank = 1
			}
			count, maxlen := rng.IntN(3), rng.IntN(2)*rng.IntN(len(m)+1)
			got := l.Pos([]byte(v), rank, count, maxlen)
			var want []int
			skip, seen := max(rank, -rank)-1, 0
			for j := range m {
				i := j
				if rank < 0 {
					i = len(m) - 1 - j
				}
				if maxlen > 0 && seen >= maxlen {
					break
				}
				seen++
				if m[i] != v {
					continue
				}
				if skip > 0 {
					skip--
					continue
				}
				want = append(want, i)
				if count > 0 && len(want) == count {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d Pos(%q, %d, %d, %d) = %v, want %v", step, v, rank, count, maxlen, got, want)
			}
		case 13:
			if len(lists) < 6 {
				c := l.Clone().(*List)
				lists = append(lists, &pair{c, slices.Clone(m)})
			} else {
				lists = slices.Delete(lists, 0, 1)
				continue
			}
		}
		p.m = m
		if step%7 == 0 || op == 13 {
			for i, q := range lists {
				listCheck(t, q.l, q.m, fmt.Sprintf("step %d op %d list %d", step, op, i))
			}
		}
	}
}

func TestListCloneIndependence(t *testing.T) {
	l := NewList()
	for i := range 1000 {
		l.PushBack([]byte(strconv.Itoa(i)))
	}
	want := listContents(l)
	c := l.Clone().(*List)
	// Change every chunk of the clone in several ways.
	c.Set(0, []byte("x"))
	c.Set(500, []byte("y"))
	c.PopFront(3)
	c.PushBack([]byte("tail"))
	c.Insert([]byte("700"), []byte("ins"), true)
	c.Remove(0, []byte("999"))
	c.Trim(1, -2)
	if got := listContents(l); !slices.Equal(got, want) {
		t.Fatal("changing the clone changed the original")
	}
	// And the original after the clone.
	cw := listContents(c)
	l.Set(10, []byte("z"))
	l.PushFront([]byte("head"))
	l.Remove(0, []byte("20"))
	l.PopBack(200)
	if got := listContents(c); !slices.Equal(got, cw) {
		t.Fatal("changing the original changed the clone")
	}
}

// TestListSnapshotWhileMutating persists a View of a big list in another
// goroutine while Apply-like code changes the list (run with -race).
func TestListSnapshotWhileMutating(t *testing.T) {
	s := New()
	l := NewList()
	for i := range 20000 {
		l.PushBack([]byte(strconv.Itoa(i)))
	}
	s.Put([]byte("l"), &Object{Type: TypeList, Coll: l})
	want := listContents(l)
	view := s.Snapshot()
	done := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		if _, err := view.WriteTo(&buf); err != nil {
			t.Error(err)
		}
		done <- buf.Bytes()
	}()
	for i := range 3000 {
		o := s.Mutable([]byte("l"), 0)
		ml := o.Coll.(*List)
		switch i % 6 {
		case 0:
			ml.PushFront([]byte("f"))
		case 1:
			ml.PopBack(3)
		case 2:
			ml.Set(i, []byte("s"))
		case 3:
			ml.Insert([]byte(strconv.Itoa(i)), []byte("i"), false)
		case 4:
			ml.Remove(1, []byte(strconv.Itoa(i*3)))
		case 5:
			ml.PushBack([]byte("b"))
		}
	}
	data := <-done
	r := New()
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got := listContents(r.Get([]byte("l"), 0).Coll.(*List)); !slices.Equal(got, want) {
		t.Fatal("the snapshot does not hold the list as it was when taken")
	}
}

func TestListEncoding(t *testing.T) {
	l := NewList()
	v := bytes.Repeat([]byte("a"), 80) // 83 bytes as a listpack entry
	for i := range 98 {
		l.PushBack(v)
		if l.Encoding() != "listpack" {
			t.Fatalf("quicklist after %d elements", i+1)
		}
	}
	l.PushBack(v) // 7 + 98*83 + 80 > 8192
	if l.Encoding() != "quicklist" {
		t.Fatal("still a listpack past 8 KB")
	}
	l.PopFront(99 - 50)
	if l.Encoding() != "quicklist" {
		t.Fatal("converted back above 4 KB")
	}
	l.PopFront(1) // 7 + 49*83 <= 4096
	if l.Encoding() != "listpack" {
		t.Fatal("not converted back under 4 KB")
	}
	if NewListOf(nil, [][]byte{[]byte("1")}).Encoding() != "listpack" {
		t.Fatal("small NewListOf")
	}
	big := NewListOf(nil, [][]byte{bytes.Repeat([]byte("x"), 9000)})
	if big.Encoding() != "quicklist" {
		t.Fatal("NewListOf of a 9 KB element")
	}
	if c := big.Clone().(*List); c.Encoding() != "quicklist" {
		t.Fatal("Clone lost the encoding")
	}
}

func TestLpEntrySize(t *testing.T) {
	tests := []struct {
		v    string
		size int
	}{
		{"0", 2}, {"127", 2}, {"128", 3}, {"-1", 3}, {"-4096", 3}, {"4095", 3}, {"4096", 4},
		{"32767", 4}, {"32768", 5}, {"8388607", 5}, {"8388608", 6}, {"2147483647", 6},
		{"2147483648", 10}, {"9223372036854775807", 10}, {"-9223372036854775808", 10},
		{"9223372036854775808", 21}, {"01", 4}, {"+1", 4}, {"-0", 4}, {"", 2}, {"a", 3},
	}
	for _, tt := range tests {
		if got := lpEntrySize([]byte(tt.v)); got != tt.size {
			t.Errorf("lpEntrySize(%q) = %d, want %d", tt.v, got, tt.size)
		}
	}
	if got := lpEntrySize(bytes.Repeat([]byte("x"), 63)); got != 65 {
		t.Errorf("63-byte string: %d", got)
	}
	if got := lpEntrySize(bytes.Repeat([]byte("x"), 64)); got != 67 { // 2+64 bytes, 1-byte back-length
		t.Errorf("64-byte string: %d", got)
	}
	if got := lpEntrySize(bytes.Repeat([]byte("x"), 200)); got != 204 {
		t.Errorf("200-byte string: %d", got)
	}
}

func TestListEdgeCases(t *testing.T) {
	l := listOfStrings("a", "b", "c")
	if v, ok := l.Index(-1); !ok || string(v) != "c" {
		t.Fatal("Index(-1)")
	}
	if _, ok := l.Index(-4); ok {
		t.Fatal("Index(-4) on 3 elements")
	}
	if _, ok := l.Index(3); ok {
		t.Fatal("Index(3) on 3 elements")
	}
	if l.Set(3, []byte("x")) || l.Set(-4, []byte("x")) {
		t.Fatal("Set out of range succeeded")
	}
	if got := l.PopFront(0); got != nil {
		t.Fatal("PopFront(0) popped")
	}
	if got := l.PopBack(10); len(got) != 3 || string(got[0]) != "c" || l.Len() != 0 {
		t.Fatalf("PopBack(10) = %q", got)
	}
	// The list owns its elements: changing the argument afterwards is invisible.
	arg := []byte("mutable")
	l.PushBack(arg)
	arg[0] = 'X'
	if v, _ := l.Index(0); string(v) != "mutable" {
		t.Fatal("PushBack kept the caller's slice")
	}
	l.PushBack(nil)
	if v, _ := l.Index(1); v == nil {
		t.Fatal("a nil element must read as empty, not nil")
	}
	l.Trim(5, 10)
	if l.Len() != 0 || l.nch != 0 {
		t.Fatal("Trim out of range did not empty the list")
	}
	if l.Remove(0, []byte("a")) != 0 || l.Pos([]byte("a"), 1, 0, 0) != nil {
		t.Fatal("empty list operations")
	}
}

func TestListCodecRoundTrip(t *testing.T) {
	s := New()
	l := NewList()
	for i := range 1000 {
		l.PushFront([]byte(strconv.Itoa(i)))
	}
	l.PushBack([]byte{})
	s.Put([]byte("l"), &Object{Type: TypeList, Coll: l, ExpireAt: 5})
	s.Put([]byte("small"), &Object{Type: TypeList, Coll: listOfStrings("x")})
	data := snapshotBytes(t, s)
	r := New()
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got := r.Get([]byte("l"), 0).Coll.(*List)
	if !slices.Equal(listContents(got), listContents(l)) || got.Encoding() != l.Encoding() {
		t.Fatal("list differs after a round trip")
	}
	if r.Get([]byte("small"), 0).Coll.(*List).Encoding() != "listpack" {
		t.Fatal("small list encoding")
	}
	// Damaged records: bad encoding byte, lying count.
	for _, bad := range [][]byte{
		listRecord(2, 1, "a"),
		listRecord(0, 5, "a"),
		listRecord(0, 0),
	} {
		if err := New().Restore(bytes.NewReader(bad)); err == nil {
			t.Fatalf("Restore accepted %q", bad)
		}
	}
	if err := New().Restore(bytes.NewReader(listRecord(1, 2, "a", "b"))); err != nil {
		t.Fatalf("a well-formed crafted record fails: %v", err)
	}
}

// listRecord builds a snapshot with one list record (encoding byte enc,
// announced count n, then elems).
func listRecord(enc byte, n uint64, elems ...string) []byte {
	b := []byte{byte(TypeList), 1, 'k'}
	b = binary.AppendVarint(b, 0)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendVarint(b, 0)
	b = append(b, enc)
	b = binary.AppendUvarint(b, n)
	for _, e := range elems {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return stream(1, 1, b)
}

func FuzzListCodec(f *testing.F) {
	f.Add(listRecord(0, 2, "a", "b"))
	f.Add(listRecord(1, 1, ""))
	f.Add(listRecord(0, 3, "a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := New()
		if err := s.Restore(bytes.NewReader(data)); err != nil {
			return
		}
		// Whatever decoded must encode and decode to the same lists.
		again := New()
		if err := again.Restore(bytes.NewReader(snapshotBytes(t, s))); err != nil {
			t.Fatalf("re-encoded snapshot fails: %v", err)
		}
		s.Ascend(func(key []byte, o *Object) bool {
			if l, ok := o.Coll.(*List); ok {
				listCheck(t, l, listContents(l), "decoded")
				got := again.GetRaw(key).Coll.(*List)
				if !slices.Equal(listContents(got), listContents(l)) {
					t.Fatal("re-decoded list differs")
				}
			}
			return true
		})
	})
}

func TestListMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("1M elements")
	}
	n := millionN()
	l := NewList()
	for i := range n {
		if i%2 == 0 {
			l.PushBack([]byte(strconv.Itoa(i)))
		} else {
			l.PushFront([]byte(strconv.Itoa(i)))
		}
	}
	if l.Len() != n || l.Encoding() != "quicklist" {
		t.Fatalf("Len %d, encoding %s", l.Len(), l.Encoding())
	}
	if v, _ := l.Index(n / 2); string(v) != "0" {
		t.Fatalf("middle element %q", v)
	}
	c := l.Clone().(*List)
	c.Set(n/2, []byte("changed"))
	if v, _ := l.Index(n / 2); string(v) != "0" {
		t.Fatal("clone shares the changed chunk")
	}
	if got := l.PopFront(n / 4); len(got) != n/4 {
		t.Fatal("PopFront")
	}
	l.Trim(10, -11)
	if l.Len() != n-n/4-20 {
		t.Fatalf("Len after Trim %d", l.Len())
	}
	if removed := c.Remove(0, []byte("changed")); removed != 1 || c.Len() != n-1 {
		t.Fatal("Remove in the middle of a big list")
	}
}

func BenchmarkListPushPop(b *testing.B) {
	l := NewList()
	v := []byte("value")
	for i := range b.N {
		l.PushFront(v)
		if i%2 == 1 {
			l.PopBack(1)
		}
	}
}

func BenchmarkListClone1M(b *testing.B) {
	l := NewList()
	for i := range 1_000_000 {
		l.PushBack([]byte(strconv.Itoa(i)))
	}
	b.ResetTimer()
	for range b.N {
		c := l.Clone().(*List)
		c.PushBack([]byte("x"))
	}
}
