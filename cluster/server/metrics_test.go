package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/slotraft/slotraft/cluster"
)

// gather collects c once and returns its metric families by name.
func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// labelled is the metric of mf whose labels include every pair of want.
func labelled(mf *dto.MetricFamily, want ...string) *dto.Metric {
	for _, m := range mf.GetMetric() {
		ok := true
		for i := 0; i < len(want); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == want[i] && lp.GetValue() == want[i+1]
			}
			ok = ok && found
		}
		if ok {
			return m
		}
	}
	return nil
}

// The collector reports what the server counted for INFO: calls and
// failures per command, the commands' latency histograms, error codes,
// keyspace hits and misses, every group's role; and it passes
// Prometheus's own lint (names, units, _total counters).
func TestMetricsCollector(t *testing.T) {
	srv, _, addr := clientNode(t)
	do := connDo(t, addr)
	for _, k := range []string{"a", "b", "c"} {
		if r := do("SET", k, "v"); r != "+OK" {
			t.Fatalf("SET: %q", r)
		}
	}
	do("GET", "a")
	do("GET", "nokey")
	if r := do("INCR", "a"); !strings.HasPrefix(r, "-ERR") {
		t.Fatalf("INCR of a string: %q", r)
	}
	c := collector{srv}
	want := `
# HELP slotraft_commands_total Calls of each command (subcommands apart, e.g. config|get), as INFO commandstats.
# TYPE slotraft_commands_total counter
slotraft_commands_total{cmd="get"} 2
slotraft_commands_total{cmd="incr"} 1
slotraft_commands_total{cmd="set"} 3
# HELP slotraft_commands_failed_total Calls of each command that answered an error.
# TYPE slotraft_commands_failed_total counter
slotraft_commands_failed_total{cmd="get"} 0
slotraft_commands_failed_total{cmd="incr"} 1
slotraft_commands_failed_total{cmd="set"} 0
# HELP slotraft_error_replies_total Error replies by error code (the reply's first word), as INFO errorstats.
# TYPE slotraft_error_replies_total counter
slotraft_error_replies_total{code="ERR"} 1
# HELP slotraft_keyspace_misses_total Key lookups by reads that did not find the key.
# TYPE slotraft_keyspace_misses_total counter
slotraft_keyspace_misses_total 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"slotraft_commands_total", "slotraft_commands_failed_total", "slotraft_error_replies_total", "slotraft_keyspace_misses_total"); err != nil {
		t.Error(err)
	}
	mfs := gather(t, c)
	if h := labelled(mfs["slotraft_command_duration_seconds"], "cmd", "set").GetHistogram(); h.GetSampleCount() != 3 || h.GetSampleSum() <= 0 {
		t.Errorf("set's latency histogram: %v", h)
	}
	if hits := mfs["slotraft_keyspace_hits_total"].GetMetric()[0].GetCounter().GetValue(); hits < 1 {
		t.Errorf("keyspace hits %v, want at least the GET of a", hits)
	}
	if n := len(mfs["slotraft_group_role"].GetMetric()); n != 3 {
		t.Errorf("%d group_role series, want one per group (3)", n)
	}
	for _, g := range []string{"1", "2", "3"} {
		if labelled(mfs["slotraft_group_role"], "group", g, "role", "leader") == nil {
			t.Errorf("group %s: not reported led here", g)
		}
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// A leader reports each follower of its groups, reachable and lagging by
// what it has yet to apply; a follower reports its leader's contact.
func TestMetricsFollowers(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	l := c.Leader(1)
	c.Set(1, cluster.KeyIn(1, 3, "m"), "v")
	leader := gather(t, collector{New(c.Nodes[l], cluster.TestLogger())})
	for _, i := range []int{(l + 1) % 3, (l + 2) % 3} {
		id := c.Nodes[i].Self().ID
		if m := labelled(leader["slotraft_group_follower_reachable"], "group", "1", "follower", id); m.GetGauge().GetValue() != 1 {
			t.Errorf("follower %s of group 1: reachable %v", id, m)
		}
		if labelled(leader["slotraft_group_follower_lag_entries"], "group", "1", "follower", id) == nil {
			t.Errorf("follower %s of group 1: no lag reported", id)
		}
	}
	follower := gather(t, collector{New(c.Nodes[(l+1)%3], cluster.TestLogger())})
	if m := labelled(follower["slotraft_group_role"], "group", "1", "role", "follower"); m == nil {
		t.Fatal("group 1 not reported followed")
	}
	if m := labelled(follower["slotraft_group_leader_last_contact_seconds"], "group", "1"); m.GetGauge().GetValue() < 0 {
		t.Errorf("follower's last contact %v", m)
	}
	if labelled(follower["slotraft_group_follower_reachable"], "group", "1") != nil {
		t.Error("a follower reports followers")
	}
}

// get fetches path from h and returns the status and the body.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The endpoints of a node: /healthz always, /metrics in Prometheus's
// format, /readyz ready while the groups have leaders and 503 with the
// groups' reasons once the node is alone.
func TestHTTPHandler(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	srv := New(c.Nodes[0], cluster.TestLogger())
	defer srv.Close()
	hs := httptest.NewServer(srv.HTTPHandler())
	defer hs.Close()
	if code, body := get(t, hs.URL, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, hs.URL, "/metrics"); code != 200 || !strings.Contains(body, "slotraft_group_role{group=\"1\"") ||
		!strings.Contains(body, "go_goroutines") || !strings.Contains(body, "process_") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	cluster.PollUntil(t, "node 0 ready", func() bool { code, _ := get(t, hs.URL, "/readyz"); return code == 200 })
	c.Stop(1)
	c.Stop(2)
	var body string
	cluster.PollUntil(t, "node 0 not ready, alone", func() bool {
		var code int
		code, body = get(t, hs.URL, "/readyz")
		return code == 503 && strings.Contains(body, "group 1: ") && strings.Contains(body, "group 2: ") && strings.Contains(body, "group 3: ")
	})
	t.Logf("/readyz alone:\n%s", body)
}

// A command's fine histogram folds into Prometheus's buckets: each value
// under the first bound at or above it, the sum within the fine
// buckets' 3%.
func TestPromBuckets(t *testing.T) {
	var h latencyHist
	for _, ns := range []uint64{5_000, 20_000, 20_000, 3_000_000, 60_000_000_000} { // 5 µs, 20 µs ×2, 3 ms, 60 s
		h.record(ns)
	}
	count, sum, buckets := h.promBuckets()
	if count != 5 {
		t.Fatalf("count %d, want 5", count)
	}
	for bound, want := range map[float64]uint64{0.00001: 1, 0.000025: 3, 0.0025: 3, 0.005: 4, 10: 4} {
		if got := buckets[bound]; got != want {
			t.Errorf("bucket ≤%gs holds %d, want %d", bound, got, want)
		}
	}
	if exact := 60.003045; sum < exact || sum > exact*1.03 {
		t.Errorf("sum %v, want within 3%% above %v", sum, exact)
	}
}
