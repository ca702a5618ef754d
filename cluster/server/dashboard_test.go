package server

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
)

// exportedNames are the metric names /metrics can carry: the collector's
// (a histogram's as its _bucket, _sum and _count series) and Go's and the
// process's collectors'.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	histograms := map[*prometheus.Desc]bool{mCommandLatency: true, mGroupApplyDur: true, mGroupAppendDur: true, mGroupSnapDur: true}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, d := range append(nodeDescs(), groupDescs()...) {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		addNames(names, m[1], histograms[d])
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		addNames(names, mf.GetName(), mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY)
	}
	return names
}

func addNames(names map[string]bool, name string, histogram bool) {
	names[name] = true
	if histogram {
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			names[name+suffix] = true
		}
	}
}

// dashboardQueries are the PromQL expressions of the Grafana dashboard:
// every panel's targets (rows' nested panels too) and the variables'.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../deploy/grafana/slotraft.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"` // a query variable's is an object
				Name  string          `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("deploy/grafana/slotraft.json: %v", err)
	}
	var out []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, tg.Expr)
			}
			var nested []panel
			for _, raw := range p.Panels {
				var np panel
				if err := json.Unmarshal(raw, &np); err != nil {
					t.Fatalf("panel %q: %v", p.Title, err)
				}
				nested = append(nested, np)
			}
			walk(nested)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: %v", v.Name, err)
		}
		out = append(out, q.Query)
	}
	return out
}

// The Grafana dashboard is valid JSON, and every metric its queries name
// is one /metrics exports: a renamed metric breaks this test, not the
// operator's dashboard.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	names := exportedNames(t)
	queries := dashboardQueries(t)
	if len(queries) < 20 {
		t.Fatalf("%d queries in the dashboard; want its panels' and variables'", len(queries))
	}
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	used := 0
	for _, q := range queries {
		if strings.TrimSpace(q) == "" {
			t.Error("a panel target without an expression")
		}
		for _, id := range ident.FindAllString(q, -1) {
			if !strings.HasPrefix(id, "slotraft_") && !strings.HasPrefix(id, "go_") && !strings.HasPrefix(id, "process_") {
				continue
			}
			used++
			if !names[id] {
				t.Errorf("query %q: %s is not a metric /metrics exports", q, id)
			}
		}
	}
	if used == 0 {
		t.Fatal("no metric names found in the dashboard's queries")
	}
}

// Every metric the collector describes is documented in
// docs/metrics.md.
func TestMetricsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, d := range append(nodeDescs(), groupDescs()...) {
		name := fq.FindStringSubmatch(d.String())[1]
		if !regexp.MustCompile("`" + name + "[`{]").MatchString(doc) {
			t.Errorf("%s is not in docs/metrics.md", name)
		}
	}
}
