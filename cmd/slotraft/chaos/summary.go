package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Summary is the outcome of a run, printed as text or JSON (--json).
type Summary struct {
	Result    string               `json:"result"` // ok, anomalies, inconclusive, failed
	Error     string               `json:"error,omitempty"`
	Started   string               `json:"started"` // wall clock of time 0 of the history, to match the nodes' logs
	Seed      uint64               `json:"seed"`
	Target    []string             `json:"target,omitempty"` // --target: nodes, groups and replicas are the cluster's, not ours
	Nodes     int                  `json:"nodes"`
	Groups    int                  `json:"groups"`
	Replicas  int                  `json:"replicas"`
	Duration  string               `json:"duration"`
	Binary    string               `json:"binary"`
	Faults    []string             `json:"faults"`
	Workloads []string             `json:"workloads"`
	Schedule  []step               `json:"schedule"`
	Ops       map[string]*OpCounts `json:"ops"`
	Errors    map[string]int       `json:"errors"` // every failed attempt, by kind
	Injected  map[string]int       `json:"faults_injected"`
	Events    []Event              `json:"events"`
	Checks    []Verdict            `json:"checks"`
	Anomalies []Anomaly            `json:"anomalies"`
	Leaders   []LeaderSpan         `json:"leaders,omitempty"` // who believed it led which group, when
	Live      *LiveSummary         `json:"live,omitempty"`    // the checks run during the run (live.go)
	Report    string               `json:"report,omitempty"`
	Elapsed   string               `json:"elapsed"`

	ops    []Op              // the whole history, for the report
	errsAt map[errAt]int     // failed attempts per second, for the report
	viz    map[string][]byte // porcupine's visualisation per non-linearizable key
}

// OpCounts counts one workload's operations by outcome (final reads apart).
type OpCounts struct {
	Total   int     `json:"total"`
	OK      int     `json:"ok"`
	Fail    int     `json:"fail"`
	Unknown int     `json:"unknown"`
	Final   int     `json:"final_reads"`
	P50ms   float64 `json:"p50_ms"` // latency of the OK operations
	P99ms   float64 `json:"p99_ms"`
}

// check runs every workload's checker over the history and gathers the
// anomalies, with those the run saw itself: nodes that crashed, a cluster
// that did not recover once everything was healed.
func (r *chaosRun) check(ctx context.Context, recovered, finalErr error) *Summary {
	ops, events := r.h.snapshot()
	s := r.newSummary(ops, events)
	for _, wl := range r.wls {
		var v Verdict
		cctx, cancel := context.WithTimeout(ctx, checkBudget)
		if err := guard(func() { v = wl.Check(cctx, ops, events) }); err != nil {
			v = Verdict{Workload: wl.Name(), Result: "inconclusive: checker " + err.Error()}
		}
		cancel()
		s.Checks = append(s.Checks, v)
		s.Anomalies = append(s.Anomalies, v.Anomalies...)
		for k, b := range v.viz {
			s.viz[k] = b
		}
		r.say("check %s: %s", wl.Name(), v.Result)
	}
	r.mu.Lock()
	s.Anomalies = append(s.Anomalies, r.crashes...)
	r.mu.Unlock()
	if recovered != nil {
		s.Anomalies = append(s.Anomalies, Anomaly{Kind: "no recovery",
			Text: fmt.Sprintf("every fault was healed and every node runs, but: %v", recovered)})
	}
	if finalErr != nil {
		s.Anomalies = append(s.Anomalies, Anomaly{Kind: "unavailable after healing",
			Text: fmt.Sprintf("final reads did not succeed within %v: %v", finalWait, finalErr)})
	}
	s.Result = verdictOf(s)
	s.Elapsed = time.Since(r.begin).Round(100 * time.Millisecond).String()
	return s
}

func verdictOf(s *Summary) string {
	if len(s.Anomalies) > 0 {
		return "anomalies"
	}
	for _, v := range s.Checks {
		if v.Result != "ok" {
			return "inconclusive"
		}
	}
	return "ok"
}

func (r *chaosRun) newSummary(ops []Op, events []Event) *Summary {
	s := &Summary{
		Started: r.h.start.Format(time.RFC3339Nano), Seed: r.o.Seed, Nodes: r.o.Nodes, Groups: r.o.Groups, Replicas: r.o.Replicas,
		Duration: r.o.Duration.String(), Binary: r.o.Binary, Faults: r.o.Faults, Workloads: r.o.Workloads,
		Schedule: r.plan, Ops: map[string]*OpCounts{}, Errors: map[string]int{}, Injected: map[string]int{},
		Events: events, Anomalies: []Anomaly{}, Report: r.o.Report, Target: r.o.Target,
		ops: ops, errsAt: r.h.errCounts(), viz: map[string][]byte{},
	}
	lat := map[string][]int64{}
	for _, op := range ops {
		c := s.Ops[op.Workload]
		if c == nil {
			c = &OpCounts{}
			s.Ops[op.Workload] = c
		}
		if op.Final {
			c.Final++
			continue
		}
		c.Total++
		switch op.Outcome {
		case OK:
			c.OK++
			lat[op.Workload] = append(lat[op.Workload], op.Return-op.Call)
		case Fail:
			c.Fail++
		case Unknown:
			c.Unknown++
		}
	}
	for wl, l := range lat {
		slices.Sort(l)
		s.Ops[wl].P50ms = ms(l[len(l)/2])
		s.Ops[wl].P99ms = ms(l[len(l)*99/100])
	}
	for k, n := range s.errsAt {
		s.Errors[k.kind] += n
	}
	for _, e := range events {
		if e.Kind != "crash" && e.Err == "" {
			s.Injected[e.Kind]++
		}
	}
	return s
}

func ms(ns int64) float64 { return float64(ns/1000) / 1000 }

// writeJSON prints s as indented JSON.
func (s *Summary) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// writeText prints s for people: one line per anomaly, then the counts.
func (s *Summary) writeText(w io.Writer) {
	cluster := fmt.Sprintf("%d nodes, %d groups, %d replicas", s.Nodes, s.Groups, s.Replicas)
	if len(s.Target) > 0 {
		cluster = fmt.Sprintf("against %s, %d groups", strings.Join(s.Target, ","), s.Groups)
	}
	fmt.Fprintf(w, "\nchaos run: %s (seed %d, %s, %s of faults, %s in all)\n",
		strings.ToUpper(s.Result), s.Seed, cluster, s.Duration, s.Elapsed)
	if s.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", s.Error)
	}
	for _, a := range s.Anomalies {
		where := a.Workload
		if a.Key != "" {
			where += " " + a.Key
		}
		fmt.Fprintf(w, "ANOMALY %s [%s]: %s\n", a.Kind, strings.TrimSpace(where), a.Text)
	}
	for _, wl := range slices.Sorted(maps.Keys(s.Ops)) {
		c := s.Ops[wl]
		fmt.Fprintf(w, "  %-10s %6d ops: %d ok, %d failed, %d unknown; %d final reads; p50 %.1f ms, p99 %.1f ms\n",
			wl, c.Total, c.OK, c.Fail, c.Unknown, c.Final, c.P50ms, c.P99ms)
	}
	fmt.Fprintf(w, "  faults injected: %s\n", countsText(s.Injected))
	fmt.Fprintf(w, "  failed attempts by kind: %s\n", countsText(s.Errors))
	s.Live.writeText(w)
	for _, v := range s.Checks {
		fmt.Fprintf(w, "  check %-10s %s\n", v.Workload, v.Result)
		for _, n := range v.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	if s.Report != "" {
		fmt.Fprintf(w, "  report: %s\n", s.Report)
	}
}

// countsText renders counts as "kind n, …", largest first.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	kinds := slices.Collect(maps.Keys(m))
	slices.SortFunc(kinds, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
