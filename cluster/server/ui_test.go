package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

// uiNodes serves HTTP for every node of a 3-node in-process cluster,
// each announcing its address in gossip as `slotraft server --http`
// does; it returns the HTTP servers' base URLs.
func uiNodes(t *testing.T, c *cluster.TestCluster) []string {
	t.Helper()
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		srv := New(n, cluster.TestLogger())
		t.Cleanup(func() { _ = srv.Close() })
		ts := httptest.NewServer(srv.HTTPHandler())
		t.Cleanup(ts.Close)
		n.SetHTTPAddr(ts.Listener.Addr().String())
		urls[i] = ts.URL
	}
	return urls
}

func getUIJSON[T any](t *testing.T, url string) (T, *http.Response) {
	t.Helper()
	var v T
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", url, ct)
	}
	if resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("%s sends a CORS header", url)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return v, resp
}

// TestUIClusterView: one node's /ui/api/cluster covers the 16384 slots,
// lists every node healthy with its own figures (fetched over HTTP from
// the address it announced in gossip), every group with its leader and
// term, the nodes' events; a stopped node turns unhealthy (the end-to-end
// dashboard test kills a whole process).
func TestUIClusterView(t *testing.T) {
	c := cluster.NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	urls := uiNodes(t, c)
	var v UICluster
	cluster.PollUntil(t, "every node ok with its figures", func() bool {
		v, _ = getUIJSON[UICluster](t, urls[0]+"/ui/api/cluster")
		ok := len(v.Nodes) == 3
		for _, n := range v.Nodes {
			ok = ok && n.Health == HealthOK && n.Stats != nil && n.Stats.ID == n.ID && n.HTTP != ""
		}
		return ok
	})
	if v.Self != c.Peers[0].ID || !v.Ready || v.Epoch == 0 || v.MetaLeader == "" {
		t.Errorf("self %q ready %v epoch %d meta leader %q", v.Self, v.Ready, v.Epoch, v.MetaLeader)
	}
	covered := 0
	next := uint16(0)
	for _, r := range v.Slots {
		if r.S != next || r.E < r.S || r.G == 0 {
			t.Fatalf("slot ranges not contiguous from 0: %+v", v.Slots)
		}
		covered += int(r.E-r.S) + 1
		next = r.E + 1
	}
	if covered != slots.Count {
		t.Errorf("%d slots covered, want %d", covered, slots.Count)
	}
	if len(v.Groups) != 3 {
		t.Fatalf("%d groups, want 3", len(v.Groups))
	}
	total := 0
	for _, g := range v.Groups {
		total += g.Slots
		if g.Leader == "" || g.Term == 0 || len(g.Replicas) != 3 || g.Replicas[0].Node != g.Leader {
			t.Errorf("group %+v: want a leader listed first, a term, 3 replicas", g)
		}
	}
	if total != slots.Count {
		t.Errorf("groups hold %d slots, want %d", total, slots.Count)
	}
	leaders := 0
	for _, e := range v.Events {
		if e.Kind == cluster.EventLeader {
			leaders++
			if len(e.SeenBy) == 0 {
				t.Errorf("event %+v seen by nobody", e)
			}
		}
	}
	if leaders == 0 {
		t.Errorf("no leader event among %d events", len(v.Events))
	}

	c.Stop(2)
	start := time.Now()
	cluster.PollUntil(t, "a stopped node unhealthy", func() bool {
		v, _ = getUIJSON[UICluster](t, urls[0]+"/ui/api/cluster")
		for _, n := range v.Nodes {
			if n.ID == c.Peers[2].ID {
				// Its HTTP server (not its node) still answers here.
				return n.Health == HealthUnreachable || n.Health == HealthDead
			}
		}
		return false
	})
	t.Logf("a stopped node showed unhealthy after %v", time.Since(start))
}

// TestUINodeStats: /ui/api/node reports this node's figures; the
// latency window counts the commands run between two samples.
func TestUINodeStats(t *testing.T) {
	srv, n, addr := clientNode(t)
	ts := httptest.NewServer(srv.HTTPHandler())
	defer ts.Close()
	st, _ := getUIJSON[UINodeStats](t, ts.URL+"/ui/api/node")
	if st.ID != n.Self().ID || !st.Ready || len(st.Groups) != 3 || st.WindowMS != 0 {
		t.Errorf("first /ui/api/node: %+v; want this node, ready, 3 groups, no window yet", st)
	}

	u := &uiState{s: srv}
	t0 := time.Now()
	if got := u.lat.observe(srv.cstats, t0); got.window != 0 {
		t.Errorf("a first sample has a window: %+v", got)
	}
	do := connDo(t, addr)
	for i := range 50 {
		if r := do("SET", fmt.Sprint("k", i), "v"); r != "+OK" {
			t.Fatalf("SET: %q", r)
		}
	}
	got := u.lat.observe(srv.cstats, t0.Add(3*time.Second))
	if got.window != 3*time.Second || got.calls < 50 || got.p50 == 0 || got.p99 < got.p50 || got.most < got.p99 {
		t.Errorf("window after 50 SETs: %+v", got)
	}
	// Nothing ran since: the next window (from the newest sample at least
	// 2 s old) sees no calls.
	if got := u.lat.observe(srv.cstats, t0.Add(6*time.Second)); got.calls != 0 {
		t.Errorf("window with no command: %+v", got)
	}
	srv.resetStats() // CONFIG RESETSTAT: counts go down, the window starts over
	if got := u.lat.observe(srv.cstats, t0.Add(7*time.Second)); got.window != 0 {
		t.Errorf("window across a reset: %+v", got)
	}
}

// TestUIStaticFiles: the page and its files are served from the binary
// with a policy that loads nothing from elsewhere; unknown API paths
// answer JSON 404.
func TestUIStaticFiles(t *testing.T) {
	srv, _, _ := clientNode(t)
	ts := httptest.NewServer(srv.HTTPHandler())
	defer ts.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(ts.URL + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui: %s to %q, want a redirect to /ui/", resp.Status, resp.Header.Get("Location"))
	}
	tests := []struct {
		path, ctype, holds string
	}{
		{"/ui/", "text/html", `<script src="app.js">`},
		{"/ui/app.js", "javascript", "api/cluster"},
		{"/ui/style.css", "text/css", "#slotmap"},
	}
	for _, tc := range tests {
		resp, err := http.Get(ts.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), tc.ctype) || !bytes.Contains(body, []byte(tc.holds)) {
			t.Errorf("%s: %s %q, %d bytes", tc.path, resp.Status, resp.Header.Get("Content-Type"), len(body))
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", tc.path, csp)
		}
		for _, ext := range []string{"http://", "https://", "//fonts.", "cdn"} {
			if tc.path != "/ui/" && bytes.Contains(body, []byte(ext)) && !bytes.Contains(body, []byte(`"http://" + n.http`)) {
				t.Errorf("%s refers to %q", tc.path, ext)
			}
		}
	}
	e, resp := getUIJSON[UIError](t, ts.URL+"/ui/api/chaos")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(e.Error, "--chaos-ui") {
		t.Errorf("/ui/api/chaos on a node: %s %+v", resp.Status, e)
	}
}

func TestMergeEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(kind cluster.EventKind, text string, after time.Duration) cluster.Event {
		return cluster.Event{Kind: kind, Text: text, At: t0.Add(after)}
	}
	stats := map[string]nodeFetch{
		"node1": {stats: &UINodeStats{Events: []cluster.Event{
			ev(cluster.EventLeader, "group 1: node2 is leader (term 3)", 0),
			ev(cluster.EventGossip, "node3 is dead (gossip)", 10*time.Second),
		}}},
		"node2": {stats: &UINodeStats{Events: []cluster.Event{
			ev(cluster.EventLeader, "group 1: node2 is leader (term 3)", time.Second),
			ev(cluster.EventGossip, "node3 is dead (gossip)", 30*time.Second), // later: another death
		}}},
		"node3": {err: fmt.Errorf("down")},
	}
	got := mergeEvents(stats)
	want := []string{
		"node3 is dead (gossip) [node2]",
		"node3 is dead (gossip) [node1]",
		"group 1: node2 is leader (term 3) [node1 node2]",
	}
	var have []string
	for _, e := range got {
		have = append(have, fmt.Sprintf("%s %v", e.Text, e.SeenBy))
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Errorf("merged:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}

	many := map[string]nodeFetch{}
	for i := range 5 {
		var evs []cluster.Event
		for j := range uiMaxNodeEvents {
			evs = append(evs, ev(cluster.EventGossip, fmt.Sprint("e", i, j), time.Duration(j)*time.Minute))
		}
		many[fmt.Sprint("node", i)] = nodeFetch{stats: &UINodeStats{Events: evs}}
	}
	if got := mergeEvents(many); len(got) != uiMaxEvents || got[0].At.Before(got[len(got)-1].At) {
		t.Errorf("merged %d events (newest first?), want the newest %d", len(got), uiMaxEvents)
	}
}

// TestUISlotRangesAndMigrations: the map's ranges in slot order, and
// migrations grouped per pair of groups with consecutive slots joined.
func TestUISlotRangesAndMigrations(t *testing.T) {
	m := &meta.Map{
		Groups: []meta.Group{
			{ID: 1, Ranges: []slots.Range{{Start: 0, End: 99}, {Start: 200, End: 16383}}},
			{ID: 2, Ranges: []slots.Range{{Start: 100, End: 199}}},
		},
		Migrations: []meta.Migration{{Slot: 5, From: 1, To: 2}, {Slot: 6, From: 1, To: 2}, {Slot: 150, From: 2, To: 1}, {Slot: 300, From: 1, To: 2}},
	}
	rs := slotRanges(m)
	if fmt.Sprint(rs) != "[{0 99 1} {100 199 2} {200 16383 1}]" {
		t.Errorf("slotRanges = %v", rs)
	}
	ms := migrations(m)
	if fmt.Sprint(ms) != "[{1 2 3 [{5 6 2} {300 300 2}]} {2 1 1 [{150 150 1}]}]" {
		t.Errorf("migrations = %v", ms)
	}
}

// FuzzDecodeNodeStats: a peer's answer (bytes from the network) decodes
// or fails, never panics.
func FuzzDecodeNodeStats(f *testing.F) {
	f.Add([]byte(`{"id":"node2","ready":true,"ops_per_sec":12.5,"events":[{"kind":"leader","text":"x","at":"2026-01-02T03:04:05Z"}]}`))
	f.Add([]byte(`{"events":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"id":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := DecodeUIJSON[UINodeStats](bytes.NewReader(b)); (err == nil) != (st != nil) {
			t.Fatalf("DecodeUIJSON(%q) = %v, %v", b, st, err)
		}
	})
}
