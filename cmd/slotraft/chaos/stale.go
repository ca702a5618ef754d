package chaos

import (
	"fmt"
	"time"
)

// staleReads explains non-linearizable reads of one register in terms
// people read at a glance. Values are unique, so every value a read returns
// names the one write that wrote it. A read is
//   - a stale read when a write that certainly came after the value's
//     write (it began after that write returned) returned before the read
//     began, or when it found no key after an acknowledged write returned;
//   - a read of the future when the value's write began after the read
//     returned;
//   - a phantom read when no write of the run wrote its value.
//
// Each of these alone makes the history non-linearizable; porcupine
// decides the cases these rules do not cover. ops are the key's OK
// operations and unknown writes.
func staleReads(key string, ops []Op) []Anomaly {
	writes := map[string]Op{} // value → its write
	var acked []Op            // acknowledged writes
	for _, op := range ops {
		if !wroteValue(op) {
			continue
		}
		writes[op.Value] = op
		if op.Outcome == OK {
			acked = append(acked, op)
		}
	}
	var out []Anomaly
	for _, r := range ops {
		if r.Kind != "GET" || r.Outcome != OK {
			continue
		}
		if a, ok := explainRead(key, r, writes, acked); ok {
			out = append(out, a)
		}
	}
	return out
}

// wroteValue reports whether op wrote (or may have written) op.Value.
func wroteValue(op Op) bool {
	switch op.Kind {
	case "SET":
		return true
	case "CAS":
		return op.Outcome == Unknown || op.Result == "1"
	}
	return false
}

// explainRead checks one read against the writes (see staleReads).
func explainRead(key string, r Op, writes map[string]Op, acked []Op) (Anomaly, bool) {
	a := Anomaly{Workload: "registers", Key: key}
	if r.Nil {
		if w, ok := latestBefore(acked, r.Call, ""); ok {
			a.Kind, a.Ops = "stale read", []Op{w, r}
			a.Text = fmt.Sprintf("GET %s returned nil at %s, but %s had returned %s before the read began",
				key, span(r), describeOp(w), before(w.Return, r.Call))
			return a, true
		}
		return a, false
	}
	w, ok := writes[r.Result]
	switch {
	case !ok:
		a.Kind, a.Ops = "phantom read", []Op{r}
		a.Text = fmt.Sprintf("GET %s returned %q at %s, a value no operation wrote", key, r.Result, span(r))
		return a, true
	case w.Call > r.Return:
		a.Kind, a.Ops = "read of the future", []Op{r, w}
		a.Text = fmt.Sprintf("GET %s returned %q at %s, before %s was even sent at %s", key, r.Result, span(r), describeOp(w), at(w.Call))
		return a, true
	case w.Outcome != OK:
		return a, false // an unknown write may take effect at any later time
	}
	if w2, ok := latestBefore(acked, r.Call, w.Value); ok && w2.Call > w.Return {
		a.Kind, a.Ops = "stale read", []Op{w, w2, r}
		a.Text = fmt.Sprintf("GET %s returned %q at %s, written by %s (done at %s), but %s, begun after that, had returned %s before the read began",
			key, r.Result, span(r), describeOp(w), at(w.Return), describeOp(w2), before(w2.Return, r.Call))
		return a, true
	}
	return a, false
}

// latestBefore is the acknowledged write other than the one of value skip
// that returned last before t (and began after nothing in particular).
func latestBefore(acked []Op, t int64, skip string) (Op, bool) {
	var best Op
	found := false
	for _, w := range acked {
		if w.Return < t && w.Value != skip && (!found || w.Call > best.Call) {
			best, found = w, true
		}
	}
	return best, found
}

// at renders a history time as seconds since the run began.
func at(t int64) string { return fmt.Sprintf("%.3fs", time.Duration(t).Seconds()) }

// span renders an operation's interval.
func span(op Op) string { return "[" + at(op.Call) + ", " + at(op.Return) + "]" }

// before renders how long before t2 the time t1 was.
func before(t1, t2 int64) string {
	return time.Duration(t2 - t1).Round(time.Microsecond).String()
}
