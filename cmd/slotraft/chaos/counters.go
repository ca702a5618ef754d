package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// counters: INCRBY of small positive amounts on a few keys of every group.
// After healing, each counter's value must lie within [the sum of the
// acknowledged increments, that plus the sum of the unknown ones]: below
// is a lost increment, above one applied twice or from nowhere. During
// the run, each acknowledged INCRBY's reply is checked too: it includes
// every increment acknowledged before the INCRBY began, and no more than
// every increment begun before it returned.

// countersPerGroup is how many counter keys each group holds.
const countersPerGroup = 2

type counters struct{ keys []string }

func (w *counters) Name() string { return "counters" }

func (w *counters) Setup(k *keyPicker) { w.keys = k.spread("ctr", countersPerGroup) }

func (w *counters) Next(rng *rand.Rand, _ *process) Op {
	return Op{Kind: "INCRBY", Key: w.keys[rng.IntN(len(w.keys))], N: int64(1 + rng.IntN(5))}
}

func (w *counters) Finals() []Op { return readEach("GET", w.keys) }

func (w *counters) Check(_ context.Context, ops []Op, _ []Event) Verdict {
	return checkPerKey(w.Name(), "INCRBY", w.keys, ops, checkCounter)
}

// checkCounter checks one counter's increments and final read.
func checkCounter(key string, incs []Op, final Op) []Anomaly {
	var acked, unknown int64
	for _, op := range incs {
		if op.Outcome == OK {
			acked += op.N
		} else {
			unknown += op.N
		}
	}
	value := int64(0)
	if !final.Nil {
		n, err := strconv.ParseInt(final.Result, 10, 64)
		if err != nil {
			return []Anomaly{{Workload: "counters", Kind: "bad value", Key: key, Ops: []Op{final},
				Text: fmt.Sprintf("counter %s holds %q, not an integer", key, final.Result)}}
		}
		value = n
	}
	var out []Anomaly
	switch {
	case value < acked:
		out = append(out, Anomaly{Workload: "counters", Kind: "lost increment", Key: key, Ops: []Op{final},
			Text: fmt.Sprintf("counter %s = %d at the end, below the %d its acknowledged increments add up to (%d more unknown): acknowledged increments were lost", key, value, acked, unknown)})
	case value > acked+unknown:
		out = append(out, Anomaly{Workload: "counters", Kind: "phantom increment", Key: key, Ops: []Op{final},
			Text: fmt.Sprintf("counter %s = %d at the end, above the %d that acknowledged (%d) and unknown (%d) increments allow: an increment was applied twice or from nowhere", key, value, acked+unknown, acked, unknown)})
	}
	return append(out, replyBounds(key, incs, value)...)
}

// replyBounds checks each acknowledged INCRBY's reply r: at least the sum
// of the increments acknowledged before it began plus its own, at most the
// sum of every increment begun before it returned, and at most the final
// value. Prefix sums over the increments sorted by return and by call
// time make it O(n log n).
func replyBounds(key string, incs []Op, final int64) []Anomaly {
	byReturn := sortedPrefix(incs, func(o Op) int64 { return o.Return }, true)
	byCall := sortedPrefix(incs, func(o Op) int64 { return o.Call }, false)
	var out []Anomaly
	for _, op := range incs {
		if op.Outcome != OK {
			continue
		}
		r, err := strconv.ParseInt(op.Result, 10, 64)
		if err != nil {
			continue
		}
		low := op.N + byReturn.sumBefore(op.Call)
		high := byCall.sumBefore(op.Return + 1)
		if r < low || r > high || r > final {
			out = append(out, Anomaly{Workload: "counters", Kind: "increment reply out of bounds", Key: key, Ops: []Op{op},
				Text: fmt.Sprintf("%s at %s replied %d: want at least %d (acknowledged before it began, plus its own), at most %d (begun before it returned) and at most the final %d",
					describeOp(op), span(op), r, low, high, final)})
		}
	}
	return out
}

// prefixSums are increments sorted by a time, with running sums.
type prefixSums struct {
	times []int64
	sums  []int64 // sums[i]: the increments of the first i
}

// sortedPrefix sorts incs by time (counting only acknowledged ones when
// ackedOnly) and sums them up.
func sortedPrefix(incs []Op, time func(Op) int64, ackedOnly bool) prefixSums {
	sorted := slices.Clone(incs)
	slices.SortFunc(sorted, func(a, b Op) int { return cmp.Compare(time(a), time(b)) })
	p := prefixSums{times: make([]int64, len(sorted)), sums: make([]int64, len(sorted)+1)}
	for i, o := range sorted {
		p.times[i] = time(o)
		p.sums[i+1] = p.sums[i]
		if !ackedOnly || o.Outcome == OK {
			p.sums[i+1] += o.N
		}
	}
	return p
}

// sumBefore is the sum of the increments whose time is below t.
func (p prefixSums) sumBefore(t int64) int64 {
	i, _ := slices.BinarySearch(p.times, t) // first index with times[i] >= t
	return p.sums[i]
}
