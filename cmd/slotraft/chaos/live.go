package chaos

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/chaosui"
)

// The live verdict. While the run goes on, every --live-every a goroutine
// checks the history so far with the rules of each workload that hold on
// a prefix of the history (Workload.CheckPrefix): porcupine's
// linearizability of the registers, stale, phantom and future reads, the
// counters' replies, the sets' SADD replies, duplicate deliveries in
// queues and streams, and so on. The operations done so far are checked
// as they are; the writes still in flight as of unknown outcome (they may
// take effect at any time after their call, or never: porcupine gets them
// with an infinite return time, as it gets the timeouts); reads in flight
// have observed nothing yet and are left out. So a prefix check finds
// only what the final check on the whole history finds too: every
// completed operation keeps its outcome, and an operation in flight is
// given every freedom its final outcome can have. What needs the final
// reads (lost acknowledged writes, phantom elements at the end) waits for
// the end; the final verdict is computed as before, on the whole history.
//
// Bounded cost: one round at a time on one goroutine (a round due while
// one runs is skipped), porcupine at most liveBudget per round (a key not
// decided in time is tried again next round), the next round no sooner
// than liveSpacing times the last round's length after it (at most a
// fifth of a core over time), and at most liveMaxOps operations: past
// them the live check stops, and the rest is checked at the end.

const (
	liveSpacing = 4
	liveBudget  = time.Second
	liveMaxOps  = 50_000
	liveKept    = 50 // anomalies found live that the page and summary list
	// inFlightKind marks a write that had not returned when a prefix was
	// taken.
	inFlightKind = "in flight"
)

// LiveSummary is what the live checks did during the run.
type LiveSummary struct {
	Every     string        `json:"every"`      // --live-every
	Checks    int           `json:"checks"`     // rounds done
	LongestMS float64       `json:"longest_ms"` // the longest round
	TotalMS   float64       `json:"total_ms"`
	LastOps   int           `json:"last_ops"`          // operations the last round checked
	LastUpTo  int64         `json:"last_up_to"`        // the end of its prefix, ns since started
	Capped    bool          `json:"capped,omitempty"`  // the live check stopped at liveMaxOps
	Anomalies []LiveAnomaly `json:"anomalies"`         // provisional: the final check decides
	More      int           `json:"more,omitempty"`    // anomalies found live beyond those listed
	Undecided int           `json:"undecided"`         // keys porcupine did not decide in the last round
	Ended     bool          `json:"covered_end"`       // a round checked the workloads' whole history
	Pending   []string      `json:"pending,omitempty"` // what only the final check judges
}

// LiveAnomaly is an anomaly a live check found on a prefix of the history,
// the first time it found one of its kind on its key.
type LiveAnomaly struct {
	Workload string `json:"workload"`
	Kind     string `json:"kind"`
	Key      string `json:"key,omitempty"`
	Text     string `json:"text"`
	Found    int64  `json:"found"` // the end of the prefix it was found on, ns since started
}

// liveChecker runs the live checks of one run.
type liveChecker struct {
	h      *history
	wls    []Workload
	every  time.Duration
	budget time.Duration
	maxOps int

	kick  chan struct{} // the workloads stopped: a round now
	stopc chan struct{}
	done  chan struct{}

	// The loop's own: the operations recorded so far (final reads apart)
	// and how many of the history's it has read.
	ops  []Op
	seen int

	mu sync.Mutex
	st LiveSummary
}

func newLiveChecker(h *history, wls []Workload, every time.Duration) *liveChecker {
	l := &liveChecker{h: h, wls: wls, every: every, budget: liveBudget, maxOps: liveMaxOps,
		kick: make(chan struct{}, 1), stopc: make(chan struct{}), done: make(chan struct{})}
	l.st = LiveSummary{Every: every.String(), Anomalies: []LiveAnomaly{}}
	for _, wl := range wls {
		_, pending := wl.LiveRules()
		l.st.Pending = append(l.st.Pending, wl.Name()+": "+pending)
	}
	return l
}

// start runs the rounds until stop or ctx ends.
func (l *liveChecker) start(ctx context.Context) {
	if l == nil {
		return
	}
	go func() {
		defer close(l.done)
		_ = guard(func() { l.loop(ctx) }) // a live check that panics ends; the final check still runs
	}()
}

// workloadsStopped asks for a round over the workloads' whole history.
func (l *liveChecker) workloadsStopped() {
	if l == nil {
		return
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// stop ends the rounds, after one over the workloads' whole history if
// they stopped and none has covered it yet, and returns the summary.
func (l *liveChecker) stop() *LiveSummary {
	if l == nil {
		return nil
	}
	close(l.stopc)
	<-l.done
	s := l.summary()
	return &s
}

func (l *liveChecker) loop(ctx context.Context) {
	wait := time.NewTimer(l.every)
	defer wait.Stop()
	ended := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.stopc:
			select {
			case <-l.kick:
				ended = true
			default:
			}
			if ended && !l.summary().Ended && !l.summary().Capped {
				l.round(ctx, true)
			}
			return
		case <-l.kick:
			ended = true
		case <-wait.C:
		}
		if l.summary().Capped {
			continue // nothing more to check live
		}
		took := l.round(ctx, ended)
		wait.Reset(max(l.every, liveSpacing*took))
	}
}

// round checks the history as it stands now (or up to liveMaxOps).
func (l *liveChecker) round(ctx context.Context, ended bool) time.Duration {
	began := time.Now()
	fresh, flying, now := l.h.since(l.seen)
	l.seen += len(fresh)
	for _, op := range fresh {
		if !op.Final {
			l.ops = append(l.ops, op)
		}
	}
	upTo, capped := now, len(l.ops) > l.maxOps
	if capped {
		upTo = l.ops[l.maxOps-1].Return
	}
	ops := prefixAt(l.ops, flying, upTo)
	rctx, cancel := context.WithTimeout(ctx, l.budget)
	found, undecided := checkPrefix(rctx, l.wls, ops)
	cancel()
	took := time.Since(began)
	l.record(took, len(ops), upTo, capped, ended, found, undecided)
	return took
}

// record adds a round's outcome to the summary.
func (l *liveChecker) record(took time.Duration, n int, upTo int64, capped, ended bool, found []Anomaly, undecided int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.st
	s.Checks++
	s.LongestMS = max(s.LongestMS, ms(int64(took)))
	s.TotalMS += ms(int64(took))
	s.LastOps, s.LastUpTo, s.Capped, s.Undecided = n, upTo, capped, undecided
	s.Ended = s.Ended || (ended && !capped)
	for _, a := range found {
		known := slices.ContainsFunc(s.Anomalies, func(k LiveAnomaly) bool {
			return k.Workload == a.Workload && k.Kind == a.Kind && k.Key == a.Key
		})
		switch {
		case known:
		case len(s.Anomalies) < liveKept:
			s.Anomalies = append(s.Anomalies, LiveAnomaly{Workload: a.Workload, Kind: a.Kind, Key: a.Key, Text: a.Text, Found: upTo})
		default:
			s.More++
		}
	}
}

// summary is a copy of what the live checks did so far.
func (l *liveChecker) summary() LiveSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.st
	s.Anomalies = slices.Clone(s.Anomalies)
	return s
}

// checkPrefix runs every workload's prefix rules on ops: the anomalies,
// and how many keys porcupine left undecided.
func checkPrefix(ctx context.Context, wls []Workload, ops []Op) (found []Anomaly, undecided int) {
	for _, wl := range wls {
		var v Verdict
		if err := guard(func() { v = wl.CheckPrefix(ctx, ops) }); err != nil {
			undecided++
			continue
		}
		found = append(found, v.Anomalies...)
		undecided += len(v.Notes)
	}
	return found, undecided
}

// prefixAt is the history as it stood at time t, from the operations
// recorded (done) and the writes in flight (flying): what had returned by
// t as it is; the writes that had begun by t and not returned as of
// unknown outcome; not the reads that had not returned (they observed
// nothing yet), nor the final reads. Sorted by call time, as the
// checkers expect.
func prefixAt(done, flying []Op, t int64) []Op {
	out := make([]Op, 0, len(done)+len(flying))
	for _, op := range done {
		switch {
		case op.Final || op.Call > t:
		case op.Return <= t:
			out = append(out, op)
		case op.write():
			out = append(out, inFlight(op, t))
		}
	}
	for _, op := range flying {
		if op.Call <= t {
			out = append(out, inFlight(op, t))
		}
	}
	slices.SortStableFunc(out, func(a, b Op) int { return compareInt(a.Call, b.Call) })
	return out
}

// inFlight is op as it was before it returned: what was sent, when, and
// an unknown outcome.
func inFlight(op Op, t int64) Op {
	return Op{Workload: op.Workload, Process: op.Process, Client: op.Client, Kind: op.Kind, Key: op.Key, To: op.To,
		Value: op.Value, Old: op.Old, N: op.N, Block: op.Block, Consumer: op.Consumer, IDs: op.IDs,
		Call: op.Call, Return: t, Outcome: Unknown, ErrKind: inFlightKind}
}

// writeText prints the live checks' line of the text summary, and each
// anomaly they found (the final check's ANOMALY lines are the verdict).
func (s *LiveSummary) writeText(w io.Writer) {
	if s == nil {
		fmt.Fprintln(w, "  live checks: off (--live-every 0)")
		return
	}
	fmt.Fprintf(w, "  live checks: %d during the run (every %s), the longest %.0f ms, %.0f ms in all; the last up to %s (%d operations)%s\n",
		s.Checks, s.Every, s.LongestMS, s.TotalMS, at(s.LastUpTo), s.LastOps, cappedText(s.Capped))
	for _, a := range s.Anomalies {
		fmt.Fprintf(w, "    found live at %s: %s [%s %s]\n", at(a.Found), a.Kind, a.Workload, a.Key)
	}
	if s.More > 0 {
		fmt.Fprintf(w, "    and %d more found live\n", s.More)
	}
}

func cappedText(capped bool) string {
	if !capped {
		return ""
	}
	return fmt.Sprintf("; stopped at %d operations, the rest checked at the end", liveMaxOps)
}

// view is the live verdict for the dashboard, now being the history's time.
func (l *liveChecker) view(now int64) *chaosui.LiveVerdict {
	s := l.summary()
	v := &chaosui.LiveVerdict{Checks: s.Checks, Ops: s.LastOps, UpToS: secs(s.LastUpTo), AgeS: secs(now - s.LastUpTo),
		Anomalies: []chaosui.Anomaly{}, More: s.More, Undecided: s.Undecided}
	for _, a := range s.Anomalies {
		v.Anomalies = append(v.Anomalies, chaosui.Anomaly{Kind: a.Kind, Text: firstLine(a.Text), AtS: secs(a.Found)})
	}
	if s.Capped {
		v.Capped = cappedText(true)[2:]
	}
	for _, wl := range l.wls {
		live, pending := wl.LiveRules()
		v.Checked = append(v.Checked, wl.Name()+": "+live)
		v.Pending = append(v.Pending, wl.Name()+": "+pending)
	}
	return v
}
