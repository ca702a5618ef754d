package server

import (
	"math/bits"
	"sync/atomic"
)

// latencyHist is a command's latency histogram, in nanoseconds, of bounded
// size (as Redis's HDR histogram with 2 significant digits, coarser):
// values below 64 ns are exact, every power of two above is split in 32
// buckets (about 3% error), and everything from 2^41 ns (36 minutes) up
// shares the last bucket. Recording is one atomic add, no lock.
type latencyHist struct {
	buckets [histBuckets]atomic.Uint64
	count   atomic.Uint64
}

const (
	histSubBits = 5
	histSub     = 1 << histSubBits                        // buckets per power of two
	histMaxBits = 41                                      // values of up to 41 bits have a bucket of their own
	histBuckets = (histMaxBits-histSubBits+1)*histSub + 1 // the last one holds the rest
)

// histIndex is the bucket of v.
func histIndex(v uint64) int {
	n := bits.Len64(v)
	if n <= histSubBits+1 {
		return int(v) // below 64: exact
	}
	if n > histMaxBits {
		return histBuckets - 1
	}
	shift := n - histSubBits - 1
	return shift*histSub + int(v>>shift)
}

// histHighest is the highest value bucket i holds, what Redis's
// hdr_value_at_percentile reports (its highest equivalent value).
func histHighest(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	return (uint64(i-shift*histSub)+1)<<shift - 1
}

func (h *latencyHist) record(ns uint64) {
	h.buckets[histIndex(ns)].Add(1)
	h.count.Add(1)
}

// percentile is the value below or at which p percent of the recorded
// values are (0 when nothing was recorded).
func (h *latencyHist) percentile(p float64) uint64 {
	total := h.count.Load()
	if total == 0 {
		return 0
	}
	want := uint64(p / 100 * float64(total))
	if float64(want) < p/100*float64(total) || want == 0 {
		want++
	}
	var seen uint64
	for i := range h.buckets {
		seen += h.buckets[i].Load()
		if seen >= want {
			return histHighest(i)
		}
	}
	return histHighest(histBuckets - 1)
}

// cumulative calls fn, for each power-of-two bound from 1024 ns at or
// below which the count of values grew, with the bound in µs as Redis
// prints it (1024<<k / 1000: 1, 2, 4 … 32, 65, 131…) and that count: the
// distribution of LATENCY HISTOGRAM (Redis iterates its HDR histogram in
// log steps of 2 from 1024 ns and skips steps that add nothing).
func (h *latencyHist) cumulative(fn func(boundUsec, count uint64)) {
	var seen, prev uint64
	i := 0
	for bound := uint64(1024); i < histBuckets; bound *= 2 {
		for ; i < histBuckets && (histHighest(i) < bound || i == histBuckets-1); i++ {
			seen += h.buckets[i].Load()
		}
		if seen > prev {
			fn(bound/1000, seen)
		}
		prev = seen
	}
}
