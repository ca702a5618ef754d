package slots

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"
)

// ErrBadRange: ParseRange's input is not a slot or an inclusive range
// start-end of slots with start <= end.
var ErrBadRange = errors.New("slots: bad slot or range")

// ParseRange parses "slot" or "start-end" (inclusive), as operators write
// slots on command lines (SLOTRAFT MOVE-SLOTS, slotraft admin move-slots).
func ParseRange(s string) (Range, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	start, err := parseSlot(lo)
	end := start
	if err == nil && isRange {
		end, err = parseSlot(hi)
	}
	if err != nil || end < start {
		return Range{}, ErrBadRange
	}
	return Range{Start: start, End: end}, nil
}

func parseSlot(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n >= Count {
		return 0, ErrBadRange
	}
	return uint16(n), nil
}

// Merge sorts a copy of rs and joins overlapping and adjacent ranges, so
// that equal slot sets give equal lists; an empty result is nil. rs is not
// modified.
func Merge(rs []Range) []Range {
	if len(rs) == 0 {
		return nil
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b Range) int { return cmp.Compare(a.Start, b.Start) })
	out := sorted[:1]
	for _, r := range sorted[1:] {
		last := &out[len(out)-1]
		if int(r.Start) <= int(last.End)+1 {
			last.End = max(last.End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// WithSlot is Merge(rs) plus slot: a slot next to a range extends it.
func WithSlot(rs []Range, slot uint16) []Range {
	return Merge(append(slices.Clone(rs), Range{Start: slot, End: slot}))
}

// WithoutSlot is Merge(rs) less slot: a range holding it in its middle is
// split in two. rs is not modified.
func WithoutSlot(rs []Range, slot uint16) []Range {
	out := make([]Range, 0, len(rs)+1)
	for _, r := range rs {
		if !r.Contains(slot) {
			out = append(out, r)
			continue
		}
		if r.Start < slot {
			out = append(out, Range{Start: r.Start, End: slot - 1})
		}
		if slot < r.End {
			out = append(out, Range{Start: slot + 1, End: r.End})
		}
	}
	return Merge(out)
}
