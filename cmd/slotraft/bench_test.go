package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/internal/testports"
)

// The bench tests run each `slotraft bench` workload for a tiny count and
// check that its output is well formed and its counts add up; they assert
// nothing about speed.

// TestBenchAgainstProcesses runs the workloads against three `slotraft
// server` processes, the failover last since it kills a node.
func TestBenchAgainstProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes: skipped with -short")
	}
	c := startTestCluster(t, buildSlotraft(t), 3)
	c.waitOK(t)
	addrs := make([]string, len(c.nodes))
	pids := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.client
		pids[i] = n.client + "=" + strconv.Itoa(n.cmd.Process.Pid)
	}
	all := strings.Join(addrs, ",")

	t.Run("tx", func(t *testing.T) {
		rows := runBenchCSV(t, "tx", "--addrs", all, "--cluster", "--clients", "4", "--requests", "200", "--timeout", "60s", "--csv")
		row := oneRow(t, rows, txTest)
		// A leader change may fail a transaction; the tool itself checked
		// that the server's counters match its successes.
		if row.count+row.errors != 200 || row.count == 0 {
			t.Fatalf("tx row %+v: want 200 transactions counted, most of them ok", row)
		}
	})

	t.Run("pubsub", func(t *testing.T) {
		rows := runBenchCSV(t, "pubsub", "--addrs", all, "--subscribers", "1,3", "--messages", "50", "--publishers", "2", "--timeout", "60s", "--csv")
		for _, subs := range []int{1, 3} {
			row := oneRow(t, rows, "PUBSUB-"+strconv.Itoa(subs))
			if row.na {
				continue // pub/sub not implemented by this build
			}
			if row.count+row.errors != subs*50 {
				t.Fatalf("pubsub row %+v: want %d deliveries accounted for", row, subs*50)
			}
		}
	})

	t.Run("memory", func(t *testing.T) {
		// 3 nodes, 3 replicas per group: every node holds every key.
		checkMemoryRows(t, 2000, 3, "--addrs", all, "--cluster", "--keys", "2000", "--expire", "1h", "--settle", "300ms", "--timeout", "60s", "--csv")
	})

	t.Run("eviction", func(t *testing.T) {
		checkEvictionRow(t, 4000, "--addrs", all, "--cluster", "--maxmemory", "200kb", "--keys", "5000",
			"--ops", "5000", "--warmup", "1000", "--clients", "4", "--timeout", "120s")
	})

	t.Run("failover", func(t *testing.T) {
		var out, errOut bytes.Buffer
		args := []string{"bench", "failover", "--addrs", all, "--pids", strings.Join(pids, ","),
			"--writers", "2", "--keys", "4", "--warmup", "300ms", "--tail", "200ms", "--balance-wait", "5s", "--max-wait", "60s", "--timeout", "120s", "--csv"}
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("slotraft %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
		}
		t.Logf("stdout:\n%sstderr:\n%s", out.String(), errOut.String())
		recs := readCSV(t, out.String())
		if len(recs) != 2 || strings.Join(recs[0], ",") != strings.ReplaceAll(failoverCSVHeader, `"`, "") {
			t.Fatalf("want the failover header and one row, got %q", recs)
		}
		r := recs[1]
		if len(r) != 9 || r[0] != failoverTest {
			t.Fatalf("bad failover row %q", r)
		}
		victim := c.nodeByAddr(t, r[1])
		if r[2] != strconv.Itoa(victim.cmd.Process.Pid) {
			t.Fatalf("row names pid %s, but %s is pid %d", r[2], victim.id, victim.cmd.Process.Pid)
		}
		select {
		case <-victim.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s (pid %d) still running after the failover bench", victim.id, victim.cmd.Process.Pid)
		}
		recovery, gap := number(t, r[3]), number(t, r[4])
		okBefore, okAfter, failed, failedAfter := number(t, r[5]), number(t, r[6]), number(t, r[7]), number(t, r[8])
		if recovery < 0 || gap < recovery || okBefore < 1 || okAfter < 1 || failedAfter > failed {
			t.Fatalf("failover row %q: want 0 <= recovery <= gap and successes on both sides of the kill", r)
		}
	})
}

// TestBenchAgainstRedisServer runs tx and pubsub against a redis-server,
// where no message may be lost and no transaction may fail.
func TestBenchAgainstRedisServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a redis-server: skipped with -short")
	}
	addr := startRedisServer(t)
	t.Run("tx", func(t *testing.T) {
		rows := runBenchCSV(t, "tx", "--addrs", addr, "--clients", "4", "--requests", "200", "--timeout", "60s", "--csv")
		if row := oneRow(t, rows, txTest); row.count != 200 || row.errors != 0 {
			t.Fatalf("tx row %+v: want 200 ok, 0 errors", row)
		}
	})
	t.Run("memory", func(t *testing.T) {
		checkMemoryRows(t, 1500, 1, "--addrs", addr, "--keys", "1500", "--settle", "300ms", "--timeout", "60s", "--csv")
	})
	t.Run("pubsub", func(t *testing.T) {
		rows := runBenchCSV(t, "pubsub", "--addrs", addr, "--subscribers", "1,3", "--messages", "100", "--publishers", "2", "--timeout", "60s", "--csv")
		for _, subs := range []int{1, 3} {
			row := oneRow(t, rows, "PUBSUB-"+strconv.Itoa(subs))
			if row.na || row.count != subs*100 || row.errors != 0 {
				t.Fatalf("pubsub row %+v: want %d deliveries, 0 lost", row, subs*100)
			}
		}
	})
	t.Run("eviction", func(t *testing.T) {
		// Above redis-server's own baseline of about a megabyte.
		checkEvictionRow(t, 15000, "--addrs", addr, "--maxmemory", "2mb", "--keys", "30000",
			"--ops", "20000", "--warmup", "5000", "--clients", "4", "--timeout", "60s")
	})
}

// checkEvictionRow runs `slotraft bench eviction` with args (a trace that
// outgrows maxmemory) and checks its CSV: every lookup after the warm-up
// counted, no error, keys evicted, a hit rate strictly between 0 and 100.
func checkEvictionRow(t *testing.T, lookups int, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"bench", "eviction", "--csv"}, args...)
	if code := run(full, &out, &errOut); code != 0 {
		t.Fatalf("slotraft %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(full, " "), code, out.String(), errOut.String())
	}
	t.Logf("stdout:\n%s", out.String())
	recs := readCSV(t, out.String())
	if len(recs) != 2 || len(recs[1]) != 7 {
		t.Fatalf("want the eviction header and one row of 7 fields, got %q", recs)
	}
	r := recs[1]
	if number(t, r[0]) != float64(lookups) || number(t, r[3]) != 0 || number(t, r[4]) <= 0 {
		t.Fatalf("eviction row %q: want %d lookups, no error, keys evicted", r, lookups)
	}
	if rate := number(t, r[2]); rate <= 0 || rate >= 100 {
		t.Fatalf("eviction row %q: hit rate %v", r, rate)
	}
}

// checkMemoryRows runs `slotraft bench memory` with args and checks its
// CSV: one row per node, each with the keys it gained (want) and readings
// that parse, then the mean row. Memory figures of a few thousand keys are
// noise, so their values are not checked.
func checkMemoryRows(t *testing.T, want, nodes int, args ...string) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"bench", "memory"}, args...)
	if code := run(full, &out, &errOut); code != 0 {
		t.Fatalf("slotraft %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(full, " "), code, out.String(), errOut.String())
	}
	t.Logf("stdout:\n%sstderr:\n%s", out.String(), errOut.String())
	recs := readCSV(t, out.String())
	if len(recs) != nodes+2 || strings.Join(recs[0], ",") != strings.ReplaceAll(memoryCSVHeader, `"`, "") {
		t.Fatalf("want the memory header, %d node rows and the mean, got %q", nodes, recs)
	}
	for _, r := range recs[1 : nodes+1] {
		if len(r) != 8 || number(t, r[1]) != float64(want) {
			t.Fatalf("node row %q: want 8 fields and %d keys gained", r, want)
		}
		for _, f := range r[2:6] {
			if number(t, f) <= 0 {
				t.Fatalf("node row %q: a memory reading is not positive", r)
			}
		}
	}
	if mean := recs[nodes+1]; len(mean) != 8 || mean[0] != "mean" {
		t.Fatalf("last row %q: want the mean", mean)
	} else {
		number(t, mean[6])
		number(t, mean[7])
	}
}

// TestBenchUsage checks the command line errors.
func TestBenchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"bench"},
		{"bench", "nope"},
		{"bench", "tx"},
		{"bench", "tx", "--addrs", "127.0.0.1:1", "--clients", "0"},
		{"bench", "pubsub", "--addrs", "127.0.0.1:1", "--subscribers", "1,x"},
		{"bench", "failover", "--addrs", "127.0.0.1:1"},
		{"bench", "memory", "--addrs", "127.0.0.1:1", "--keys", "0"},
		{"bench", "failover", "--addrs", "127.0.0.1:1", "--pids", "127.0.0.1:1"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("slotraft %q: exit %d, want 2 (usage)\n%s", args, code, errOut.String())
		}
	}
}

func TestPercentile(t *testing.T) {
	var samples []time.Duration
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	s := summarize(samples, 3, time.Second)
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"min", s.min, time.Millisecond}, {"p50", s.p50, 50 * time.Millisecond},
		{"p95", s.p95, 95 * time.Millisecond}, {"p99", s.p99, 99 * time.Millisecond},
		{"max", s.max, 100 * time.Millisecond}, {"avg", s.avg, 50500 * time.Microsecond},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.count != 100 || s.errors != 3 || s.rate() != 100 {
		t.Errorf("summary %+v: want 100 samples, 3 errors, 100/s", s)
	}
	if one := summarize([]time.Duration{7}, 0, 0); one.p50 != 7 || one.p99 != 7 || one.rate() != 0 {
		t.Errorf("one sample: %+v", one)
	}
}

// benchRow is one parsed result row.
type benchRow struct {
	test          string
	na            bool
	rps           float64
	count, errors int
}

// runBenchCSV runs `slotraft bench WORKLOAD ARGS…` in-process and parses
// its CSV, failing on a non-zero exit or a malformed row.
func runBenchCSV(t *testing.T, workload string, args ...string) []benchRow {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"bench", workload}, args...)
	if code := run(full, &out, &errOut); code != 0 {
		t.Fatalf("slotraft %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(full, " "), code, out.String(), errOut.String())
	}
	t.Logf("stdout:\n%sstderr:\n%s", out.String(), errOut.String())
	recs := readCSV(t, out.String())
	if len(recs) < 2 || strings.Join(recs[0], ",") != strings.ReplaceAll(benchCSVHeader, `"`, "") {
		t.Fatalf("want the CSV header and rows, got %q", recs)
	}
	var rows []benchRow
	for _, r := range recs[1:] {
		if len(r) != 10 {
			t.Fatalf("row %q: %d fields, want 10", r, len(r))
		}
		row := benchRow{test: r[0], na: r[1] == "n/a"}
		if !row.na {
			row.rps = number(t, r[1])
			var lat []float64 // min, p50, p95, p99, max
			for _, f := range r[3:8] {
				lat = append(lat, number(t, f))
			}
			if number(t, r[2]) < 0 || !slices.IsSorted(lat) {
				t.Fatalf("row %q: want min <= p50 <= p95 <= p99 <= max", r)
			}
		}
		row.count, row.errors = int(number(t, r[8])), int(number(t, r[9]))
		rows = append(rows, row)
	}
	return rows
}

func readCSV(t *testing.T, s string) [][]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(s)).ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v\n%s", err, s)
	}
	return recs
}

func number(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return f
}

func oneRow(t *testing.T, rows []benchRow, test string) benchRow {
	t.Helper()
	var found []benchRow
	for _, r := range rows {
		if r.test == test {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %s row, got %+v", test, rows)
	}
	return found[0]
}

func (c *testCluster) nodeByAddr(t *testing.T, addr string) *testNode {
	t.Helper()
	for _, n := range c.nodes {
		if n.client == addr {
			return n
		}
	}
	t.Fatalf("%s is not a node of the test cluster", addr)
	return nil
}

// startRedisServer runs a redis-server without persistence on a free
// loopback port until the test ends. Without redis-server the test is
// skipped, except in CI.
func startRedisServer(t *testing.T) string {
	t.Helper()
	return startRedisServerIn(t, t.TempDir(), "dump.rdb")
}

// startRedisServerIn is startRedisServer keeping its data in dir/dbfile,
// which it loads at start when the file exists.
func startRedisServerIn(t *testing.T, dir, dbfile string) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found in CI (`make test` installs it): %v", err)
		}
		t.Skip("redis-server not found: install redis-server (or run `make test`)")
	}
	port := testports.Free(t, 1)[0]
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--dbfilename", dbfile,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log"))
	done := startUntilCleanup(t, cmd, "redis-server")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("redis-server exited: see %s", filepath.Join(dir, "redis.log"))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s not accepting connections after 30s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}

// FuzzParseSendTime feeds arbitrary pub/sub payloads to the parser of the
// embedded send time: it must not panic, and what it accepts must round-trip.
func FuzzParseSendTime(f *testing.F) {
	for _, s := range []string{"m123:xxxx", "m:", "m", "m-5:", "m99999999999999999999:", "w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		if payload == "" {
			return // the receiver skips empty payloads before parsing
		}
		d, ok := parseSendTime(payload)
		if !ok {
			return
		}
		digits, _, _ := strings.Cut(payload[1:], ":")
		if n, err := strconv.ParseInt(digits, 10, 64); err != nil || time.Duration(n) != d {
			t.Fatalf("parseSendTime(%q) = %v, true; digits %q", payload, d, digits)
		}
	})
}

// TestBenchReshardTiny runs make bench-reshard's workload on a few keys:
// the bench starts its own servers (from the slotraft binary, so it runs
// as a child process here), moves a third of the slots under client load,
// and must report no client error and every key read back.
func TestBenchReshardTiny(t *testing.T) {
	bin := buildSlotraft(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "bench", "reshard", "--keys", "3000", "--before", "1s",
		"--rate", "100", "--conns", "4", "--max-move", "3m", "--timeout", "4m").CombinedOutput()
	if err != nil {
		t.Fatalf("slotraft bench reshard: %v\n%s", err, out)
	}
	for _, want := range []string{"SAVE on 3 nodes", "moved 5460/5460 slots", "client errors: 0", "3000 keys, 0 missing, 0 wrong"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("bench reshard output lacks %q:\n%s", want, out)
		}
	}
}
