package chaos

// reportHTML is the report's page; report.go fills it.
const reportHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>slotraft chaos run: {{upper .S.Result}} (seed {{.S.Seed}})</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #212529; }
h1 .ok { color: #2b8a3e; } h1 .bad { color: #c92a2a; }
table { border-collapse: collapse; margin: .5em 0 1.5em; }
td, th { border: 1px solid #dee2e6; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f1f3f5; }
.chart { width: 100%; max-width: 1000px; height: auto; border: 1px solid #dee2e6; }
.axis { stroke: #868e96; } .tick, .band, .legend { font-size: 11px; } .band { fill: #495057; }
.anomaly { border-left: 4px solid #c92a2a; padding: .2em 1em; margin: 1em 0; background: #fff5f5; }
.anomaly pre { white-space: pre-wrap; }
.viz { width: 100%; height: 700px; border: 1px solid #dee2e6; }
code { background: #f1f3f5; padding: 0 3px; }
</style></head><body>
<h1>slotraft chaos run: <span class="{{if eq .S.Result "ok"}}ok{{else}}bad{{end}}">{{upper .S.Result}}</span></h1>
<p>Seed <code>{{.S.Seed}}</code> · {{.S.Nodes}} nodes · {{.S.Groups}} slot groups · {{.S.Replicas}} replicas ·
faults for {{.S.Duration}} ({{.S.Elapsed}} in all) · faults: {{range $i, $f := .S.Faults}}{{if $i}}, {{end}}{{$f}}{{end}} ·
workloads: {{range $i, $w := .S.Workloads}}{{if $i}}, {{end}}{{$w}}{{end}} · binary <code>{{.S.Binary}}</code> · generated {{.Generated}}</p>
{{if .S.Error}}<p class="anomaly">The run failed: {{.S.Error}}</p>{{end}}

<h2>Operations</h2>
<table><tr><th>workload</th><th>operations</th><th>ok</th><th>failed (did not happen)</th><th>unknown outcome</th><th>final reads</th><th>p50 ms</th><th>p99 ms</th><th>check</th></tr>
{{range .Workloads}}{{$w := .}}{{$c := index $.S.Ops .}}<tr><td>{{.}}</td><td>{{$c.Total}}</td><td>{{$c.OK}}</td><td>{{$c.Fail}}</td><td>{{$c.Unknown}}</td><td>{{$c.Final}}</td><td>{{$c.P50ms}}</td><td>{{$c.P99ms}}</td>
<td>{{range $.S.Checks}}{{if eq .Workload $w}}{{.Result}}{{range .Notes}}<br>{{.}}{{end}}{{end}}{{end}}</td></tr>{{end}}
</table>
<p>Failed attempts by kind (every attempt, also those retried):
{{range $k, $n := .S.Errors}}<code>{{$k}}</code> {{$n}} · {{else}}none{{end}}</p>

<h2>Faults over time</h2>
{{.OpsChart}}
{{.ErrChart}}
{{.LatChart}}
{{.WlLatChart}}
{{if .Leaders}}<h3>Leader of each group over time</h3>
<p>Each node's own view, polled every 400 ms with <code>SLOTRAFT STATUS</code>: a bar from the first to the last poll in which the node said it led the group (hover for its term).
A node that did not answer (dead, paused, cut off) neither ends nor extends its bar. Two nodes believing they lead one group at once are outlined in red.</p>
{{.Leaders}}{{end}}

<h2>Anomalies ({{len .S.Anomalies}})</h2>
{{range .S.Anomalies}}<div class="anomaly"><h3>{{.Kind}}{{if .Workload}} · {{.Workload}}{{end}}{{if .Key}} · <code>{{.Key}}</code>{{end}}</h3>
<pre>{{.Text}}</pre>
{{if .Ops}}<table><tr><th>process</th><th>operation</th><th>called</th><th>returned</th><th>outcome</th><th>error</th></tr>
{{range .Ops}}<tr><td>{{if .Final}}final read{{else}}{{.Workload}}/{{.Process}}{{end}}</td><td><code>{{describe .}}</code></td><td>{{at .Call}}</td><td>{{at .Return}}</td><td>{{.Outcome}}</td><td>{{.Err}}</td></tr>{{end}}
</table>{{end}}</div>
{{else}}<p>None: every check passed.</p>{{end}}

<h2>Fault timeline</h2>
<table><tr><th>kind</th><th>start</th><th>end</th><th>what</th><th>error</th></tr>
{{range .S.Events}}<tr><td>{{.Kind}}</td><td>{{at .Start}}</td><td>{{until .}}</td><td>{{.Desc}}</td><td>{{.Err}}</td></tr>{{else}}<tr><td colspan="5">no fault</td></tr>{{end}}
</table>

{{if .Viz}}<h2>Porcupine's visualisation of the non-linearizable keys</h2>
<p>One timeline per client; the longest linearizable prefix is highlighted; the faults are in the "faults" row.</p>
{{range .Viz}}<h3><code>{{.Key}}</code></h3>{{.Iframe}}{{end}}{{end}}
</body></html>
`
