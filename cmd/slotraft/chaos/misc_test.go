package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		err      error
		write    bool
		want     Outcome
		wantKind string
	}{
		{nil, true, OK, ""},
		{replyErr("MOVED 12 127.0.0.3:7001"), true, Fail, "MOVED"},
		{replyErr("CLUSTERDOWN The cluster is down"), true, Fail, "CLUSTERDOWN"},
		{replyErr("TRYAGAIN Multiple keys"), true, Fail, "TRYAGAIN"},
		{replyErr(outcomeUnknownText + ": leadership was lost"), true, Unknown, "outcome unknown"},
		{replyErr(outcomeUnknownText + ": leadership was lost"), false, Fail, "outcome unknown"},
		{replyErr("ERR context deadline exceeded"), true, Unknown, "error reply ERR"},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true, Fail, "connection refused"},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true, Unknown, "connection lost"},
		{io.EOF, true, Unknown, "connection lost"},
		{context.DeadlineExceeded, true, Unknown, "timeout"},
		{context.DeadlineExceeded, false, Fail, "timeout"},
		{redis.ErrClosed, true, Fail, "no connection"},
		{errors.New("something else"), true, Unknown, "other (*errors.errorString)"},
	}
	for _, tt := range tests {
		out, kind := classify(tt.err, tt.write)
		if out != tt.want || kind != tt.wantKind {
			t.Errorf("classify(%v, write=%v) = %s, %q; want %s, %q", tt.err, tt.write, out, kind, tt.want, tt.wantKind)
		}
	}
}

// replyErr is an error reply as go-redis hands it back.
func replyErr(s string) error {
	rd := redis.NewCmd(context.Background())
	rd.SetErr(proto(s))
	return rd.Err()
}

// proto is a redis.Error with text s.
type proto string

func (p proto) Error() string { return string(p) }
func (proto) RedisError()     {}

func TestRedirect(t *testing.T) {
	for _, tt := range []struct {
		err  error
		addr string
		ask  bool
		ok   bool
	}{
		{replyErr("MOVED 3999 127.0.0.2:6381"), "127.0.0.2:6381", false, true},
		{replyErr("ASK 3999 127.0.0.2:6381"), "127.0.0.2:6381", true, true},
		{replyErr("CLUSTERDOWN The cluster is down"), "", false, false},
		{errors.New("MOVED 1 a:1"), "", false, false}, // not a reply
		{nil, "", false, false},
	} {
		addr, ask, ok := redirect(tt.err)
		if addr != tt.addr || ask != tt.ask || ok != tt.ok {
			t.Errorf("redirect(%v) = %q, %v, %v", tt.err, addr, ask, ok)
		}
	}
}

// FuzzRedirect: any error text parses to a redirect with an address, or
// to none, never a panic.
func FuzzRedirect(f *testing.F) {
	for _, s := range []string{"MOVED 1 127.0.0.2:1", "ASK 2 h:3", "MOVED", "MOVED  x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, _, ok := redirect(replyErr(s))
		if ok && (addr == "" || strings.ContainsAny(addr, " \t\r\n")) {
			t.Fatalf("redirect(%q) = %q", s, addr)
		}
	})
}

// TestShapes: every partition shape cuts what it says and leaves the rest.
func TestShapes(t *testing.T) {
	order := []int{3, 0, 4, 1, 2}
	cut := func(p cutPlan) map[[2]int]bool {
		m := map[[2]int]bool{}
		for _, pr := range p.pairs {
			m[pr], m[[2]int{pr[1], pr[0]}] = true, true
		}
		return m
	}
	h := cut(cutBetween("halves", order[:2], order[2:]))
	if len(h) != 2*2*3 || !h[[2]int{3, 4}] || h[[2]int{3, 0}] {
		t.Errorf("halves cut %v", h)
	}
	b := bridge(order)
	bc := cut(b)
	for x := range 5 {
		if bc[[2]int{3, x}] {
			t.Errorf("bridge %s cuts the bridge node from node%d", b.desc, x+1)
		}
	}
	if len(bc) != 2*2*2 {
		t.Errorf("bridge %s cuts %d links", b.desc, len(bc)/2)
	}
	r := ring(order)
	rc := cut(r)
	for i, x := range order {
		seen := 0
		for _, y := range order {
			if x != y && !rc[[2]int{x, y}] {
				seen++
			}
		}
		if seen != 2 || rc[[2]int{x, order[(i+1)%len(order)]}] {
			t.Errorf("ring %s: node%d sees %d nodes, want its 2 neighbours", r.desc, x+1, seen)
		}
	}
	if got := shapes(5); len(got) != 4 || len(shapes(1)) != 0 || len(shapes(3)) != 3 {
		t.Errorf("shapes: %v %v %v", got, shapes(1), shapes(3))
	}
}

// TestReport renders a report with every part and checks that its SVG
// charts are well-formed XML and the visualisation is embedded.
func TestReport(t *testing.T) {
	ops := []Op{set(0, "a", 0, 1e9), set(0, "b", 2e9, 3e9), get(1, "a", 4e9, 5e9), unknown(set(1, "c", 5e9, 6e9))}
	w := &registers{keys: []string{"k"}}
	events := []Event{{Kind: "partition", Desc: "halves {node1,node2} | {node3}", Start: 1e9, End: 3e9}, {Kind: "kill", Desc: "kill -9 node2 <pid>", Start: 4e9}}
	v := w.Check(context.Background(), ops, events)
	s := &Summary{Result: "anomalies", Seed: 5, Ops: map[string]*OpCounts{"registers": {Total: 4, OK: 3, Unknown: 1}},
		Errors: map[string]int{"CLUSTERDOWN": 3}, Events: events, Checks: []Verdict{v}, Anomalies: v.Anomalies,
		Faults: []string{"kill", "partition"}, Workloads: []string{"registers"},
		ops: ops, errsAt: map[errAt]int{{sec: 2, kind: "CLUSTERDOWN"}: 3}, viz: v.viz}
	path := filepath.Join(t.TempDir(), "r.html")
	if err := writeReport(path, s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"ANOMALIES", "stale read", "<iframe", "per workload", "kill -9 node2 &lt;pid&gt;", "CLUSTERDOWN", "halves"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	svgs := 0
	for rest := page; ; svgs++ {
		i := strings.Index(rest, "<svg")
		if i < 0 {
			break
		}
		j := strings.Index(rest[i:], "</svg>")
		if err := xml.Unmarshal([]byte(rest[i:i+j+len("</svg>")]), new(struct{})); err != nil {
			t.Errorf("chart %d is not well-formed: %v", svgs, err)
		}
		rest = rest[i+j:]
	}
	if svgs != 4 {
		t.Errorf("%d charts, want 4", svgs)
	}
	if !strings.Contains(page, `class="legend">registers</text>`) {
		t.Error("the per-workload latency chart has no line for registers")
	}
	var text bytes.Buffer
	s.writeText(&text)
	if !strings.Contains(text.String(), "ANOMALY stale read [registers k]") {
		t.Errorf("text summary:\n%s", text.String())
	}
}

func TestTable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, s *Summary) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(s)
		if s == nil {
			b = nil
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("run-1.json", &Summary{Result: "ok", Seed: 1, Ops: map[string]*OpCounts{"sets": {Total: 10, OK: 9, Unknown: 1}},
		Injected: map[string]int{"kill": 2}, Anomalies: []Anomaly{}, Elapsed: "1m"})
	bad := write("run-2.json", &Summary{Result: "anomalies", Seed: 2, Ops: map[string]*OpCounts{"registers": {Total: 5, OK: 5}},
		Injected: map[string]int{"partition": 1}, Anomalies: []Anomaly{{Kind: "stale read"}}})
	empty := write("run-3.json", nil)
	var out bytes.Buffer
	ok, err := runTable([]string{good}, &out)
	if err != nil || !ok || !strings.Contains(out.String(), "1/1 ok") {
		t.Errorf("one good run: %v %v\n%s", ok, err, out.String())
	}
	out.Reset()
	ok, err = runTable([]string{good, bad, empty}, &out)
	if err != nil || ok {
		t.Errorf("with a bad run: ok=%v err=%v", ok, err)
	}
	for _, want := range []string{"run-2", "anomalies", "kill 2", "no summary", "1/3 ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if code := Main([]string{"table"}, &out, &out); code != ExitUsage {
		t.Errorf("table without files: exit %d", code)
	}
}
