package chaos

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
// with no final read is a note (the run could not read it), not an anomaly.
func checkPerKey(workload, write string, keys []string, ops []Op, check func(key string, writes []Op, final Op) []Anomaly) Verdict {
	v := Verdict{Workload: workload, Result: "ok"}
	writes := map[string][]Op{}
	final := map[string]Op{}
	for _, op := range ops {
		switch {
		case op.Workload != workload:
		case op.Final:
			final[op.Key] = op
		case op.Kind == write && op.Outcome != Fail:
			writes[op.Key] = append(writes[op.Key], op)
		}
	}
	for _, key := range keys {
		f, ok := final[key]
		if !ok {
			v.Notes = append(v.Notes, key+": no final read")
			continue
		}
		v.Anomalies = append(v.Anomalies, check(key, writes[key], f)...)
	}
	return v.settle("some " + workload + " were not read at the end")
}
