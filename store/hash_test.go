package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// hashDump renders a hash's fields and values in element order.
func hashDump(h *Hash) string {
	var b strings.Builder
	h.Ascend(func(f, v []byte) bool {
		fmt.Fprintf(&b, "%q=%q ", f, v)
		return true
	})
	return fmt.Sprintf("%s[%s]", h.Encoding(), b.String())
}

func TestHashBasics(t *testing.T) {
	h := NewHash(nil)
	if !h.Set([]byte("a"), []byte("1")) || h.Set([]byte("a"), []byte("2")) {
		t.Fatal("Set's added flag is wrong")
	}
	h.Set([]byte(""), []byte(""))
	if v, ok := h.Get([]byte("a")); !ok || string(v) != "2" {
		t.Fatalf("Get a = %q %v", v, ok)
	}
	if v, ok := h.Get([]byte("")); !ok || v == nil || len(v) != 0 {
		t.Fatalf("empty field: %q %v", v, ok)
	}
	if _, ok := h.Get([]byte("zz")); ok || h.Has([]byte("zz")) {
		t.Fatal("missing field found")
	}
	if h.Len() != 2 {
		t.Fatal(h.Len())
	}
	seen := map[string]bool{}
	for i := range h.Len() {
		f, _ := h.At(i)
		seen[string(f)] = true
	}
	if len(seen) != 2 {
		t.Fatalf("At visits %v", seen)
	}
	if !h.Delete([]byte("a")) || h.Delete([]byte("a")) || h.Len() != 1 {
		t.Fatal("Delete")
	}
}

func TestHashOwnsItsBytes(t *testing.T) {
	h := NewHash(nil)
	f, v := []byte("field"), []byte("value")
	h.Set(f, v)
	f[0], v[0] = 'X', 'X'
	if got, ok := h.Get([]byte("field")); !ok || string(got) != "value" {
		t.Fatalf("hash aliases its arguments: %q %v", got, ok)
	}
}

func TestHashEncoding(t *testing.T) {
	// Redis 7.2's defaults (512 entries, 64 bytes) and a store configured
	// with redis.conf's 128 entries and 10-byte values.
	small := DefaultLimits()
	small.HashEntries, small.HashValue = 128, 10
	fields := func(n int) func(h *Hash) {
		return func(h *Hash) {
			for i := range n {
				h.Set(fmt.Appendf(nil, "f%d", i), nil)
			}
		}
	}
	cases := []struct {
		name string
		lim  *Limits
		fill func(h *Hash)
		want string
	}{
		{"small", nil, func(h *Hash) { h.Set([]byte("f"), []byte("v")) }, "listpack"},
		{"512 fields", nil, fields(512), "listpack"},
		{"513 fields", nil, fields(513), "hashtable"},
		{"128 fields, limit 128", &small, fields(128), "listpack"},
		{"129 fields, limit 128", &small, fields(129), "hashtable"},
		{"64-byte value", nil, func(h *Hash) { h.Set([]byte("f"), bytes.Repeat([]byte("x"), 64)) }, "listpack"},
		{"65-byte value", nil, func(h *Hash) { h.Set([]byte("f"), bytes.Repeat([]byte("x"), 65)) }, "hashtable"},
		{"11-byte value, limit 10", &small, func(h *Hash) { h.Set([]byte("f"), bytes.Repeat([]byte("x"), 11)) }, "hashtable"},
		{"65-byte field", nil, func(h *Hash) { h.Set(bytes.Repeat([]byte("x"), 65), nil) }, "hashtable"},
		{"never back", nil, func(h *Hash) {
			h.Set([]byte("f"), bytes.Repeat([]byte("x"), 65))
			h.Set([]byte("f"), nil)
		}, "hashtable"},
		{"prepare many pairs", nil, func(h *Hash) { h.Prepare(513, 1); h.Set([]byte("f"), nil) }, "hashtable"},
		{"prepare long arg", nil, func(h *Hash) { h.Prepare(1, 65) }, "hashtable"},
	}
	for _, tc := range cases {
		h := NewHash(tc.lim)
		tc.fill(h)
		if got := h.Encoding(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestStoreLimits: a collection follows the limits of the store it is put
// in or changed in, from its next change on.
func TestStoreLimits(t *testing.T) {
	s := New()
	h := NewHash(nil)
	s.Put([]byte("h"), &Object{Type: TypeHash, Coll: h})
	lim := DefaultLimits()
	lim.HashEntries = 2
	s.SetLimits(lim)
	o := s.Mutable([]byte("h"), 0)
	hh := o.Coll.(*Hash)
	hh.Set([]byte("a"), nil)
	hh.Set([]byte("b"), nil)
	if hh.Encoding() != "listpack" {
		t.Fatalf("2 fields under a limit of 2: %s", hh.Encoding())
	}
	hh.Set([]byte("c"), nil)
	if hh.Encoding() != "hashtable" {
		t.Fatalf("3 fields under a limit of 2: %s", hh.Encoding())
	}
}

func TestHashCloneIndependent(t *testing.T) {
	h := NewHash(nil)
	for i := range 1000 {
		h.Set(fmt.Appendf(nil, "f%d", i), fmt.Appendf(nil, "v%d", i))
	}
	before := hashDump(h)
	c := h.Clone().(*Hash)
	for i := range 500 {
		c.Set(fmt.Appendf(nil, "f%d", i), []byte("changed"))
		c.Delete(fmt.Appendf(nil, "f%d", 500+i))
		c.Set(fmt.Appendf(nil, "new%d", i), nil)
	}
	if hashDump(h) != before {
		t.Fatal("changing the clone changed the original")
	}
	cloned := hashDump(c)
	h.Set([]byte("f1"), []byte("orig"))
	h.Delete([]byte("f2"))
	if hashDump(c) != cloned {
		t.Fatal("changing the original changed the clone")
	}
}

// A View persisted by another goroutine keeps its point in time while Apply
// goes on changing the same hash (run with -race).
func TestHashSnapshotWhileMutating(t *testing.T) {
	s := New()
	h := NewHash(nil)
	for i := range 20000 {
		h.Set(fmt.Appendf(nil, "f%d", i), []byte("v"))
	}
	key := []byte("h")
	s.Put(key, &Object{Type: TypeHash, Coll: h})
	want := hashDump(h)
	view := s.Snapshot()
	var buf bytes.Buffer
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() { _, werr = view.WriteTo(&buf) })
	for i := range 20000 {
		o := s.Mutable(key, 0)
		hh := o.Coll.(*Hash)
		hh.Set(fmt.Appendf(nil, "f%d", i), []byte("new"))
		hh.Delete(fmt.Appendf(nil, "f%d", 19999-i))
		if i%1000 == 0 {
			_ = s.Snapshot() // new generations: Mutable clones again
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
	if got := hashDump(r.Get(key, 0).Coll.(*Hash)); got != want {
		t.Fatal("the persisted View does not hold the hash as it was at Snapshot")
	}
}

func roundTripColl(t testing.TB, typ Type, c Collection) Collection {
	t.Helper()
	s := New()
	s.Put([]byte("k"), &Object{Type: typ, Coll: c, Version: 3, Touched: 4})
	r := New()
	if err := r.Restore(bytes.NewReader(snapshotBytes(t, s))); err != nil {
		t.Fatal(err)
	}
	return r.Get([]byte("k"), 0).Coll
}

func TestHashCodecRoundTrip(t *testing.T) {
	for _, n := range []int{1, 5, 200} {
		h := NewHash(nil)
		for i := range n {
			h.Set(fmt.Appendf(nil, "f%d", i), bytes.Repeat([]byte{byte(i)}, i%70))
		}
		if got := roundTripColl(t, TypeHash, h).(*Hash); hashDump(got) != hashDump(h) {
			t.Fatalf("%d fields: round trip differs", n)
		}
	}
}

// collRec builds a record of a collection type with a hand-made value.
func collRec(tag Type, key string, value []byte) []byte {
	b := []byte{byte(tag)}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendVarint(b, 0)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendVarint(b, 2)
	return append(b, value...)
}

// elems encodes an encoding byte, a count and length-prefixed strings.
func elems(enc byte, count uint64, ss ...string) []byte {
	b := []byte{enc}
	b = binary.AppendUvarint(b, count)
	for _, s := range ss {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

func TestHashDecodeCorrupt(t *testing.T) {
	cases := map[string][]byte{
		"empty hash":      elems(0, 0),
		"bad encoding":    elems(2, 1, "f", "v"),
		"duplicate field": elems(0, 2, "f", "v", "f", "w"),
		"count too big":   elems(0, 3, "f", "v"),
		"huge count":      elems(0, 1<<62, "f", "v"),
		"missing value":   elems(0, 1, "f"),
	}
	for name, val := range cases {
		err := New().Restore(bytes.NewReader(stream(1, 1, collRec(TypeHash, "k", val))))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if err := New().Restore(bytes.NewReader(stream(1, 1, collRec(TypeHash, "k", elems(1, 1, "f", "v"))))); err != nil {
		t.Fatal(err)
	}
}

func FuzzHashDecode(f *testing.F) {
	f.Add(elems(0, 1, "f", "v"))
	f.Add(elems(1, 2, "a", "1", "b", ""))
	f.Add(elems(0, 2, "f", "v", "f", "w"))
	f.Fuzz(func(t *testing.T, val []byte) {
		st := New()
		err := st.Restore(bytes.NewReader(stream(1, 1, collRec(TypeHash, "k", val))))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			return
		}
		h := st.Get([]byte("k"), 0).Coll.(*Hash)
		if got := roundTripColl(t, TypeHash, h).(*Hash); hashDump(got) != hashDump(h) {
			t.Fatal("accepted input does not round-trip")
		}
	})
}

// scanItems returns every item present for the whole scan at least once and
// never splits a run of equal hashes.
func TestScanItemsEqualHashes(t *testing.T) {
	tr := newItemTree()
	for i := range 30 {
		tr.Set(item{h: uint64(i / 10), k: fmt.Appendf(nil, "%02d", i)}) // 3 runs of 10
	}
	var got []string
	next := scanItems(tr, 0, 3, func(it item) { got = append(got, string(it.k)) })
	if len(got) != 10 || next != 1 {
		t.Fatalf("first call got %d items, next %d", len(got), next)
	}
	next = scanItems(tr, next, 15, func(it item) { got = append(got, string(it.k)) })
	if len(got) != 30 || next != 0 {
		t.Fatalf("second call: %d items, next %d", len(got), next)
	}
	if n := scanItems(tr, 1<<63, 10, func(item) { t.Fatal("visited past the end") }); n != 0 {
		t.Fatal(n)
	}
}

func TestHashMillion(t *testing.T) {
	if testing.Short() {
		t.Skip("1M fields")
	}
	h := NewHash(nil)
	n := millionN()
	for i := range n {
		h.Set(fmt.Appendf(nil, "field:%d", i), fmt.Appendf(nil, "%d", i))
	}
	if h.Len() != n || h.Encoding() != "hashtable" {
		t.Fatal(h.Len(), h.Encoding())
	}
	c := h.Clone().(*Hash)
	c.Delete([]byte("field:7"))
	if !h.Has([]byte("field:7")) || c.Has([]byte("field:7")) {
		t.Fatal("clone of a 1M hash not independent")
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		if f, v := h.At(r.IntN(n)); len(f) == 0 || len(v) == 0 {
			t.Fatal("At")
		}
	}
	if got := roundTripColl(t, TypeHash, h).(*Hash); got.Len() != n {
		t.Fatal(got.Len())
	}
	fields := 0
	for cur := uint64(0); ; {
		cur = h.Scan(cur, 1000, func(_, _ []byte) { fields++ })
		if cur == 0 {
			break
		}
	}
	if fields != n {
		t.Fatalf("scan saw %d fields", fields)
	}
}

func BenchmarkHashSet(b *testing.B) {
	h := NewHash(nil)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "field:%d", i)
	}
	b.ResetTimer()
	for i := range b.N {
		h.Set(keys[i&(len(keys)-1)], keys[i&(len(keys)-1)])
	}
}

func BenchmarkHashGet(b *testing.B) {
	h := NewHash(nil)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "field:%d", i)
		h.Set(keys[i], keys[i])
	}
	b.ResetTimer()
	for i := range b.N {
		h.Get(keys[i&(len(keys)-1)])
	}
}
