package chaos

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// Recorded histories (testdata/*.jsonl.gz): the history.jsonl of real
// `chaos run --keep` runs, gzipped. testdata/README.md says how each was
// made.

// loadHistory reads a gzipped history.jsonl as keepHistory writes it.
func loadHistory(t *testing.T, path string) ([]Op, []Event) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var ops []Op
	var events []Event
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20) // a final read lists every member of a set
	for sc.Scan() {
		var line struct {
			Op    *Op    `json:"op"`
			Event *Event `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch {
		case line.Op != nil:
			ops = append(ops, *line.Op)
		case line.Event != nil:
			events = append(events, *line.Event)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(ops) == 0 {
		t.Fatalf("%s holds no operation", path)
	}
	return ops, events
}

// workloadsOf builds the workloads a history ran, with their keys from
// its final reads, as Setup would have picked them.
func workloadsOf(ops []Op) []Workload {
	keys := map[string][]string{}
	for _, op := range ops {
		if op.Final && !slices.Contains(keys[op.Workload], op.Key) {
			keys[op.Workload] = append(keys[op.Workload], op.Key)
		}
	}
	var wls []Workload
	for _, k := range workloadKinds {
		ks, ok := keys[k.name]
		if !ok {
			continue
		}
		switch wl := k.build().(type) {
		case *registers:
			wl.keys = ks
			wls = append(wls, wl)
		case *counters:
			wl.keys = ks
			wls = append(wls, wl)
		case *sets:
			wl.keys = ks
			wls = append(wls, wl)
		case *streams:
			wl.keys = slices.Compact(ks)
			wls = append(wls, wl)
		case *queues:
			for _, key := range ks {
				if q := unitOf(Op{Workload: "queues", Key: key}); !slices.Contains(wl.queues, q) {
					wl.queues = append(wl.queues, q)
				}
			}
			wls = append(wls, wl)
		}
	}
	return wls
}

// unitOf is the part of the history a workload checks on its own: a key,
// or a queue (its two lists).
func unitOf(op Op) string {
	if op.Workload == "queues" {
		q, _, _ := strings.Cut(op.Key, "}")
		return q + "}"
	}
	return op.Key
}

// byUnit splits a history's operations by unit, final reads included.
func byUnit(ops []Op) map[string][]Op {
	out := map[string][]Op{}
	for _, op := range ops {
		u := unitOf(op)
		out[u] = append(out[u], op)
	}
	return out
}

// cutTimes are the times at which a prefix of ops differs from the one
// just before: every call and return of an operation that is not a final
// read, sorted, once each.
func cutTimes(ops []Op) []int64 {
	var ts []int64
	for _, op := range ops {
		if !op.Final {
			ts = append(ts, op.Call, op.Return)
		}
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}
