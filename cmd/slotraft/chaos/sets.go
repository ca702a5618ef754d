package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// sets: SADD of unique elements to a few keys of every group. After
// healing, every acknowledged element must be in its set (else it was
// lost); an element no SADD sent must not be; an element whose SADD is
// unknown may or may not be. SADD of a fresh element must reply 1: a 0
// means the element was there already, so the add was applied twice.

// setsPerGroup is how many set keys each group holds.
const setsPerGroup = 2

// maxListed bounds the elements named in one anomaly's text.
const maxListed = 10

type sets struct{ keys []string }

func (w *sets) Name() string { return "sets" }

func (w *sets) Setup(k *keyPicker) { w.keys = k.spread("set", setsPerGroup) }

func (w *sets) Next(rng *rand.Rand, p *process) Op {
	return Op{Kind: "SADD", Key: w.keys[rng.IntN(len(w.keys))], Value: p.unique()}
}

func (w *sets) Finals() []Op { return readEach("SMEMBERS", w.keys) }

func (w *sets) Check(_ context.Context, ops []Op, _ []Event) Verdict {
	return checkPerKey(w.Name(), "SADD", w.keys, ops, checkSet, addedTwice)
}

// CheckPrefix checks the SADDs' replies: that rule needs no final read.
func (w *sets) CheckPrefix(_ context.Context, ops []Op) Verdict {
	return checkPrefixPerKey(w.Name(), "SADD", ops, addedTwice)
}

func (w *sets) LiveRules() (live, pending string) {
	return "an SADD of a fresh element replies 1", "lost and phantom elements (the final members)"
}

// checkSet checks one set's adds against its final members.
func checkSet(key string, adds []Op, final Op) []Anomaly {
	present := map[string]bool{}
	for _, m := range final.Members {
		present[m] = true
	}
	sent := map[string]bool{}
	var lost []Op
	for _, op := range adds {
		sent[op.Value] = true
		if op.Outcome == OK && !present[op.Value] {
			lost = append(lost, op)
		}
	}
	var phantom []string
	for _, m := range final.Members {
		if !sent[m] {
			phantom = append(phantom, m)
		}
	}
	brief := final // the members are many: the anomaly names its own
	brief.Members, brief.Result = nil, fmt.Sprintf("%d members", len(final.Members))
	var out []Anomaly
	if len(lost) > 0 {
		out = append(out, Anomaly{Workload: "sets", Kind: "lost element", Key: key, Ops: append(firstOps(lost), brief),
			Text: fmt.Sprintf("set %s lacks %d acknowledged elements at the end: %s", key, len(lost), listValues(lost))})
	}
	out = append(out, addedTwice(key, adds)...)
	if len(phantom) > 0 {
		slices.Sort(phantom)
		out = append(out, Anomaly{Workload: "sets", Kind: "phantom element", Key: key, Ops: []Op{brief},
			Text: fmt.Sprintf("set %s holds %d elements no SADD sent: %s", key, len(phantom), strings.Join(phantom[:min(len(phantom), maxListed)], ", "))})
	}
	return out
}

// addedTwice: an acknowledged SADD of a fresh element that did not reply
// 1 found it there already, so an add was applied twice.
func addedTwice(key string, adds []Op) []Anomaly {
	var twice []Op
	for _, op := range adds {
		if op.Outcome == OK && op.Result != "1" {
			twice = append(twice, op)
		}
	}
	if len(twice) == 0 {
		return nil
	}
	return []Anomaly{{Workload: "sets", Kind: "add applied twice", Key: key, Ops: firstOps(twice),
		Text: fmt.Sprintf("%d SADDs of fresh elements to %s replied 0 (already there): %s", len(twice), key, listValues(twice))}}
}

func firstOps(ops []Op) []Op { return slices.Clone(ops[:min(len(ops), maxListed)]) }

func listValues(ops []Op) string {
	vals := make([]string, 0, maxListed)
	for _, op := range ops[:min(len(ops), maxListed)] {
		vals = append(vals, op.Value)
	}
	s := strings.Join(vals, ", ")
	if len(ops) > maxListed {
		s += fmt.Sprintf(" and %d more", len(ops)-maxListed)
	}
	return s
}
