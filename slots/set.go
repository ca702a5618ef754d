package slots

import "math/bits"

// Set is a set of slots as a bitmap. The zero value is empty and ready to
// use; a Set is 2 KB, so pass it by pointer.
type Set struct{ w [Count / 64]uint64 }

// NewSet returns a set holding every slot of ranges.
func NewSet(ranges ...Range) *Set {
	s := new(Set)
	for _, r := range ranges {
		s.AddRange(r)
	}
	return s
}

// Add puts slot in the set; slots >= Count are ignored.
func (s *Set) Add(slot uint16) {
	if slot < Count {
		s.w[slot/64] |= 1 << (slot % 64)
	}
}

// AddRange puts every slot of r in the set.
func (s *Set) AddRange(r Range) {
	for i := int(r.Start); i <= int(r.End) && i < Count; i++ {
		s.Add(uint16(i))
	}
}

// Remove takes slot out of the set.
func (s *Set) Remove(slot uint16) {
	if slot < Count {
		s.w[slot/64] &^= 1 << (slot % 64)
	}
}

// Has reports whether slot is in the set.
func (s *Set) Has(slot uint16) bool {
	return slot < Count && s.w[slot/64]&(1<<(slot%64)) != 0
}

// Len is the number of slots in the set.
func (s *Set) Len() int {
	n := 0
	for _, w := range s.w {
		n += bits.OnesCount64(w)
	}
	return n
}

// Ranges returns the set as maximal runs of contiguous slots, in order.
func (s *Set) Ranges() []Range {
	var out []Range
	start := -1
	for i := 0; i <= Count; i++ {
		in := i < Count && s.Has(uint16(i))
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, Range{Start: uint16(start), End: uint16(i - 1)})
			start = -1
		}
	}
	return out
}
