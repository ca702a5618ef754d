package slots

import (
	"bytes"
	"reflect"
	"testing"
)

func TestCRC16(t *testing.T) {
	tests := []struct {
		in   string
		want uint16
	}{
		{"", 0},
		{"123456789", 0x31C3}, // the check value from Redis's crc16.c and the cluster spec
		{"a", 0x7C87},
		{"foo", 0xAF96},
	}
	for _, tt := range tests {
		if got := CRC16([]byte(tt.in)); got != tt.want {
			t.Errorf("CRC16(%q) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
}

func TestOf(t *testing.T) {
	tests := []struct {
		key  string
		want uint16
	}{
		{"foo", 12182},     // CLUSTER KEYSLOT foo
		{"somekey", 11058}, // CLUSTER KEYSLOT somekey (Redis docs)
		{"foo{hash_tag}", 2515},
		{"bar{hash_tag}", 2515},
		{"{hash_tag}", 2515},
		{"hash_tag", 2515},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"", 0},
		{"{}", 15257},           // empty tag: the whole "{}" is hashed
		{"foo{}{bar}", 8363},    // first tag empty: whole key
		{"foo{{bar}}zap", 4015}, // tag is "{bar"
		{"{bar", 4015},
		{"foo{bar}{zap}", 5061}, // only the first tag counts
		{"bar", 5061},
		{"foo{bar", CRC16([]byte("foo{bar")) % Count}, // no closing brace: whole key
		{"foo}bar{", CRC16([]byte("foo}bar{")) & 16383},
	}
	for _, tt := range tests {
		if got := Of([]byte(tt.key)); got != tt.want {
			t.Errorf("Of(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

func TestHashTag(t *testing.T) {
	tests := []struct{ key, want string }{
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"foo", "foo"},
		{"{", "{"},
		{"}{", "}{"},
		{"{a}", "a"},
	}
	for _, tt := range tests {
		if got := string(HashTag([]byte(tt.key))); got != tt.want {
			t.Errorf("HashTag(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestRangeString(t *testing.T) {
	tests := []struct {
		r    Range
		want string
	}{
		{Range{0, 5460}, "0-5460"},
		{Range{7, 7}, "7"},
		{Range{0, 16383}, "0-16383"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.r, got, tt.want)
		}
	}
	if n := (Range{10, 20}).Len(); n != 11 {
		t.Errorf("Len = %d", n)
	}
	if !(Range{10, 20}).Contains(20) || (Range{10, 20}).Contains(21) {
		t.Error("Contains is wrong at the end")
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		n    int
		want []Range
	}{
		{1, []Range{{0, 16383}}},
		{2, []Range{{0, 8191}, {8192, 16383}}},
		{3, []Range{{0, 5460}, {5461, 10922}, {10923, 16383}}}, // redis-cli --cluster create
		{4, []Range{{0, 4095}, {4096, 8191}, {8192, 12287}, {12288, 16383}}},
		{0, nil},
		{-1, nil},
		{Count + 1, nil},
	}
	for _, tt := range tests {
		if got := Split(tt.n); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Split(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
	for _, n := range []int{1, 2, 3, 5, 6, 7, 10, 16, 100, 1000, 16383, Count} {
		checkSplit(t, n)
	}
}

func checkSplit(t *testing.T, n int) {
	t.Helper()
	rs := Split(n)
	if len(rs) != n {
		t.Fatalf("Split(%d) has %d ranges", n, len(rs))
	}
	next, lo, hi := 0, Count, 0
	for _, r := range rs {
		if int(r.Start) != next || r.End < r.Start {
			t.Fatalf("Split(%d): range %v does not follow %d", n, r, next-1)
		}
		next = int(r.End) + 1
		lo, hi = min(lo, r.Len()), max(hi, r.Len())
	}
	if next != Count {
		t.Fatalf("Split(%d) ends at %d", n, next-1)
	}
	if hi-lo > 1 {
		t.Fatalf("Split(%d): sizes from %d to %d", n, lo, hi)
	}
}

func TestSet(t *testing.T) {
	var s Set
	if s.Len() != 0 || s.Ranges() != nil || s.Has(0) {
		t.Fatal("zero Set is not empty")
	}
	s.AddRange(Range{0, 2})
	s.Add(5)
	s.Add(63)
	s.Add(64)
	s.AddRange(Range{16380, 16383})
	s.Add(Count) // ignored
	want := []Range{{0, 2}, {5, 5}, {63, 64}, {16380, 16383}}
	if got := s.Ranges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Ranges = %v, want %v", got, want)
	}
	if s.Len() != 10 || !s.Has(64) || s.Has(3) || s.Has(Count) {
		t.Fatalf("Len/Has wrong: len %d", s.Len())
	}
	s.Remove(1)
	s.Remove(64)
	want = []Range{{0, 0}, {2, 2}, {5, 5}, {63, 63}, {16380, 16383}}
	if got := s.Ranges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Ranges after Remove = %v, want %v", got, want)
	}
	all := NewSet(Split(7)...)
	if got := all.Ranges(); !reflect.DeepEqual(got, []Range{{0, 16383}}) || all.Len() != Count {
		t.Fatalf("NewSet(Split(7)) = %v", got)
	}
}

// refOf is Redis's keyHashSlot, written the obvious way.
func refOf(key []byte) uint16 {
	s := bytes.IndexByte(key, '{')
	if s >= 0 {
		e := bytes.IndexByte(key[s+1:], '}')
		if e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for _, c := range key {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % Count
}

func FuzzOf(f *testing.F) {
	for _, k := range []string{"foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "{", "}", ""} {
		f.Add([]byte(k))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		got := Of(key)
		if got >= Count {
			t.Fatalf("Of(%q) = %d out of range", key, got)
		}
		if want := refOf(key); got != want {
			t.Fatalf("Of(%q) = %d, reference %d", key, got, want)
		}
		tag := HashTag(key)
		if Of(tag) != got && !bytes.Equal(tag, key) {
			// a tag without braces hashes to itself
			if bytes.IndexByte(tag, '{') < 0 {
				t.Fatalf("Of(HashTag(%q)) = %d, want %d", key, Of(tag), got)
			}
		}
	})
}

func FuzzSet(f *testing.F) {
	f.Add([]byte{0, 0, 0xff, 0x3f, 0x10, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Set
		want := map[uint16]bool{}
		for i := 0; i+1 < len(b); i += 2 {
			slot := (uint16(b[i])<<8 | uint16(b[i+1])) % Count
			s.Add(slot)
			want[slot] = true
		}
		n := 0
		prevEnd := -2
		for _, r := range s.Ranges() {
			if int(r.Start) <= prevEnd+1 || r.End < r.Start {
				t.Fatalf("ranges not maximal/ordered: %v", s.Ranges())
			}
			for x := int(r.Start); x <= int(r.End); x++ {
				if !want[uint16(x)] {
					t.Fatalf("slot %d in ranges but not added", x)
				}
			}
			n += r.Len()
			prevEnd = int(r.End)
		}
		if n != len(want) || s.Len() != len(want) {
			t.Fatalf("count %d / Len %d, want %d", n, s.Len(), len(want))
		}
	})
}
