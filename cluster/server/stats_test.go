package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// TestHistBuckets: every value falls in a bucket whose highest value is
// at or above it and within 1/32 of it; buckets are in order.
func TestHistBuckets(t *testing.T) {
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 1023, 1024, 999_999, 1 << 40, 1<<41 - 1} {
		i := histIndex(v)
		hi := histHighest(i)
		if hi < v || float64(hi-v) > float64(v)/32+1 {
			t.Errorf("value %d: bucket %d holds up to %d", v, i, hi)
		}
		if i > 0 && histHighest(i-1) >= v {
			t.Errorf("value %d: bucket %d's predecessor holds up to %d", v, i, histHighest(i-1))
		}
	}
	if i := histIndex(1 << 50); i != histBuckets-1 {
		t.Errorf("2^50 in bucket %d, want the last, %d", i, histBuckets-1)
	}
}

func TestHistPercentiles(t *testing.T) {
	var h latencyHist
	for v := uint64(1); v <= 1000; v++ {
		h.record(v * 1000) // 1 µs … 1 ms
	}
	for _, tc := range []struct {
		p      float64
		lo, hi uint64
	}{{50, 500_000, 516_000}, {99, 990_000, 1_022_000}, {100, 1_000_000, 1_032_000}, {0, 1000, 1032}} {
		if got := h.percentile(tc.p); got < tc.lo || got > tc.hi {
			t.Errorf("p%v = %d, want in [%d, %d]", tc.p, got, tc.lo, tc.hi)
		}
	}
	var bounds []string
	h.cumulative(func(b, n uint64) { bounds = append(bounds, fmt.Sprintf("%d=%d", b, n)) })
	want := "1=1 2=2 4=4 8=8 16=16 32=32 65=65 131=131 262=262 524=524 1048=1000"
	if got := strings.Join(bounds, " "); got != want {
		t.Errorf("cumulative: %s\nwant        %s", got, want)
	}
}

// TestSlowArgv: Redis's truncation of a slow log entry's arguments.
func TestSlowArgv(t *testing.T) {
	long := strings.Repeat("x", 200)
	many := make([][]byte, 40)
	for i := range many {
		many[i] = []byte(fmt.Sprint(i))
	}
	for _, tc := range []struct {
		name string
		args [][]byte
		want []string
	}{
		{"short", cluster.Argv("set", "k", "v"), []string{"set", "k", "v"}},
		{"long argument", cluster.Argv("set", "k", long), []string{"set", "k", long[:128] + "... (72 more bytes)"}},
		{"exactly 128", cluster.Argv(long[:128]), []string{long[:128]}},
		{"many arguments", many, append(strings.Fields("0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30"), "... (9 more arguments)")},
	} {
		var got []string
		for _, a := range slowArgv(tc.args) {
			got = append(got, string(a))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestSlowlogLimits: negative threshold logs nothing, 0 everything;
// slowlog-max-len keeps the newest; ids go on after a RESET.
func TestSlowlogLimits(t *testing.T) {
	var ss statsSettings
	var l slowlog
	ss.slowlogSlower.Store(-1)
	ss.slowlogMaxLen.Store(2)
	l.add(&ss, nil, cluster.Argv("get", "a"), time.Second)
	if len(l.entries) != 0 {
		t.Fatalf("logged with a negative threshold: %v", l.entries)
	}
	ss.slowlogSlower.Store(1000)
	l.add(&ss, nil, cluster.Argv("get", "fast"), 999*time.Microsecond)
	ss.slowlogSlower.Store(0)
	for _, k := range []string{"a", "b", "c"} {
		l.add(&ss, nil, cluster.Argv("get", k), 0)
	}
	if len(l.entries) != 2 || string(l.entries[0].argv[1]) != "c" || l.entries[0].id != 2 || string(l.entries[1].argv[1]) != "b" {
		t.Fatalf("entries: %+v", l.entries)
	}
}

// TestLatencyGraph: Redis's sparkline (sparklineRenderRange, filled, 4
// rows) for three samples, worked out by hand from its code.
func TestLatencyGraph(t *testing.T) {
	samples := []latencySample{{at: 100, ms: 10}, {at: 101, ms: 20}, {at: 130, ms: 40}}
	got := latencyGraph("command", samples, 40, 130)
	want := "command - high 40 ms, low 10 ms (all time high 40 ms)\n" + strings.Repeat("-", 80) + "\n" +
		"  #\n" + "  |\n" + " o|\n" + "_||\n" + "   \n" + "320\n" + "09s\n" + "ss \n"
	if got != want {
		t.Errorf("graph:\n%s\nwant:\n%s", got, want)
	}
	// As redis-server 7.0 drew two DEBUG SLEEPs of 20 and 40 ms a second apart.
	got = latencyGraph("command", []latencySample{{at: 99, ms: 20}, {at: 100, ms: 40}}, 40, 100)
	want = "command - high 40 ms, low 20 ms (all time high 40 ms)\n" + strings.Repeat("-", 80) + "\n" +
		" #\n" + " |\n" + " |\n" + "_|\n" + "  \n" + "10\n" + "ss\n"
	if got != want {
		t.Errorf("graph:\n%s\nwant (redis-server's):\n%s", got, want)
	}
}

// TestLatencyMonitor: samples of one second fold into their maximum,
// the threshold gates them, RESET counts what it forgets.
func TestLatencyMonitor(t *testing.T) {
	var ss statsSettings
	var m latencyMonitor
	m.sample(&ss, "command", time.Second) // threshold 0: off
	if len(m.events) != 0 {
		t.Fatal("sampled while off")
	}
	m.add("command", 10, 5)
	m.add("command", 10, 7)
	m.add("command", 11, 3)
	ts := m.events["command"]
	if len(ts.samples) != 2 || ts.samples[0].ms != 7 || ts.max != 7 {
		t.Fatalf("series: %+v", ts)
	}
	if st := analyzeLatency(ts, 20); st != (latencyStats{samples: 2, avg: 5, mad: 2, period: 10}) {
		t.Errorf("analysis: %+v", st)
	}
}

// TestInfoSections: Redis 7.2's section selection.
func TestInfoSections(t *testing.T) {
	for _, tc := range []struct {
		args string
		want string
	}{
		{"", "Server Clients Memory Persistence Stats Replication CPU Modules Errorstats Cluster Keyspace"},
		{"default", "Server Clients Memory Persistence Stats Replication CPU Modules Errorstats Cluster Keyspace"},
		{"all", "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Latencystats Cluster Keyspace"},
		{"everything", "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Latencystats Cluster Keyspace"},
		{"COMMANDSTATS server", "Server Commandstats"},
		{"default commandstats", "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Cluster Keyspace"},
		{"module_list MODULES", "Modules"},
		{"debug", ""},
		{"nosuch", ""},
	} {
		wanted := infoWanted(cluster.Argv(strings.Fields(tc.args)...))
		var got []string
		for _, sec := range infoSections {
			if wanted(sec) {
				got = append(got, sec.name)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("INFO %s: %v, want %s", tc.args, got, tc.want)
		}
	}
}

// infoField is field's value in an INFO reply ("" if absent).
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// TestCommandAccounting: calls, failed and rejected calls per command and
// subcommand, errors by code, keyspace hits and misses, MULTI/EXEC, the
// slow log and CONFIG RESETSTAT on a live server.
func TestCommandAccounting(t *testing.T) {
	do := singleNodeDo(t)
	do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	do("CONFIG", "RESETSTAT")
	do("SLOWLOG", "RESET")
	for _, cmd := range [][]string{
		{"SET", "k", "v"}, {"GET", "k"}, {"GET", "nokey"}, {"LPUSH", "k", "x"}, {"GET"}, {"NOSUCH"},
		{"CONFIG", "GET", "maxclients"}, {"MULTI"}, {"INCR", "n"}, {"LPUSH", "n", "x"}, {"GET"}, {"EXEC"},
		{"MULTI"}, {"INCR", "n"}, {"LPUSH", "n", "x"}, {"EXEC"},
	} {
		do(cmd...)
	}
	info := do("INFO", "commandstats", "errorstats", "stats")
	for field, want := range map[string]string{
		"errorstat_ERR":       "count=3",
		"errorstat_WRONGTYPE": "count=2",
		"errorstat_EXECABORT": "count=1",
		"total_error_replies": "6",
		"keyspace_hits":       "1",
		"keyspace_misses":     "1",
	} {
		if got := infoField(info, field); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	for field, want := range map[string]string{
		"cmdstat_get":        "calls=2,rejected_calls=2,failed_calls=0",
		"cmdstat_lpush":      "calls=2,rejected_calls=0,failed_calls=2",
		"cmdstat_incr":       "calls=1,rejected_calls=0,failed_calls=0",
		"cmdstat_config|get": "calls=1,rejected_calls=0,failed_calls=0",
		"cmdstat_exec":       "calls=2,rejected_calls=0,failed_calls=1",
	} {
		got := infoField(info, field)
		parts := strings.Split(got, ",")
		if len(parts) != 5 || parts[0]+","+parts[3]+","+parts[4] != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	if got := do("SLOWLOG", "LEN"); got == ":0" {
		t.Errorf("SLOWLOG LEN %s with slowlog-log-slower-than 0", got)
	}
	if got := do("SLOWLOG", "GET", "2"); !strings.Contains(got, "[INFO commandstats errorstats stats]") { // after SLOWLOG LEN itself
		t.Errorf("SLOWLOG GET 2: %s", got)
	}
	do("CONFIG", "RESETSTAT")
	info = do("INFO", "everything")
	for _, field := range []string{"cmdstat_get", "errorstat_ERR", "latency_percentiles_usec_get"} {
		if got := infoField(info, field); got != "" {
			t.Errorf("%s after RESETSTAT: %q", field, got)
		}
	}
	for _, field := range []string{"total_error_replies", "keyspace_hits", "keyspace_misses"} {
		if got := infoField(info, field); got != "0" {
			t.Errorf("%s after RESETSTAT: %q", field, got)
		}
	}
	if got := do("SLOWLOG", "LEN"); got == ":0" {
		t.Errorf("RESETSTAT emptied the slow log")
	}
}

// BenchmarkAccounting is the accounting's cost per command on the hot
// path: finding the command's counters, reading the clock once, counting
// the call, its time and its histogram, with the slow log and the
// latency monitor off (serveRun reads the start time anyway).
func BenchmarkAccounting(b *testing.B) {
	s := testServer()
	s.statsCfg.slowlogSlower.Store(-1)
	s.statsCfg.tracking.Store(true)
	s.table = commands()
	s.cstats = newCmdStats(s.table.meta)
	get := s.table.lookup([]byte("get"))
	args := cluster.Argv("GET", "key")
	v := resp.BulkString("value")
	start := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.finish(nil, get.meta, args, time.Since(start), v, false)
		}
	})
}

// TestInstantaneous: each sample is a rate per second since the one
// before; the metric is their mean over 16 samples.
func TestInstantaneous(t *testing.T) {
	var is instSamples
	at := time.Unix(1000, 0)
	is.sample(at, [instMetrics]int64{0, 0, 0}) // the first only sets the base
	for i := 1; i <= 8; i++ {
		at = at.Add(100 * time.Millisecond)
		is.sample(at, [instMetrics]int64{int64(i) * 100, int64(i) * 1024, 0})
	}
	// 8 samples of 1000 ops/s and 10240 B/s, 8 not taken yet (0).
	if got := is.rate(instOps); got != 500 {
		t.Errorf("ops/s %v, want 500", got)
	}
	if got := is.rate(instNetIn); got != 5120 {
		t.Errorf("input B/s %v, want 5120", got)
	}
	is.reset()
	if got := is.rate(instOps); got != 0 {
		t.Errorf("after reset: %v", got)
	}
}

// TestErrorCodes: codes are the text before the first space; at most
// maxErrorCodes are tracked, the total counts every error.
func TestErrorCodes(t *testing.T) {
	cs := newCmdStats(commands().meta)
	cs.errorReply(resp.Err(resp.ErrWrongType))
	cs.errorReply(resp.Err(resp.NewError("NOSPACE")))
	for i := range maxErrorCodes + 5 {
		cs.errorReply(resp.Err(resp.NewError(fmt.Sprintf("E%d some text", i))))
	}
	got := cs.errorCounts()
	if len(got) != maxErrorCodes || cs.errTotal.Load() != maxErrorCodes+7 {
		t.Fatalf("%d codes, total %d", len(got), cs.errTotal.Load())
	}
	want := map[string]bool{"errorstat_WRONGTYPE": true, "errorstat_NOSPACE": true, "errorstat_E0": true}
	for _, f := range got {
		delete(want, f[0])
	}
	if len(want) != 0 {
		t.Errorf("missing %v in %v", want, got)
	}
}

// TestLatencyDoctor: the report for two spikes of the command event, as
// redis-server 7.0 wrote it for two DEBUG SLEEPs (20 and 40 ms, one
// second apart) with latency-monitor-threshold 5, the slow log at its
// default and then off.
func TestLatencyDoctor(t *testing.T) {
	s := &Server{}
	s.statsCfg.latencyMs.Store(5)
	s.statsCfg.slowlogSlower.Store(10000)
	s.statsCfg.slowlogMaxLen.Store(128)
	now := int64(1_800_000_000)
	s.latency.add("command", now-1, 20)
	s.latency.add("command", now, 40)
	head := "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n" +
		"1. command: 2 latency spikes (average 30ms, mean deviation 10ms, period 0.50 sec). Worst all time event 40ms.\n\n" +
		"I have a few advices for you:\n\n"
	tail := "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n" +
		"- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n"
	for _, tc := range []struct {
		slower int64
		advice string
	}{
		{10000, "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 5000'.\n"},
		{-1, "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than 5000'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"},
	} {
		s.statsCfg.slowlogSlower.Store(tc.slower)
		if got, want := s.latencyReport(now), head+tc.advice+tail; got != want {
			t.Errorf("slowlog-log-slower-than %d:\n%s\nwant:\n%s", tc.slower, got, want)
		}
	}
}
