package chaos

import (
	"cmp"
	"context"
	"fmt"
	"math"
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
// every increment begun before it returned; and the counter never goes
// backwards: a reply is at least any reply acknowledged before the INCRBY
// began plus its own increment. The replies' rules hold on any prefix of
// the history, so the live check (live.go) applies them during the run.

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
	return checkPerKey(w.Name(), "INCRBY", w.keys, ops, checkCounter, checkReplies)
}

// CheckPrefix checks the replies, with no final value to bound them.
func (w *counters) CheckPrefix(_ context.Context, ops []Op) Verdict {
	return checkPrefixPerKey(w.Name(), "INCRBY", ops, checkReplies)
}

// checkReplies checks one counter's replies without its final value.
func checkReplies(key string, incs []Op) []Anomaly { return replyBounds(key, incs, nil) }

func (w *counters) LiveRules() (live, pending string) {
	return "each INCRBY reply within what the increments before it allow; the counter never goes backwards",
		"lost and phantom increments (the final values)"
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
	return append(out, replyBounds(key, incs, &value)...)
}

// replyBounds checks each acknowledged INCRBY's reply r: at least the sum
// of the increments acknowledged before it began plus its own, at most the
// sum of every increment begun before it returned, and at most the final
// value (when known: nil on a prefix of the history); and at least any
// reply acknowledged before it began plus its own increment (the counter
// went backwards: an increment that an earlier reply counted is gone).
// Prefix sums over the increments sorted by return and by call time make
// it O(n log n).
func replyBounds(key string, incs []Op, final *int64) []Anomaly {
	byReturn := sortedPrefix(incs, func(o Op) int64 { return o.Return }, true)
	byCall := sortedPrefix(incs, func(o Op) int64 { return o.Call }, false)
	replies := sortedReplies(incs)
	top := int64(math.MaxInt64)
	if final != nil {
		top = *final
	}
	var out []Anomaly
	for _, op := range incs {
		r, ok := reply(op)
		if !ok {
			continue
		}
		low := op.N + byReturn.sumBefore(op.Call)
		high := byCall.sumBefore(op.Return + 1)
		prev, seen := replies.maxBefore(op.Call)
		switch {
		case r < low || r > high || r > top:
			out = append(out, Anomaly{Workload: "counters", Kind: "increment reply out of bounds", Key: key, Ops: []Op{op},
				Text: fmt.Sprintf("%s at %s replied %d: want at least %d (acknowledged before it began, plus its own), at most %d (begun before it returned)%s",
					describeOp(op), span(op), r, low, high, finalBound(final))})
		case seen && r < prev.value+op.N:
			out = append(out, Anomaly{Workload: "counters", Kind: "counter went backwards", Key: key, Ops: []Op{prev.op, op},
				Text: fmt.Sprintf("%s at %s replied %d, but %s had replied %d %s before it began: want at least %d",
					describeOp(op), span(op), r, describeOp(prev.op), prev.value, before(prev.op.Return, op.Call), prev.value+op.N)})
		}
	}
	return out
}

// finalBound renders the bound of the final value, if known.
func finalBound(final *int64) string {
	if final == nil {
		return ""
	}
	return fmt.Sprintf(" and at most the final %d", *final)
}

// reply is an acknowledged INCRBY's reply.
func reply(op Op) (int64, bool) {
	if op.Outcome != OK {
		return 0, false
	}
	r, err := strconv.ParseInt(op.Result, 10, 64)
	return r, err == nil
}

// replyMax is the greatest reply among the acknowledged INCRBYs that
// returned up to a time, and the one that gave it.
type replyMax struct {
	value int64
	op    Op
}

// maxReplies are the acknowledged INCRBYs sorted by return time, with the
// running greatest reply.
type maxReplies struct {
	times []int64
	tops  []replyMax // tops[i]: the greatest of the first i+1
}

func sortedReplies(incs []Op) maxReplies {
	acked := slices.DeleteFunc(slices.Clone(incs), func(o Op) bool { _, ok := reply(o); return !ok })
	slices.SortFunc(acked, func(a, b Op) int { return cmp.Compare(a.Return, b.Return) })
	m := maxReplies{times: make([]int64, len(acked)), tops: make([]replyMax, len(acked))}
	for i, o := range acked {
		r, _ := reply(o)
		m.times[i], m.tops[i] = o.Return, replyMax{value: r, op: o}
		if i > 0 && m.tops[i-1].value >= r {
			m.tops[i] = m.tops[i-1]
		}
	}
	return m
}

// maxBefore is the greatest reply of an INCRBY that returned before t.
func (m maxReplies) maxBefore(t int64) (replyMax, bool) {
	i, _ := slices.BinarySearch(m.times, t) // first index with times[i] >= t
	if i == 0 {
		return replyMax{}, false
	}
	return m.tops[i-1], true
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
