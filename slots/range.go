package slots

import "strconv"

// Range is an inclusive range of slots, Start <= End.
type Range struct{ Start, End uint16 }

// String renders r as CLUSTER NODES does: "5" for one slot, "0-5460" for more.
func (r Range) String() string {
	if r.Start == r.End {
		return strconv.Itoa(int(r.Start))
	}
	return strconv.Itoa(int(r.Start)) + "-" + strconv.Itoa(int(r.End))
}

// Len is the number of slots in r.
func (r Range) Len() int { return int(r.End) - int(r.Start) + 1 }

// Contains reports whether slot lies in r.
func (r Range) Contains(slot uint16) bool { return r.Start <= slot && slot <= r.End }

// Split divides all slots into n contiguous ranges of near-equal size, in
// order, covering 0..Count-1; group i gets Split(n)[i]. The boundaries are
// those of redis-cli --cluster create (n=3: 0-5460, 5461-10922,
// 10923-16383). n outside 1..Count gives nil.
func Split(n int) []Range {
	if n < 1 || n > Count {
		return nil
	}
	out := make([]Range, n)
	first := 0
	for i := range n {
		// last = round((i+1)*Count/n - 1), halves rounded up, as lround does
		p := (i+1)*Count - n
		last := (2*p + n) / (2 * n)
		if i == n-1 {
			last = Count - 1
		}
		last = max(last, first)
		out[i] = Range{Start: uint16(first), End: uint16(last)}
		first = last + 1
	}
	return out
}
