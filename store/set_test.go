package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func setDump(s *Set) string {
	var b strings.Builder
	s.Ascend(func(m []byte) bool {
		fmt.Fprintf(&b, "%q ", m)
		return true
	})
	return fmt.Sprintf("%s[%s]", s.Encoding(), b.String())
}

func setOf(first string, hint int, ms ...string) *Set {
	s := NewSet(nil, []byte(first), hint)
	s.Add([]byte(first))
	for _, m := range ms {
		s.Add([]byte(m))
	}
	return s
}

func TestSetBasics(t *testing.T) {
	s := setOf("a", 3, "b", "a")
	if s.Len() != 2 || !s.Has([]byte("a")) || s.Has([]byte("z")) {
		t.Fatal(setDump(s))
	}
	if s.Add([]byte("b")) || !s.Add([]byte("")) || !s.Has([]byte("")) {
		t.Fatal("Add's flag")
	}
	if !s.Remove([]byte("a")) || s.Remove([]byte("a")) || s.Len() != 2 {
		t.Fatal("Remove")
	}
	m := []byte("owned")
	s.Add(m)
	m[0] = 'X'
	if !s.Has([]byte("owned")) {
		t.Fatal("set aliases its argument")
	}
}

func TestIsInt(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-1": true, "123": true, "9223372036854775807": true, "-9223372036854775808": true,
		"9223372036854775808": false, "-9223372036854775809": false, "": false, "-": false, "-0": false,
		"01": false, "+1": false, " 1": false, "1.0": false, "99999999999999999999": false, "a": false,
	} {
		if isInt([]byte(s)) != want {
			t.Errorf("isInt(%q) = %v", s, !want)
		}
	}
}

func TestSetEncodingRules(t *testing.T) {
	ints := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i + 1)
		}
		return out
	}
	strs := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint("s", i)
		}
		return out
	}
	cases := []struct {
		name string
		s    func() *Set
		want string
	}{
		{"ints", func() *Set { return setOf("1", 2, "2") }, "intset"},
		{"512 ints", func() *Set { return setOf("0", 512, ints(511)...) }, "intset"},
		{"513 ints", func() *Set { return setOf("0", 513, ints(512)...) }, "hashtable"},
		{"513 ints added one by one", func() *Set { return setOf("0", 1, ints(512)...) }, "hashtable"},
		{"string first", func() *Set { return setOf("a", 1, "1") }, "listpack"},
		{"string into intset", func() *Set { return setOf("1", 1, "a") }, "listpack"},
		{"string into a 128-int intset", func() *Set { return setOf("0", 1, append(ints(127), "a")...) }, "hashtable"},
		{"128 strings", func() *Set { return setOf("a", 1, strs(127)...) }, "listpack"},
		{"129 strings", func() *Set { return setOf("a", 1, strs(128)...) }, "hashtable"},
		{"long member", func() *Set { return setOf("a", 1, strings.Repeat("x", 65)) }, "hashtable"},
		{"64-byte member", func() *Set { return setOf("a", 1, strings.Repeat("x", 64)) }, "listpack"},
		{"hint 129", func() *Set { return setOf("a", 129) }, "hashtable"},
		{"hint 129 ints", func() *Set { return setOf("1", 129) }, "intset"},
		{"Hint on listpack", func() *Set { s := setOf("a", 1); s.Hint(129); return s }, "hashtable"},
		{"Hint on intset", func() *Set { s := setOf("1", 1); s.Hint(513); return s }, "hashtable"},
		{"built intset", func() *Set { s := NewIntSet(nil); s.Add([]byte("1")); return s }, "intset"},
	}
	for _, tc := range cases {
		if got := tc.s().Encoding(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestSetCloneIndependent(t *testing.T) {
	s := NewSet(nil, nil, 1000)
	for i := range 1000 {
		s.Add(fmt.Appendf(nil, "m%d", i))
	}
	before := setDump(s)
	c := s.Clone().(*Set)
	for i := range 500 {
		c.Remove(fmt.Appendf(nil, "m%d", i))
		c.Add(fmt.Appendf(nil, "n%d", i))
	}
	if setDump(s) != before {
		t.Fatal("changing the clone changed the original")
	}
	cloned := setDump(c)
	s.Remove([]byte("m999"))
	s.Add([]byte("x"))
	if setDump(c) != cloned {
		t.Fatal("changing the original changed the clone")
	}
}

func TestSetSnapshotWhileMutating(t *testing.T) {
	st := New()
	s := NewSet(nil, nil, 20000)
	for i := range 20000 {
		s.Add(fmt.Appendf(nil, "m%d", i))
	}
	key := []byte("s")
	st.Put(key, &Object{Type: TypeSet, Coll: s})
	want := setDump(s)
	view := st.Snapshot()
	var buf bytes.Buffer
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { _, werr = view.WriteTo(&buf) })
	for i := range 20000 {
		ss := st.Mutable(key, 0).Coll.(*Set)
		ss.Remove(fmt.Appendf(nil, "m%d", i))
		ss.Add(fmt.Appendf(nil, "n%d", i))
		if i%1000 == 0 {
			_ = st.Snapshot()
		}
	}
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	r := New()
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got := setDump(r.Get(key, 0).Coll.(*Set)); got != want {
		t.Fatal("the persisted View does not hold the set as it was at Snapshot")
	}
}

func TestSetCodec(t *testing.T) {
	for _, s := range []*Set{setOf("1", 1, "2", "-3"), setOf("a", 1, "b", ""), setOf("a", 500, "b")} {
		if got := roundTripColl(t, TypeSet, s).(*Set); setDump(got) != setDump(s) {
			t.Fatalf("round trip of %s gave %s", setDump(s), setDump(got))
		}
	}
	cases := map[string][]byte{
		"empty set":        elems(1, 0),
		"bad encoding":     elems(3, 1, "a"),
		"duplicate":        elems(1, 2, "a", "a"),
		"string in intset": elems(0, 1, "a"),
		"count too big":    elems(1, 2, "a"),
	}
	for name, val := range cases {
		err := New().Restore(bytes.NewReader(stream(1, 1, collRec(TypeSet, "k", val))))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func FuzzSetDecode(f *testing.F) {
	f.Add(elems(0, 2, "1", "2"))
	f.Add(elems(1, 2, "a", ""))
	f.Add(elems(2, 1, "a"))
	f.Fuzz(func(t *testing.T, val []byte) {
		st := New()
		err := st.Restore(bytes.NewReader(stream(1, 1, collRec(TypeSet, "k", val))))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			return
		}
		s := st.Get([]byte("k"), 0).Coll.(*Set)
		if got := roundTripColl(t, TypeSet, s).(*Set); setDump(got) != setDump(s) {
			t.Fatal("accepted input does not round-trip")
		}
	})
}

func TestSetAtUniform(t *testing.T) {
	s := NewSet(nil, nil, 1)
	for i := range 10 {
		s.Add(fmt.Appendf(nil, "m%d", i))
	}
	r := rand.New(rand.NewPCG(5, 6))
	counts := map[string]int{}
	const rounds = 100000
	for range rounds {
		counts[string(s.At(r.IntN(s.Len())))]++
	}
	for m, n := range counts {
		if n < rounds/10*95/100 || n > rounds/10*105/100 {
			t.Errorf("%s picked %d times of %d", m, n, rounds)
		}
	}
}

func TestSetMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("1M members")
	}
	n := millionN()
	s := NewSet(nil, nil, 1)
	for i := range n {
		s.Add(fmt.Appendf(nil, "%d", i))
	}
	if s.Len() != n || s.Encoding() != "hashtable" {
		t.Fatal(s.Len(), s.Encoding())
	}
	c := s.Clone().(*Set)
	c.Remove([]byte("7"))
	if !s.Has([]byte("7")) || c.Has([]byte("7")) {
		t.Fatal("clone of a 1M set not independent")
	}
	if got := roundTripColl(t, TypeSet, s).(*Set); got.Len() != n {
		t.Fatal(got.Len())
	}
	seen := 0
	for cur := uint64(0); ; {
		if cur = s.Scan(cur, 1000, func([]byte) { seen++ }); cur == 0 {
			break
		}
	}
	if seen != n {
		t.Fatalf("scan saw %d members", seen)
	}
}

func BenchmarkSetAdd(b *testing.B) {
	s := NewSet(nil, nil, 1)
	ms := make([][]byte, 1<<16)
	for i := range ms {
		ms[i] = fmt.Appendf(nil, "member:%d", i)
	}
	b.ResetTimer()
	for i := range b.N {
		s.Add(ms[i&(len(ms)-1)])
	}
}
