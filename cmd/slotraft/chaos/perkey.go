package chaos

import (
	"maps"
	"slices"
)

// What the counters and sets workloads share: every key gets one kind of
// write, then one final read, and each key is checked on its own.

// readEach is one read of kind per key.
func readEach(kind string, keys []string) []Op {
	ops := make([]Op, len(keys))
	for i, k := range keys {
		ops[i] = Op{Kind: kind, Key: k}
	}
	return ops
}

// checkPerKey sorts workload's ops by key, the writes of kind write that
// did not fail and the final read, and runs check on each of keys; a key
// with no final read is a note (the run could not read it), not an
// anomaly, and gets the rules that need none (prefix), as the live check
// does.
func checkPerKey(workload, write string, keys []string, ops []Op, check func(key string, writes []Op, final Op) []Anomaly,
	prefix func(key string, writes []Op) []Anomaly) Verdict {
	v := Verdict{Workload: workload, Result: "ok"}
	writes, final := byKey(workload, write, ops)
	for _, key := range keys {
		f, ok := final[key]
		if !ok {
			v.Notes = append(v.Notes, key+": no final read")
			v.Anomalies = append(v.Anomalies, prefix(key, writes[key])...)
			continue
		}
		v.Anomalies = append(v.Anomalies, check(key, writes[key], f)...)
	}
	return v.settle("some " + workload + " were not read at the end")
}

// checkPrefixPerKey runs check on the writes of kind write that did not
// fail, key by key in sorted order, for a prefix of the history (no final
// reads).
func checkPrefixPerKey(workload, write string, ops []Op, check func(key string, writes []Op) []Anomaly) Verdict {
	v := Verdict{Workload: workload, Result: "ok"}
	writes, _ := byKey(workload, write, ops)
	for _, key := range slices.Sorted(maps.Keys(writes)) {
		v.Anomalies = append(v.Anomalies, check(key, writes[key])...)
	}
	return v.settle("")
}

// byKey sorts workload's writes of kind write that did not fail by key,
// and its final reads.
func byKey(workload, write string, ops []Op) (writes map[string][]Op, final map[string]Op) {
	writes, final = map[string][]Op{}, map[string]Op{}
	for _, op := range ops {
		switch {
		case op.Workload != workload:
		case op.Final:
			final[op.Key] = op
		case op.Kind == write && op.Outcome != Fail:
			writes[op.Key] = append(writes[op.Key], op)
		}
	}
	return writes, final
}
