package store

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"runtime"
	"strings"
	"testing"
)

func fill(s *Store, n int) {
	for i := range n {
		o := &Object{
			Type:    TypeString,
			Str:     bytes.Repeat([]byte{byte(i)}, i%40),
			Version: uint64(i) * 7,
			Touched: int64(i) - 5,
		}
		if i%4 == 0 {
			o.ExpireAt = int64(1000 + i%97)
		}
		s.Put([]byte(fmt.Sprintf("key:%d", i)), o)
	}
}

// restoredCopy is a Store restored from a snapshot of s.
func restoredCopy(t testing.TB, s *Store) *Store {
	t.Helper()
	r := New()
	if err := r.Restore(bytes.NewReader(snapshotBytes(t, s))); err != nil {
		t.Fatal(err)
	}
	return r
}

func snapshotBytes(t testing.TB, s *Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Snapshot().WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

func TestRoundTrip(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 10000
	}
	src := New()
	fill(src, n)
	src.Put([]byte{}, str("", 0)) // empty key and value
	data := snapshotBytes(t, src)

	dst := New()
	dst.Put([]byte("old"), str("replaced by Restore", 5))
	if err := dst.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if contents(dst) != contents(src) {
		t.Fatal("restored contents differ")
	}
	if dst.GetRaw([]byte("old")) != nil {
		t.Fatal("Restore kept a key from before")
	}
	if o := dst.Get([]byte{}, 0); o == nil || o.Str == nil {
		t.Fatalf("empty value restored as %#v", o)
	}
	for sl := range uint16(slotCount) {
		if dst.CountInSlot(sl) != src.CountInSlot(sl) {
			t.Fatalf("slot %d: count %d, want %d", sl, dst.CountInSlot(sl), src.CountInSlot(sl))
		}
	}
	got, want := dst.Expired(1050, n), src.Expired(1050, n)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(want) == 0 {
		t.Fatalf("expiry index differs: %d keys, want %d", len(got), len(want))
	}
}

func TestRestoreReadsExactly(t *testing.T) {
	s := New()
	fill(s, 100)
	data := append(snapshotBytes(t, s), "trailing"...)
	br := bufio.NewReader(bytes.NewReader(data))
	if err := New().Restore(br); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "trailing" {
		t.Fatalf("after Restore the reader holds %q", rest)
	}
}

// stream builds a snapshot by hand, with a valid checksum.
func stream(version uint16, count uint64, records ...[]byte) []byte {
	b := []byte(snapshotMagic)
	b = binary.BigEndian.AppendUint16(b, version)
	b = binary.AppendUvarint(b, count)
	for _, r := range records {
		b = append(b, r...)
	}
	b = append(b, endMarker)
	return binary.BigEndian.AppendUint64(b, crc64.Checksum(b, crcTable))
}

func rec(tag byte, key, val string) []byte {
	b := []byte{tag}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.AppendVarint(b, 0)
	b = binary.AppendUvarint(b, 1)
	b = binary.AppendVarint(b, 2)
	b = binary.AppendUvarint(b, uint64(len(val)))
	return append(b, val...)
}

func TestRestoreCorrupt(t *testing.T) {
	good := stream(1, 2, rec(1, "a", "x"), rec(1, "b", "y"))
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	hugeKey := append([]byte(snapshotMagic), 0, 1, 1, 1)
	hugeKey = binary.AppendUvarint(hugeKey, 1<<40)
	bigButShort := append([]byte(snapshotMagic), 0, 1, 1, 1)
	bigButShort = binary.AppendUvarint(bigButShort, maxLen)
	bigButShort = append(bigButShort, "only a few bytes"...)
	overflow := append([]byte(snapshotMagic), 0, 1)
	overflow = append(overflow, bytes.Repeat([]byte{0xff}, 11)...)

	tests := []struct {
		name    string
		in      []byte
		is      error
		message string
	}{
		{"empty", nil, ErrCorrupt, "restore: header: corrupt snapshot: truncated"},
		{"bad magic", append([]byte("SLOTRAFX"), good[8:]...), ErrCorrupt, "bad magic"},
		{"version 0", stream(0, 0), ErrCorrupt, "format version 0"},
		{"future version", stream(2, 0), ErrUnsupported, "format version 2"},
		{"bad checksum", flip(len(good) - 1), ErrCorrupt, "checksum"},
		{"flipped value byte", flip(len(good) - 10), ErrCorrupt, "checksum"},
		{"truncated before checksum", good[:len(good)-3], ErrCorrupt, "restore: trailer"},
		{"truncated record", good[:16], ErrCorrupt, "restore: record 0: key \"a\""},
		{"huge key length", hugeKey, ErrCorrupt, "key length 1099511627776 exceeds"},
		{"large length, short input", bigButShort, ErrCorrupt, "truncated"},
		{"varint overflow", overflow, ErrCorrupt, "overflows"},
		{"fewer records than announced", stream(1, 3, rec(1, "a", "x")), ErrCorrupt, "1 records, 3 announced"},
		{"more records than announced", stream(1, 1, rec(1, "a", "x"), rec(1, "b", "x")), ErrCorrupt, "restore: record 1:"},
		{"duplicate key", stream(1, 2, rec(1, "a", "x"), rec(1, "a", "y")), ErrCorrupt, "record 1: corrupt snapshot: duplicate key"},
		{"type none", stream(1, 1, rec(0, "a", "x")), ErrCorrupt, "value type none"},
		{"unknown type", stream(1, 1, rec(9, "a", "x")), ErrUnsupported, "unknown value type 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			s.Put([]byte("keep"), str("me", 0))
			err := s.Restore(bytes.NewReader(tt.in))
			if err == nil {
				t.Fatal("Restore accepted corrupt input")
			}
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("error %q, want %v containing %q", err, tt.is, tt.message)
			}
			if s.Len() != 1 || s.GetRaw([]byte("keep")) == nil {
				t.Fatal("failed Restore changed the store")
			}
		})
	}
	if err := New().Restore(bytes.NewReader(good)); err != nil {
		t.Fatalf("the uncorrupted input fails: %v", err)
	}
}

func TestRestoreEveryTruncation(t *testing.T) {
	s := New()
	fill(s, 20)
	data := snapshotBytes(t, s)
	for i := range len(data) {
		if err := New().Restore(bytes.NewReader(data[:i])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d/%d bytes: %v", i, len(data), err)
		}
	}
}

func TestRestoreLyingLengthAllocatesLittle(t *testing.T) {
	in := append([]byte(snapshotMagic), 0, 1, 1, 1)
	in = binary.AppendUvarint(in, maxLen)
	in = append(in, make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := New().Restore(bytes.NewReader(in)); err == nil {
		t.Fatal("accepted")
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Fatalf("a 512 MB length on a short input allocated %d bytes", d)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestRestoreReadError(t *testing.T) {
	err := New().Restore(errReader{})
	if !errors.Is(err, io.ErrClosedPipe) || errors.Is(err, ErrCorrupt) {
		t.Fatalf("read error reported as %v", err)
	}
}

func FuzzRestore(f *testing.F) {
	s := New()
	fill(s, 5)
	f.Add(snapshotBytes(f, s))
	f.Add(stream(1, 2, rec(1, "a", "x"), rec(1, "b", "y")))
	f.Add(stream(1, 0))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		st := New()
		if err := st.Restore(bytes.NewReader(data)); err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error wraps neither ErrCorrupt nor ErrUnsupported: %v", err)
			}
			if st.Len() != 0 {
				t.Fatal("failed Restore changed the store")
			}
			return
		}
		// Accepted input round-trips.
		again := New()
		if err := again.Restore(bytes.NewReader(snapshotBytes(t, st))); err != nil {
			t.Fatal(err)
		}
		if contents(again) != contents(st) {
			t.Fatal("round trip of accepted input differs")
		}
	})
}

func BenchmarkPut(b *testing.B) {
	s := New()
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%d", i))
	}
	o := str("value", 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Put(keys[i&(len(keys)-1)], o)
	}
}

func BenchmarkGet(b *testing.B) {
	s := New()
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%d", i))
		s.Put(keys[i], str("value", 0))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if s.Get(keys[i&(len(keys)-1)], 0) == nil {
			b.Fatal("missing")
		}
	}
}

func BenchmarkSnapshotWriteTo1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1M keys: skipped in -short")
	}
	s := New()
	for i := range 1 << 20 {
		s.Put([]byte(fmt.Sprintf("key:%d", i)), str("some value", 0))
	}
	b.ReportAllocs()
	for b.Loop() {
		n, err := s.Snapshot().WriteTo(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(n)
	}
}

func BenchmarkRestore1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1M keys: skipped in -short")
	}
	s := New()
	for i := range 1 << 20 {
		s.Put([]byte(fmt.Sprintf("key:%d", i)), str("some value", 0))
	}
	var buf bytes.Buffer
	if _, err := s.Snapshot().WriteTo(&buf); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		if err := New().Restore(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}
