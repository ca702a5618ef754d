package chaos

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The live verdict's promise: a check of a prefix of the history finds
// only anomalies that the final check of the whole history finds too, and
// it finds an anomaly as soon as the operations that show it are done.

// prefixBudget is porcupine's time per prefix in these tests: generous,
// so that a slow machine leaves no key undecided.
const prefixBudget = 20 * time.Second

// eachFixture runs test on every recorded history that matches pattern,
// with the workloads it ran.
func eachFixture(t *testing.T, pattern string, test func(t *testing.T, wls []Workload, ops []Op, events []Event)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures %s: %v", pattern, err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ops, events := loadHistory(t, path)
			test(t, workloadsOf(ops), ops, events)
		})
	}
}

// finalCheck runs every workload's final check on the whole history.
func finalCheck(t *testing.T, wls []Workload, ops []Op, events []Event) []Anomaly {
	t.Helper()
	var out []Anomaly
	for _, wl := range wls {
		v := wl.Check(context.Background(), ops, events)
		if strings.HasPrefix(v.Result, "inconclusive") {
			t.Fatalf("final check of %s: %s %v", wl.Name(), v.Result, v.Notes)
		}
		out = append(out, v.Anomalies...)
	}
	return out
}

// liveAt is what a live check finds on the prefix of ops at t.
func liveAt(t *testing.T, wls []Workload, ops []Op, at int64) []Anomaly {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), prefixBudget)
	defer cancel()
	found, undecided := checkPrefix(ctx, wls, prefixAt(ops, nil, at))
	if undecided > 0 {
		t.Errorf("prefix at %s: %d keys undecided", time.Duration(at), undecided)
	}
	return found
}

// TestLivePrefixesOfPassingHistories: on recorded histories that pass the
// final check, the live check finds nothing on any prefix: at every call
// and return time of every key (each key is checked on its own, so the
// prefixes of one key's operations are all the prefixes that matter),
// with the operations in flight at that time as of unknown outcome.
func TestLivePrefixesOfPassingHistories(t *testing.T) {
	eachFixture(t, "pass-*.jsonl.gz", func(t *testing.T, wls []Workload, ops []Op, events []Event) {
		if a := finalCheck(t, wls, ops, events); len(a) > 0 {
			t.Fatalf("the fixture does not pass its final check: %s", a[0].Text)
		}
		prefixes, inFlight := 0, 0
		for unit, uops := range byUnit(ops) {
			for _, at := range cutTimes(uops) {
				p := prefixAt(uops, nil, at)
				inFlight += countInFlight(p)
				prefixes++
				if found := liveAt(t, wls, uops, at); len(found) > 0 {
					t.Errorf("%s, prefix at %s: the live check reports %s: %s", unit, time.Duration(at), found[0].Kind, found[0].Text)
					break
				}
			}
		}
		if inFlight == 0 {
			t.Error("no prefix had an operation in flight: the fixture tests nothing of them")
		}
		t.Logf("%d operations, %d prefixes, %d operations in flight over them", len(ops), prefixes, inFlight)
	})
}

func countInFlight(ops []Op) int {
	n := 0
	for _, op := range ops {
		if op.ErrKind == inFlightKind {
			n++
		}
	}
	return n
}

// TestLiveCatchesPlantedBugs: on recorded histories of the planted-bug
// binaries, the live check finds, on the keys where the final check finds
// an anomaly, one of the same kind on the same key, before the end of the
// history: at the first prefix that holds the operations showing it. On
// the other keys it finds nothing.
func TestLiveCatchesPlantedBugs(t *testing.T) {
	eachFixture(t, "plant-*.jsonl.gz", func(t *testing.T, wls []Workload, ops []Op, events []Event) {
		final := finalCheck(t, wls, ops, events)
		if len(final) == 0 {
			t.Fatal("the fixture passes its final check: no planted bug to catch")
		}
		end := slices.Max(cutTimes(ops))
		caught := 0
		for unit, uops := range byUnit(ops) {
			cuts := cutTimes(uops)
			if len(cuts) == 0 {
				continue
			}
			i := firstCaught(t, wls, uops, cuts)
			if i < 0 {
				continue
			}
			found := liveAt(t, wls, uops, cuts[i])
			for _, a := range found {
				if !slices.ContainsFunc(final, func(f Anomaly) bool { return f.Kind == a.Kind && f.Key == a.Key }) {
					t.Errorf("%s: the live check found %s at %s, which the final check does not: %s", unit, a.Kind, time.Duration(cuts[i]), a.Text)
				}
			}
			if i > 0 && len(liveAt(t, wls, uops, cuts[i-1])) > 0 {
				t.Errorf("%s: found at %s but not before: the live rules are not monotone", unit, time.Duration(cuts[i]))
			}
			if cuts[i] >= end {
				t.Errorf("%s: found at %s, the end of the history", unit, time.Duration(cuts[i]))
			}
			caught++
			t.Logf("%s: %s found live at %s, %s before the end: %s", unit, found[0].Kind, time.Duration(cuts[i]).Round(time.Millisecond),
				time.Duration(end-cuts[i]).Round(time.Millisecond), firstLine(found[0].Text))
		}
		if caught == 0 {
			t.Errorf("the live check caught nothing; the final check found %d anomalies, the first %s: %s", len(final), final[0].Kind, final[0].Text)
		}
	})
}

// firstCaught is the index of the first cut whose prefix the live check
// flags (live anomalies persist as the prefix grows: binary search), -1
// if the whole unit passes.
func firstCaught(t *testing.T, wls []Workload, ops []Op, cuts []int64) int {
	t.Helper()
	if len(liveAt(t, wls, ops, cuts[len(cuts)-1])) == 0 {
		return -1
	}
	lo, hi := 0, len(cuts)-1 // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		if len(liveAt(t, wls, ops, cuts[mid])) > 0 {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

func TestPrefixAt(t *testing.T) {
	done := []Op{
		set(0, "a", 0, 10),
		get(1, "a", 5, 30), // returns after the cut: dropped
		set(2, "b", 8, 40), // returns after the cut: in flight
		get(3, "", 25, 26), // called after the cut
		{Workload: "registers", Kind: "GET", Key: "k", Final: true, Call: 1, Return: 2}, // a final read
	}
	flying := []Op{set(4, "c", 3, 3), set(5, "d", 21, 21)}
	got := prefixAt(done, flying, 20)
	var kinds []string
	for _, op := range got {
		kinds = append(kinds, op.Kind+" "+op.Value+" "+string(op.Outcome))
	}
	if want := "SET a ok,SET c unknown,SET b unknown"; strings.Join(kinds, ",") != want {
		t.Errorf("prefix %q, want %q", kinds, want)
	}
	for _, op := range got[1:] {
		if op.Return != 20 || op.ErrKind != inFlightKind || op.Result != "" {
			t.Errorf("in flight: %+v", op)
		}
	}
}

// TestPrefixRules: rules of the final check that a prefix cannot judge
// are not applied live, and those it can are.
func TestPrefixRules(t *testing.T) {
	push := func(e string) Op { return qop("LPUSH", "in", e, OK, 0, 10) }
	tests := []struct {
		name string
		wl   Workload
		ops  []Op
		want []string
	}{
		{"queue: out of proc, its move not recorded yet", &queues{}, []Op{push("a"), qop("BRPOP", "proc", "a", OK, 20, 30)}, nil},
		{"queue: delivered twice", &queues{}, []Op{push("a"), qop("RPOP", "in", "a", OK, 20, 30), qop("RPOP", "in", "a", OK, 40, 50)}, []string{"duplicate delivery"}},
		{"queue: pushed by an LPUSH in flight", &queues{}, []Op{inFlight(push("a"), 30), qop("RPOP", "in", "a", OK, 20, 30)}, nil},
		{"queue: no LPUSH", &queues{}, []Op{qop("RPOP", "in", "z", OK, 20, 30)}, []string{"phantom element"}},
		{"queue: not yet delivered", &queues{}, []Op{push("a")}, nil},
		{"counter: backwards", &counters{}, []Op{incr(5, Unknown, "", 0, 100), incr(1, OK, "6", 10, 20), incr(1, OK, "2", 30, 40)}, []string{"counter went backwards"}},
		{"counter: no final to bound", &counters{}, []Op{incr(2, OK, "2", 0, 10)}, nil},
		{"set: added twice", &sets{}, []Op{sadd("a", OK, "0")}, []string{"add applied twice"}},
		{"set: not read yet", &sets{}, []Op{sadd("a", OK, "1")}, nil},
		{"stream: delivered twice", &streams{}, []Op{xadd("a", "1-0", OK, 0, 10), xread("c1", OK, Entry{ID: "1-0", Value: "a"}), xread("c2", OK, Entry{ID: "1-0", Value: "a"})}, []string{"delivered twice"}},
		{"stream: entries not read yet", &streams{}, []Op{xadd("a", "1-0", OK, 0, 10), xadd("b", "2-0", OK, 20, 30)}, nil},
		{"register: value of a SET in flight", &registers{}, []Op{inFlight(set(0, "a", 0, 50), 50), get(1, "a", 10, 20)}, nil},
		{"register: value never written", &registers{}, []Op{get(1, "zz", 10, 20)}, []string{"phantom read"}},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			var kinds []string
			for _, a := range tt.wl.CheckPrefix(context.Background(), tt.ops).Anomalies {
				kinds = append(kinds, a.Kind)
			}
			if strings.Join(kinds, ",") != strings.Join(tt.want, ",") {
				t.Errorf("anomalies %q, want %q", kinds, tt.want)
			}
		})
	}
}

// TestLiveRoundsInFlight: a live round counts a write in flight (sent, not
// yet recorded) as of unknown outcome, so a read that already saw its
// value is no anomaly; without that record it would be a phantom read.
// A read of a value never written is caught by the next round.
func TestLiveRoundsInFlight(t *testing.T) {
	ctx := context.Background()
	for _, registered := range []bool{true, false} {
		h := newHistory()
		l := newLiveChecker(h, []Workload{&registers{}}, time.Hour)
		w := Op{Workload: "registers", Kind: "SET", Key: "k", Value: "a", Client: 0}
		w.Call = h.now()
		if registered {
			h.call(&w)
		}
		r := get(1, "a", h.now(), h.now()+1)
		h.add(r)
		l.round(ctx, false)
		s := l.summary()
		if registered != (len(s.Anomalies) == 0) {
			t.Fatalf("write in flight registered %v: live anomalies %+v", registered, s.Anomalies)
		}
		if !registered {
			continue
		}
		w.Return, w.Outcome, w.Result = h.now(), OK, "OK"
		h.add(w)
		if len(h.inflight) != 0 {
			t.Errorf("a recorded write stays in flight: %v", h.inflight)
		}
		h.add(get(2, "zz", h.now(), h.now()+1))
		l.round(ctx, true)
		s = l.summary()
		if s.Checks != 2 || s.LastOps != 3 || !s.Ended || len(s.Anomalies) != 1 || s.Anomalies[0].Kind != "phantom read" || s.Anomalies[0].Found == 0 {
			t.Errorf("after a read of a value never written: %+v", s)
		}
	}
}

// slowPrefix is a workload whose live check takes a while and records
// when it ran.
type slowPrefix struct {
	registers
	took time.Duration

	mu   sync.Mutex
	runs [][2]time.Time
}

func (w *slowPrefix) CheckPrefix(context.Context, []Op) Verdict {
	began := time.Now()
	time.Sleep(w.took) // stands for a check that takes this long
	w.mu.Lock()
	w.runs = append(w.runs, [2]time.Time{began, time.Now()})
	w.mu.Unlock()
	return Verdict{Workload: "slow", Result: "ok"}
}

func (w *slowPrefix) rounds() [][2]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.runs)
}

// TestLiveLoopPacing: rounds never overlap, each starts no sooner than
// liveSpacing times the last one's length after it, the workloads' end
// asks for a round at once, and stop waits for the rounds to end.
func TestLiveLoopPacing(t *testing.T) {
	wl := &slowPrefix{took: 20 * time.Millisecond}
	l := newLiveChecker(newHistory(), []Workload{wl}, 5*time.Millisecond)
	l.start(context.Background())
	deadline := time.Now().Add(30 * time.Second)
	for len(wl.rounds()) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rounds in 30 s", len(wl.rounds()))
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	l.workloadsStopped()
	s := l.stop()
	runs := wl.rounds()
	for i := 1; i < len(runs); i++ {
		took, gap := runs[i-1][1].Sub(runs[i-1][0]), runs[i][0].Sub(runs[i-1][1])
		if gap < liveSpacing*took && i != len(runs)-1 { // the last may be the one the workloads' end asked for
			t.Errorf("round %d began %v after round %d, which took %v", i, gap, i-1, took)
		}
	}
	if !s.Ended || s.Checks != len(runs) || s.LongestMS < 20 {
		t.Errorf("summary %+v after %d rounds", s, len(runs))
	}
	if n := len(wl.rounds()); n != len(runs) {
		t.Errorf("%d rounds after stop", n-len(runs))
	}
}

// TestLiveSummaryAndView: the summary's line, each anomaly found live, and
// the dashboard's view of them.
func TestLiveSummaryAndView(t *testing.T) {
	l := newLiveChecker(newHistory(), []Workload{&registers{}, &counters{}}, 5*time.Second)
	found := []Anomaly{{Workload: "registers", Kind: "stale read", Key: "k", Text: "GET k returned \"1\"\nmore"}}
	l.record(40*time.Millisecond, 120, 12e9, false, false, found, 1)
	l.record(90*time.Millisecond, 300, 17e9, false, true, append(found, found...), 0)
	s := l.summary()
	var b strings.Builder
	s.writeText(&b)
	for _, want := range []string{"live checks: 2 during the run (every 5s), the longest 90 ms, 130 ms in all; the last up to 17.000s (300 operations)",
		"found live at 12.000s: stale read [registers k]"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	if !s.Ended || len(s.Anomalies) != 1 || len(s.Pending) != 2 {
		t.Errorf("summary %+v", s)
	}
	v := l.view(20e9)
	if v.Checks != 2 || v.Ops != 300 || v.UpToS != 17 || v.AgeS != 3 || len(v.Anomalies) != 1 || v.Anomalies[0].Text != `GET k returned "1"` ||
		v.Anomalies[0].AtS != 12 || len(v.Checked) != 2 || !strings.HasPrefix(v.Pending[1], "counters: lost and phantom increments") {
		t.Errorf("view %+v", v)
	}
	b.Reset()
	(*LiveSummary)(nil).writeText(&b)
	if !strings.Contains(b.String(), "live checks: off") {
		t.Errorf("no live checks: %q", b.String())
	}
}
