package slots

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name string
		in   []Range
		want []Range
	}{
		{"nil", nil, nil},
		{"empty", []Range{}, nil},
		{"one", []Range{{3, 9}}, []Range{{3, 9}}},
		{"unsorted", []Range{{10, 12}, {0, 2}}, []Range{{0, 2}, {10, 12}}},
		{"adjacent", []Range{{0, 2}, {3, 5}}, []Range{{0, 5}}},
		{"overlapping", []Range{{0, 4}, {3, 5}}, []Range{{0, 5}}},
		{"contained", []Range{{0, 10}, {3, 5}}, []Range{{0, 10}}},
		{"gap of one", []Range{{0, 2}, {4, 5}}, []Range{{0, 2}, {4, 5}}},
		{"last slot", []Range{{16383, 16383}, {0, 16382}}, []Range{{0, 16383}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.in)
			if got := Merge(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Merge(%v) = %v, want %v", tt.in, got, tt.want)
			}
			if !reflect.DeepEqual(tt.in, before) {
				t.Fatalf("Merge modified its input: %v", tt.in)
			}
		})
	}
}

func TestWithSlot(t *testing.T) {
	tests := []struct {
		name string
		in   []Range
		slot uint16
		want []Range
	}{
		{"to nothing", nil, 7, []Range{{7, 7}}},
		{"extends a range up", []Range{{0, 5460}}, 5461, []Range{{0, 5461}}},
		{"extends a range down", []Range{{5461, 10922}}, 5460, []Range{{5460, 10922}}},
		{"joins two ranges", []Range{{0, 4}, {6, 9}}, 5, []Range{{0, 9}}},
		{"apart", []Range{{0, 4}}, 9, []Range{{0, 4}, {9, 9}}},
		{"before all", []Range{{5, 9}}, 0, []Range{{0, 0}, {5, 9}}},
		{"already in", []Range{{0, 9}}, 3, []Range{{0, 9}}},
		{"last slot", []Range{{0, 16382}}, 16383, []Range{{0, 16383}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WithSlot(tt.in, tt.slot); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("WithSlot(%v, %d) = %v, want %v", tt.in, tt.slot, got, tt.want)
			}
		})
	}
}

func TestWithoutSlot(t *testing.T) {
	tests := []struct {
		name string
		in   []Range
		slot uint16
		want []Range
	}{
		{"first slot", []Range{{0, 5460}}, 0, []Range{{1, 5460}}},
		{"last of a range", []Range{{0, 5460}}, 5460, []Range{{0, 5459}}},
		{"middle", []Range{{0, 5460}}, 100, []Range{{0, 99}, {101, 5460}}},
		{"single-slot range", []Range{{0, 4}, {7, 7}, {9, 9}}, 7, []Range{{0, 4}, {9, 9}}},
		{"only slot", []Range{{7, 7}}, 7, nil},
		{"not held", []Range{{0, 4}}, 9, []Range{{0, 4}}},
		{"slot 16383", []Range{{10923, 16383}}, 16383, []Range{{10923, 16382}}},
		{"whole keyspace", []Range{{0, 16383}}, 8192, []Range{{0, 8191}, {8193, 16383}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := WithoutSlot(tt.in, tt.slot); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("WithoutSlot(%v, %d) = %v, want %v", tt.in, tt.slot, got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.in) {
				t.Fatalf("WithoutSlot modified its input: %v", tt.in)
			}
		})
	}
}

// Taking slots out and putting them back in any order gives the same list
// as a Set would.
func FuzzWithSlot(f *testing.F) {
	f.Add([]byte{0, 0, 0x15, 0x54, 0x3f, 0xff}, []byte{0x15, 0x54})
	f.Fuzz(func(t *testing.T, add, del []byte) {
		var rs []Range
		var s Set
		for i := 0; i+1 < len(add); i += 2 {
			slot := (uint16(add[i])<<8 | uint16(add[i+1])) % Count
			rs = WithSlot(rs, slot)
			s.Add(slot)
		}
		for i := 0; i+1 < len(del); i += 2 {
			slot := (uint16(del[i])<<8 | uint16(del[i+1])) % Count
			rs = WithoutSlot(rs, slot)
			s.Remove(slot)
		}
		if want := s.Ranges(); !reflect.DeepEqual(rs, want) {
			t.Fatalf("ranges %v, the set says %v", rs, want)
		}
	})
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		in   string
		want Range
		ok   bool
	}{
		{"5", Range{5, 5}, true},
		{"0-99", Range{0, 99}, true},
		{"16383", Range{16383, 16383}, true},
		{"7-7", Range{7, 7}, true},
		{"16384", Range{}, false},
		{"5-3", Range{}, false},
		{"1-2-3", Range{}, false},
		{"-1", Range{}, false},
		{"x", Range{}, false},
		{"", Range{}, false},
		{"3-", Range{}, false},
	}
	for _, tt := range tests {
		got, err := ParseRange(tt.in)
		if tt.ok != (err == nil) || got != tt.want || (err != nil && !errors.Is(err, ErrBadRange)) {
			t.Errorf("ParseRange(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
