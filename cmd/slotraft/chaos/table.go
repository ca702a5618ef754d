package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// `slotraft chaos table FILE.json...` prints one row per run summary
// (written by `chaos run --json`) and a total: what `make chaos` shows
// after its runs.

// runTable reads the summaries and writes the table (a file that holds no
// summary is a failed run), and reports whether every run passed.
func runTable(paths []string, w io.Writer) (allOK bool, err error) {
	if len(paths) == 0 {
		return false, fmt.Errorf("%w: name the JSON summaries of the runs", errUsage)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tseed\tresult\tops\tok\tunknown\tfailed\tfaults injected\tanomalies\telapsed")
	var total struct{ runs, ok, ops, okOps, unknown, failed, faults, anomalies int }
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		total.runs++
		s, err := readSummary(p)
		if err != nil {
			// A run that could not be carried out printed no summary.
			fmt.Fprintf(tw, "%s\t\tno summary: %v\t\t\t\t\t\t\t\n", name, err)
			continue
		}
		var c OpCounts
		for _, oc := range s.Ops {
			c.Total, c.OK, c.Unknown, c.Fail = c.Total+oc.Total, c.OK+oc.OK, c.Unknown+oc.Unknown, c.Fail+oc.Fail
		}
		faults := 0
		for _, n := range s.Injected {
			faults += n
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d (%s)\t%d\t%s\n", name,
			s.Seed, s.Result, c.Total, c.OK, c.Unknown, c.Fail, faults, countsText(s.Injected), len(s.Anomalies), s.Elapsed)
		if s.Result == "ok" {
			total.ok++
		}
		total.ops, total.okOps, total.unknown, total.failed = total.ops+c.Total, total.okOps+c.OK, total.unknown+c.Unknown, total.failed+c.Fail
		total.faults += faults
		total.anomalies += len(s.Anomalies)
	}
	fmt.Fprintf(tw, "total\t\t%d/%d ok\t%d\t%d\t%d\t%d\t%d\t%d\t\n", total.ok, total.runs, total.ops, total.okOps, total.unknown, total.failed, total.faults, total.anomalies)
	return total.ok == total.runs, tw.Flush()
}

// readSummary reads one run's JSON summary.
func readSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: not a chaos run summary: %w", path, err)
	}
	if s.Result == "" {
		return nil, fmt.Errorf("%s: not a chaos run summary (no result)", path)
	}
	return &s, nil
}
