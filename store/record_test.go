package store

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"testing"
)

// recordObjects is one Object of every type, each with an expiry.
func recordObjects() map[string]*Object {
	h := NewHash(nil)
	h.Set([]byte("f"), []byte("v"))
	h.Set([]byte("g"), []byte(""))
	set := NewSet(nil, []byte("a"), 2)
	set.Add([]byte("a"))
	set.Add([]byte("b"))
	z := NewZSet(nil)
	z.Add([]byte("m"), 1.5)
	z.Add([]byte("n"), -2)
	st := NewStream()
	for i := 1; i <= 5; i++ {
		st.Add(StreamID{Ms: 10, Seq: uint64(i)}, [][]byte{[]byte("f"), []byte(strconv.Itoa(i))})
	}
	st.CreateGroup([]byte("grp"), StreamID{Ms: 10, Seq: 2}, 2)
	g := st.MutGroup([]byte("grp"))
	g.CreateConsumer([]byte("alice"), 7)
	g.SetPending(PendingEntry{ID: StreamID{Ms: 10, Seq: 1}, Consumer: "alice", DeliveryTime: 8, DeliveryCount: 2})
	return map[string]*Object{
		"string":       {Type: TypeString, Str: []byte("value"), ExpireAt: 1000, Version: 4, Touched: 5},
		"empty string": {Type: TypeString, Str: []byte{}, ExpireAt: 0},
		"list":         {Type: TypeList, Coll: NewListOf(nil, [][]byte{[]byte("x"), []byte("y")}), ExpireAt: 2000},
		"hash":         {Type: TypeHash, Coll: h, ExpireAt: 3000},
		"set":          {Type: TypeSet, Coll: set, ExpireAt: 4000},
		"zset":         {Type: TypeZSet, Coll: z, ExpireAt: 5000},
		"stream":       {Type: TypeStream, Coll: st, ExpireAt: 6000},
	}
}

func TestRecordRoundTrip(t *testing.T) {
	for name, o := range recordObjects() {
		t.Run(name, func(t *testing.T) {
			key := []byte("key:" + name)
			rec := EncodeRecord(key, o)
			if rec == nil || rec[0] != recordVersion {
				t.Fatalf("EncodeRecord = %x", rec)
			}
			gotKey, got, err := DecodeRecord(rec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotKey, key) || got.Type != o.Type || got.ExpireAt != o.ExpireAt ||
				got.Version != o.Version || got.Touched != o.Touched || !bytes.Equal(got.Str, o.Str) {
				t.Fatalf("decoded %q %+v, want %q %+v", gotKey, got, key, o)
			}
			if again := EncodeRecord(gotKey, got); !bytes.Equal(again, rec) {
				t.Fatal("the decoded object encodes differently")
			}
			for i := range rec { // the decoded key and value own their bytes
				rec[i] = 0xAA
			}
			if !bytes.Equal(gotKey, key) || !bytes.Equal(EncodeRecord(gotKey, got), EncodeRecord(key, o)) {
				t.Fatal("the decoded record aliases its input")
			}
		})
	}
}

// TestRecordStreamGroups: consumer groups, consumers and pending entries
// survive the trip.
func TestRecordStreamGroups(t *testing.T) {
	_, o, err := DecodeRecord(EncodeRecord([]byte("s"), recordObjects()["stream"]))
	if err != nil {
		t.Fatal(err)
	}
	s := o.Coll.(*Stream)
	g := s.Group([]byte("grp"))
	if s.Length() != 5 || g == nil || g.LastID != (StreamID{Ms: 10, Seq: 2}) || g.PendingLen() != 1 ||
		g.Consumer([]byte("alice")) == nil || g.Consumer([]byte("alice")).PendingLen() != 1 {
		t.Fatalf("stream decoded as length %d, group %+v", s.Length(), g)
	}
}

func TestEncodeRecordRefuses(t *testing.T) {
	for name, o := range map[string]*Object{"nil": nil, "type none": {Type: TypeNone}} {
		if rec := EncodeRecord([]byte("k"), o); rec != nil {
			t.Errorf("%s: encoded as %x", name, rec)
		}
	}
}

func TestDecodeRecordBad(t *testing.T) {
	good := EncodeRecord([]byte("k"), &Object{Type: TypeString, Str: []byte("v")})
	lying := []byte{recordVersion, byte(TypeString), 1, 'k', 0, 0, 0}
	lying = append(lying, 0x80, 0x80, 0x80, 0x80, 0x01) // a 256 MiB value…
	lying = append(lying, "short"...)                   // …of 5 bytes
	tests := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"version only", []byte{recordVersion}},
		{"future version", append([]byte{2}, good[1:]...)},
		{"type none", append([]byte{recordVersion, 0}, good[2:]...)},
		{"unknown type", append([]byte{recordVersion, 99}, good[2:]...)},
		{"trailing byte", append(bytes.Clone(good), 0)},
		{"lying length", lying},
	}
	for i := 1; i < len(good); i++ {
		tests = append(tests, struct {
			name string
			in   []byte
		}{"prefix " + strconv.Itoa(i), good[:i]})
	}
	for _, tt := range tests {
		if _, _, err := DecodeRecord(tt.in); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: err %v, want ErrBadRecord", tt.name, err)
		}
	}
}

func TestDecodeRecordLyingLengthAllocatesLittle(t *testing.T) {
	in := []byte{recordVersion, byte(TypeList), 1, 'k', 0, 0, 0, 0}
	in = append(in, 0xff, 0xff, 0xff, 0xff, 0x0f) // 4 billion elements
	in = append(in, make([]byte, 100)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := DecodeRecord(in); err == nil {
		t.Fatal("accepted")
	}
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Fatalf("a lying count on a short input allocated %d bytes", d)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, o := range recordObjects() {
		f.Add(EncodeRecord([]byte("k"), o))
	}
	f.Add([]byte{})
	f.Add([]byte{recordVersion, byte(TypeStream)})
	f.Fuzz(func(t *testing.T, data []byte) {
		key, o, err := DecodeRecord(data)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) || key != nil || o != nil {
				t.Fatalf("failure returned %q %v: %v", key, o, err)
			}
			return
		}
		// Accepted input round-trips (varints need not be minimal, so
		// compare the re-encoding with its own round trip).
		again := EncodeRecord(key, o)
		k2, o2, err := DecodeRecord(again)
		if err != nil {
			t.Fatalf("re-encoded record refused: %v", err)
		}
		if !bytes.Equal(k2, key) || !bytes.Equal(EncodeRecord(k2, o2), again) {
			t.Fatal("round trip of accepted input differs")
		}
	})
}
