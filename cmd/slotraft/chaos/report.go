package chaos

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// The HTML report is one self-contained file: the summary, the faults over
// operations, failed attempts and latency per second (inline SVG, no
// script, no network), every anomaly with its operations, and porcupine's
// own visualisation of every non-linearizable key in an iframe of its own.

// writeReport writes s as HTML to path.
func writeReport(path string, s *Summary) error {
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, newReportData(s)); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// reportData is what the template renders.
type reportData struct {
	S          *Summary
	Workloads  []string
	OpsChart   template.HTML
	ErrChart   template.HTML
	LatChart   template.HTML
	WlLatChart template.HTML
	Leaders    template.HTML
	Viz        []vizPage
	Generated  string
}

type vizPage struct {
	Key    string
	Iframe template.HTML
}

func newReportData(s *Summary) reportData {
	d := reportData{S: s, Workloads: slices.Sorted(maps.Keys(s.Ops)), Generated: time.Now().Format(time.RFC3339)}
	sec := perSecond(s)
	// Failed attempts outnumber operations while a group is down (refusals
	// are retried every few ms): a chart of their own keeps both readable.
	d.OpsChart = chart("operations per second", sec.n, []series{
		{"ok", "#2b8a3e", sec.ok}, {"unknown outcome", "#e67700", sec.unknown},
	}, s.Events)
	d.ErrChart = chart("failed attempts per second (refusals are retried)", sec.n, []series{
		{"failed attempts", "#c92a2a", sec.errs},
	}, s.Events)
	d.LatChart = chart("latency of ok operations per second (ms)", sec.n, []series{
		{"p50", "#1864ab", sec.p50}, {"p99", "#862e9c", sec.p99},
	}, s.Events)
	d.WlLatChart = chart("p99 latency of ok operations per workload per second (ms)", sec.n, workloadLines(sec), s.Events)
	d.Leaders = leaderChart(sec.n, s.Leaders, s.Events)
	for _, k := range slices.Sorted(maps.Keys(s.viz)) {
		// srcdoc holds a whole page: escape it as one attribute value.
		d.Viz = append(d.Viz, vizPage{Key: k, Iframe: template.HTML(`<iframe class="viz" srcdoc="` + html.EscapeString(string(s.viz[k])) + `"></iframe>`)})
	}
	return d
}

// seconds holds per-second series over the run.
type seconds struct {
	n                 int
	ok, unknown, errs []float64
	p50, p99          []float64
	latencies         [][]int64
	wlP99             map[string][]float64 // per workload
}

// workloadColors tell the workloads apart in the per-workload chart.
var workloadColors = []string{"#1864ab", "#862e9c", "#2b8a3e", "#e67700", "#c2255c", "#495057"}

// workloadLines are the per-workload p99 series, by workload name.
func workloadLines(sec seconds) []series {
	var out []series
	for i, wl := range slices.Sorted(maps.Keys(sec.wlP99)) {
		out = append(out, series{wl, workloadColors[i%len(workloadColors)], sec.wlP99[wl]})
	}
	return out
}

// perSecond buckets operations by the second they returned in, and failed
// attempts by the second they failed in.
func perSecond(s *Summary) seconds {
	last := int64(0)
	for _, op := range s.ops {
		last = max(last, op.Return)
	}
	for k := range s.errsAt {
		last = max(last, (k.sec+1)*int64(time.Second))
	}
	n := int(last/int64(time.Second)) + 1
	sec := seconds{n: n, ok: make([]float64, n), unknown: make([]float64, n), errs: make([]float64, n),
		p50: make([]float64, n), p99: make([]float64, n), latencies: make([][]int64, n), wlP99: map[string][]float64{}}
	byWl := map[string][][]int64{}
	for _, op := range s.ops {
		i := int(op.Return / int64(time.Second))
		switch op.Outcome {
		case OK:
			sec.ok[i]++
			sec.latencies[i] = append(sec.latencies[i], op.Return-op.Call)
			if !op.Final {
				if byWl[op.Workload] == nil {
					byWl[op.Workload] = make([][]int64, n)
				}
				byWl[op.Workload][i] = append(byWl[op.Workload][i], op.Return-op.Call)
			}
		case Unknown:
			sec.unknown[i]++
		}
	}
	for k, c := range s.errsAt {
		sec.errs[k.sec] += float64(c)
	}
	for i, l := range sec.latencies {
		sec.p50[i], sec.p99[i] = quantile(l, 50), quantile(l, 99)
	}
	for wl, secs := range byWl {
		p99 := make([]float64, n)
		for i, l := range secs {
			p99[i] = quantile(l, 99)
		}
		sec.wlP99[wl] = p99
	}
	return sec
}

// quantile is the q-th percentile of l in milliseconds (0 for none); it
// sorts l.
func quantile(l []int64, q int) float64 {
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	return ms(l[len(l)*q/100])
}

// series is one line of a chart.
type series struct {
	name, color string
	y           []float64
}

// Chart geometry, in SVG units.
const (
	chartW, chartH = 1000.0, 260.0
	padL, padR     = 50.0, 10.0
	padT, padB     = 20.0, 40.0
)

// chart draws lines over time with the faults as shaded bands.
func chart(title string, n int, lines []series, events []Event) template.HTML {
	top := 1.0
	for _, l := range lines {
		for _, v := range l.y {
			top = max(top, v)
		}
	}
	w, h := chartW-padL-padR, chartH-padT-padB
	x := func(sec float64) float64 { return padL + w*sec/float64(max(n, 1)) }
	y := func(v float64) float64 { return padT + h - h*v/top }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" class="chart" role="img"><title>%s</title>`, chartW, chartH, html.EscapeString(title))
	for _, e := range events {
		end := e.End
		if end == 0 {
			end = e.Start
		}
		x0, x1 := x(secs(e.Start)), x(secs(end))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="%s" opacity="0.25"><title>%s</title></rect>`,
			x0, padT, max(x1-x0, 1), h, faultColor(e.Kind), html.EscapeString(e.Kind+": "+e.Desc))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" class="band">%s</text>`, x0+2, padT+10, html.EscapeString(e.Kind))
	}
	axes(&b, n, top, x, y)
	for i, l := range lines {
		pts := make([]string, len(l.y))
		for s, v := range l.y {
			pts[s] = fmt.Sprintf("%.1f,%.1f", x(float64(s)+0.5), y(v))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, l.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" fill="%s" class="legend">%s</text>`, padL+float64(i)*150, chartH-5, l.color, html.EscapeString(l.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// axes draws the frame, a few ticks of time and of value.
func axes(b *strings.Builder, n int, top float64, x, y func(float64) float64) {
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="axis"/>`, padL, y(0), chartW-padR, y(0))
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="axis"/>`, padL, padT, padL, y(0))
	step := max(1, n/10)
	for s := 0; s <= n; s += step {
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" class="tick" text-anchor="middle">%ds</text>`, x(float64(s)), y(0)+14, s)
	}
	for _, f := range []float64{0, 0.5, 1} {
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" class="tick" text-anchor="end">%.0f</text>`, padL-4, y(top*f)+4, top*f)
	}
}

func secs(ns int64) float64 { return float64(ns) / float64(time.Second) }

// faultColor is a fault kind's colour; an action from the dashboard
// (ui-kill, ui-pause, ui-partition) takes its fault's.
func faultColor(k string) string {
	switch strings.TrimPrefix(k, "ui-") {
	case "kill":
		return "#e03131"
	case "pause":
		return "#1971c2"
	case "partition":
		return "#f08c00"
	case "restart-all":
		return "#7048e8"
	case "migrate":
		return "#0c8599"
	case "membership":
		return "#5c940d"
	case "disk":
		return "#a61e4d"
	}
	return "#495057" // crashes and kinds added later
}

var reportFuncs = template.FuncMap{
	"at":       func(t int64) string { return at(t) },
	"describe": describeOp,
	"upper":    strings.ToUpper,
	"until": func(e Event) string {
		if e.End == 0 {
			return "—"
		}
		return at(e.End)
	},
}

var reportTemplate = template.Must(template.New("report").Funcs(reportFuncs).Parse(reportHTML))
