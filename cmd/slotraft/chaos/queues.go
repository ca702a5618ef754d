package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// queues: each queue is two lists in one hash slot, {q}:in and {q}:proc.
// Producers LPUSH unique elements onto in; consumers pop from the right
// of either list (RPOP, BRPOP) — a pop delivers the element — or move it
// from in to proc (LMOVE, BLMOVE), so elements travel between lists.
// Nothing ever moves an element back to in or pushes it twice, so each
// element enters in once, enters proc at most once, and ends in exactly
// one place: delivered by one pop, or still in one list at the end. Pops
// and moves are writes: an error after sending leaves them Unknown, and a
// blocking pop whose timeout passed with nothing replies nil (OK, empty).
// The checker, per element (see checkElement and lostElements):
//   - duplicate delivery: it came out of the queue more than once (two
//     acknowledged pops, a pop and a final read, two lists at the end, two
//     moves), or came out of in after an acknowledged move took it out;
//   - phantom element: a pop, move or final read shows an element no LPUSH
//     (acknowledged or unknown) sent to this queue, or shows it in proc
//     when no move (acknowledged, or unknown and begun after the push
//     began) can have put it there, or returns it before its push began;
//   - lost element: it certainly exists (its LPUSH was acknowledged, or an
//     acknowledged pop or move or the final read showed it) yet it is
//     neither delivered nor in a list at the end, and no unknown pop can
//     have taken it. An unknown pop takes at most one element, only one
//     whose push began before the pop did, from in only if no
//     acknowledged move took the element to proc, and from proc only if a
//     move took it there or an unknown move may have: lost elements are
//     matched to such pops (a maximum bipartite matching), and those left
//     over are lost.
//
// What it cannot see: the order of delivery (FIFO is not checked), an
// element that an unknown pop may have taken (it is allowed to vanish),
// and a pop that returned nil although the list held elements.

// queuesPerGroup is how many queues each group holds.
const queuesPerGroup = 2

// The lists of one queue: elements are pushed onto in and moved to proc.
const (
	inList   = ":in"
	procList = ":proc"
)

type queues struct{ queues []string }

func (w *queues) Name() string { return "queues" }

// Setup: each queue's lists share its name as hash tag, so LMOVE between
// them stays in one slot of the group the name falls in.
func (w *queues) Setup(k *keyPicker) {
	for _, key := range k.spread("q", queuesPerGroup) {
		w.queues = append(w.queues, "{"+key+"}")
	}
}

// Next: half LPUSH; the rest pops and moves, half of them blocking.
func (w *queues) Next(rng *rand.Rand, p *process) Op {
	q := w.queues[rng.IntN(len(w.queues))]
	block := p.block.Milliseconds()
	switch rng.IntN(10) {
	case 0, 1, 2, 3, 4:
		return Op{Kind: "LPUSH", Key: q + inList, Value: p.unique()}
	case 5:
		return Op{Kind: "RPOP", Key: q + inList}
	case 6:
		return Op{Kind: "BRPOP", Key: q + inList, Block: block}
	case 7:
		return Op{Kind: "LMOVE", Key: q + inList, To: q + procList}
	case 8:
		return Op{Kind: "BLMOVE", Key: q + inList, To: q + procList, Block: block}
	}
	if rng.IntN(2) == 0 {
		return Op{Kind: "RPOP", Key: q + procList}
	}
	return Op{Kind: "BRPOP", Key: q + procList, Block: block}
}

func (w *queues) Finals() []Op {
	var ops []Op
	for _, q := range w.queues {
		ops = append(ops, Op{Kind: "LRANGE", Key: q + inList}, Op{Kind: "LRANGE", Key: q + procList})
	}
	return ops
}

func (w *queues) Check(_ context.Context, ops []Op, _ []Event) Verdict {
	v := Verdict{Workload: w.Name(), Result: "ok"}
	byQueue := queuesOf(ops)
	for _, q := range w.queues {
		qo := queueOps(q, byQueue[q])
		if len(qo.finals) != 2 { // the rules that need no final read still hold
			v.Notes = append(v.Notes, q+": no final read of both lists")
			v.Anomalies = append(v.Anomalies, checkQueue(q, qo, true)...)
			continue
		}
		v.Anomalies = append(v.Anomalies, checkQueue(q, qo, false)...)
	}
	return v.settle("some queues were not read at the end")
}

// CheckPrefix applies the per-element rules that hold on a prefix of the
// history: an element delivered twice, moved twice, or popped from in
// after a move took it out, and one that no LPUSH begun before it was
// delivered sent. A pop from proc of an element no move put there is not
// judged live: the record of the move may come later.
func (w *queues) CheckPrefix(_ context.Context, ops []Op) Verdict {
	v := Verdict{Workload: w.Name(), Result: "ok"}
	byQueue := queuesOf(ops)
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		v.Anomalies = append(v.Anomalies, checkQueue(q, queueOps(q, byQueue[q]), true)...)
	}
	return v.settle("")
}

func (w *queues) LiveRules() (live, pending string) {
	return "an element delivered or moved twice, popped from in after a move took it, or delivered with no LPUSH begun before",
		"lost elements, elements in two places or in proc with no move (the final lists)"
}

// queuesOf sorts the queues workload's operations that did not fail by
// queue: {name}, whose lists are {name}:in and {name}:proc.
func queuesOf(ops []Op) map[string][]Op {
	return groupOps(ops, "queues", func(op Op) string {
		q, _, _ := strings.Cut(op.Key, "}")
		return q + "}"
	})
}

// groupOps sorts workload's operations that did not fail by unit.
func groupOps(ops []Op, workload string, unit func(Op) string) map[string][]Op {
	by := map[string][]Op{}
	for _, op := range ops {
		if op.Workload == workload && op.Outcome != Fail {
			by[unit(op)] = append(by[unit(op)], op)
		}
	}
	return by
}

// queueHistory is one queue's operations, sorted out.
type queueHistory struct {
	in, proc   string
	pushes     map[string]Op // element → its LPUSH (acknowledged or unknown)
	pops       map[string][]Op
	moves      map[string][]Op
	unknownPop []Op // pops and moves whose outcome is unknown
	unknownMov []Op
	finals     map[string]Op // list → its final LRANGE
	at         map[string]map[string]int
}

// queueOps sorts one queue's operations (none Fail) out.
func queueOps(q string, ops []Op) queueHistory {
	h := queueHistory{in: q + inList, proc: q + procList, pushes: map[string]Op{}, pops: map[string][]Op{},
		moves: map[string][]Op{}, finals: map[string]Op{}, at: map[string]map[string]int{}}
	for _, op := range ops {
		switch {
		case op.Final:
			h.finals[op.Key] = op
			for _, e := range op.Members {
				if h.at[e] == nil {
					h.at[e] = map[string]int{}
				}
				h.at[e][op.Key]++
			}
		case op.Kind == "LPUSH":
			h.pushes[op.Value] = op
		case op.Outcome == Unknown && (op.Kind == "LMOVE" || op.Kind == "BLMOVE"):
			h.unknownMov = append(h.unknownMov, op)
		case op.Outcome == Unknown:
			h.unknownPop = append(h.unknownPop, op)
		case op.Nil:
		case op.Kind == "LMOVE" || op.Kind == "BLMOVE":
			h.moves[op.Result] = append(h.moves[op.Result], op)
		default:
			h.pops[op.Result] = append(h.pops[op.Result], op)
		}
	}
	return h
}

// elements is every element the queue's history names, sorted.
func (h *queueHistory) elements() []string {
	seen := map[string]bool{}
	for _, m := range []map[string][]Op{h.pops, h.moves} {
		for e := range m {
			seen[e] = true
		}
	}
	for e := range h.at {
		seen[e] = true
	}
	for e := range h.pushes {
		seen[e] = true
	}
	out := make([]string, 0, len(seen))
	for e := range seen {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// mayHaveMoved reports whether an unknown move may have taken e to proc.
func (h *queueHistory) mayHaveMoved(e string) bool {
	push := h.pushes[e]
	return slices.ContainsFunc(h.unknownMov, func(m Op) bool { return m.Call > push.Call })
}

// checkQueue checks every element of one queue; on a prefix of the
// history (no final reads) only the rules that hold on one.
func checkQueue(q string, h queueHistory, prefix bool) []Anomaly {
	var out []Anomaly
	var missing []string
	for _, e := range h.elements() {
		a, gone := h.checkElement(q, e, prefix)
		out = append(out, a...)
		if gone {
			missing = append(missing, e)
		}
	}
	if prefix {
		return out
	}
	return append(out, h.lostElements(q, missing)...)
}

// checkElement applies the per-element rules; gone reports an element
// that certainly exists and ended nowhere. On a prefix, an element out of
// proc with no move is not judged (a move recorded later may explain it).
func (h *queueHistory) checkElement(q, e string, prefix bool) (out []Anomaly, gone bool) {
	push, pushed := h.pushes[e]
	popsIn, popsProc := 0, 0
	var seenBy []Op
	for _, p := range h.pops[e] {
		if p.Key == h.in {
			popsIn++
		} else {
			popsProc++
		}
	}
	seenBy = append(append(seenBy, h.pops[e]...), h.moves[e]...)
	inAt, procAt := h.at[e][h.in], h.at[e][h.proc]
	moves := len(h.moves[e])
	anomaly := func(kind, why string) {
		ops := append(slices.Clone(seenBy), h.finals[h.in], h.finals[h.proc])
		if pushed {
			ops = append([]Op{push}, ops...)
		}
		for i := range ops { // the final reads name many elements
			if ops[i].Final {
				ops[i].Result, ops[i].Members = fmt.Sprintf("%d elements, %q %d times", len(ops[i].Members), e, h.at[e][ops[i].Key]), nil
			}
		}
		out = append(out, Anomaly{Workload: "queues", Kind: kind, Key: q, Ops: firstOps(ops),
			Text: fmt.Sprintf("queue %s, element %s: %s (pops from in %d, from proc %d, moves %d, at the end in %d, in proc %d)", q, e, why, popsIn, popsProc, moves, inAt, procAt)})
	}
	ends := popsIn + popsProc + inAt + procAt
	switch {
	case !pushed:
		anomaly("phantom element", "no LPUSH to this queue sent it")
		return out, false
	case slices.ContainsFunc(seenBy, func(o Op) bool { return o.Return < push.Call }):
		anomaly("phantom element", "popped or moved before its LPUSH began")
	case ends > 1:
		anomaly("duplicate delivery", "it came out of the queue more than once")
	case moves > 1:
		anomaly("duplicate delivery", "two acknowledged moves took it from in")
	case moves == 1 && popsIn+inAt > 0:
		anomaly("duplicate delivery", "an acknowledged move took it from in, yet it was popped from in or is still there")
	case !prefix && popsProc+procAt > 0 && moves == 0 && !h.mayHaveMoved(e):
		anomaly("phantom element", "it came out of proc, but no move can have put it there")
	}
	exists := push.Outcome == OK || len(seenBy) > 0 || inAt+procAt > 0
	return out, exists && ends == 0
}

// lostElements matches the missing elements to unknown pops that may have
// taken them (Kuhn's augmenting paths); those left over are lost.
func (h *queueHistory) lostElements(q string, missing []string) []Anomaly {
	cands := make([][]int, len(missing))
	for i, e := range missing {
		push, moved := h.pushes[e], len(h.moves[e]) > 0
		mayMove := moved || h.mayHaveMoved(e)
		for j, u := range h.unknownPop {
			fromIn := u.Key == h.in
			if u.Call > push.Call && ((fromIn && !moved) || (!fromIn && mayMove)) {
				cands[i] = append(cands[i], j)
			}
		}
	}
	takenBy := make([]int, len(h.unknownPop)) // pop → element index+1
	var lost []Op
	for i := range missing {
		if !augment(i, cands, takenBy, make([]bool, len(h.unknownPop))) {
			lost = append(lost, h.pushes[missing[i]])
		}
	}
	if len(lost) == 0 {
		return nil
	}
	return []Anomaly{{Workload: "queues", Kind: "lost element", Key: q, Ops: firstOps(lost),
		Text: fmt.Sprintf("queue %s: %d elements that certainly existed were neither delivered by an acknowledged pop nor in a list at the end, beyond what its %d unknown pops can have taken: %s",
			q, len(lost), len(h.unknownPop), listValues(lost))}}
}

// augment looks for an augmenting path from element i.
func augment(i int, cands [][]int, takenBy []int, visited []bool) bool {
	for _, j := range cands[i] {
		if visited[j] {
			continue
		}
		visited[j] = true
		if takenBy[j] == 0 || augment(takenBy[j]-1, cands, takenBy, visited) {
			takenBy[j] = i + 1
			return true
		}
	}
	return false
}
