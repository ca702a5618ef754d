package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/slotraft/slotraft/internal/testports"
)

// promSets is how many SETs the Prometheus test sends.
const promSets = 200

// TestPrometheusScrapesCluster: a real Prometheus (Debian's prometheus
// package) scrapes three `slotraft server` processes' /metrics every
// second, and its PromQL answers what the cluster did: every target up,
// at least the SETs the test sent, one leader per slot group. Each node's
// /readyz turns ready.
func TestPrometheusScrapesCluster(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus not found: install Debian's prometheus package (or run `make test-deps`) to run this test")
	}
	c := startTestClusterWith(t, buildSlotraft(t), 3, true)
	c.waitOK(t)
	for _, n := range c.nodes {
		c.eventually(t, n.id+" /readyz", func() error { return httpOK("http://" + n.http + "/readyz") })
	}
	sendSets(t, c, promSets)

	api := startPrometheus(t, promBin, c)
	for _, q := range []struct{ query, what string }{
		{`sum(up{job="slotraft"})`, "3"},
		{fmt.Sprintf(`sum(slotraft_commands_total{cmd="set"}) >= %d`, promSets), ""},
		{`count(slotraft_group_role{role="leader"})`, "3"},
	} {
		c.eventually(t, "PromQL "+q.query, func() error { return promExpect(api, q.query, q.what) })
	}
	// Every query of the Grafana dashboard parses and runs.
	vars := strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*", "$job", ".*")
	for _, expr := range dashboardExprs(t) {
		if err := promRun(api, vars.Replace(expr)); err != nil {
			t.Errorf("dashboard query %q: %v", expr, err)
		}
	}
}

// dashboardExprs are the "expr" strings anywhere in the Grafana
// dashboard (its panels' targets, rows' nested panels included).
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/grafana/slotraft.json")
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "expr" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(d)
	if len(out) == 0 {
		t.Fatal("no expr in the dashboard")
	}
	return out
}

// httpOK fails unless a GET of u answers 200.
func httpOK(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", u, resp.Status, body)
	}
	return nil
}

// sendSets sends n SETs through a cluster client.
func sendSets(t *testing.T, c *testCluster, n int) {
	t.Helper()
	var addrs []string
	for _, node := range c.nodes {
		addrs = append(addrs, node.client)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Protocol: 2})
	defer rdb.Close()
	for i := range n {
		if err := rdb.Set(context.Background(), "prom:"+strconv.Itoa(i), "v", 0).Err(); err != nil {
			t.Fatalf("SET %d: %v", i, err)
		}
	}
}

// startPrometheus runs prometheus, with a config that scrapes c's nodes
// every second and storage of its own, on a free port; it is killed at
// cleanup. It returns the base URL of its HTTP API.
func startPrometheus(t *testing.T, bin string, c *testCluster) string {
	t.Helper()
	dir := t.TempDir()
	var targets []string
	for _, n := range c.nodes {
		targets = append(targets, "'"+n.http+"'")
	}
	cfg := "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n" +
		"scrape_configs:\n  - job_name: slotraft\n    static_configs:\n      - targets: [" + strings.Join(targets, ", ") + "]\n"
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testports.Free(t, 1)[0]))
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	startUntilCleanup(t, cmd, "prometheus")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus's log:\n%s", tail(logPath, 40))
		}
	})
	return "http://" + addr
}

// promAnswer is the answer of Prometheus's instant query API.
type promAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		Result []struct {
			Value [2]any `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// promQuery runs query through Prometheus's API; an error unless it
// succeeded.
func promQuery(api, query string) (promAnswer, error) {
	var r promAnswer
	resp, err := http.Get(api + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return r, fmt.Errorf("decode the answer: %w", err)
	}
	if r.Status != "success" {
		return r, fmt.Errorf("status %q: %s", r.Status, r.Error)
	}
	return r, nil
}

func promRun(api, query string) error {
	_, err := promQuery(api, query)
	return err
}

// promExpect runs query: it must answer one sample, equal to want unless
// want is "" (a comparison query, which answers nothing while false).
func promExpect(api, query, want string) error {
	r, err := promQuery(api, query)
	if err != nil {
		return err
	}
	if len(r.Data.Result) != 1 {
		return fmt.Errorf("%d samples, want 1", len(r.Data.Result))
	}
	got, _ := r.Data.Result[0].Value[1].(string)
	if want != "" && got != want {
		return fmt.Errorf("value %q, want %q", got, want)
	}
	return nil
}
