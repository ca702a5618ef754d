package chaosui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/slotraft/slotraft/cluster/server"
)

// fakeCtl is a Controller over made-up processes: a kill of a node that
// is down is refused, as the supervisors refuse it.
type fakeCtl struct {
	mu    sync.Mutex
	procs []Proc
	done  []Action
}

func (f *fakeCtl) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return State{Mode: ModeDev, Nodes: append([]Proc(nil), f.procs...), Partition: Partition{Reason: "not root"}}
}

func (f *fakeCtl) Do(_ context.Context, a Action) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.Action == ActPartition {
		return "", fmt.Errorf("%w: not root", ErrUnavailable)
	}
	for i := range f.procs {
		p := &f.procs[i]
		if p.ID != a.Node {
			continue
		}
		if a.Action == ActKill && !p.Can.Kill {
			return "", fmt.Errorf("%w: %s is %s", ErrConflict, p.ID, p.Process)
		}
		p.Process, p.Can = ProcKilled, CanFor(ProcKilled)
		f.done = append(f.done, a)
		return "kill -9 " + p.ID, nil
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownNode, a.Node)
}

func TestActions(t *testing.T) {
	ctl := &fakeCtl{procs: []Proc{{ID: "node1", Process: ProcRunning, Can: CanFor(ProcRunning)}}}
	ts := httptest.NewServer(New(ctl).Handler())
	defer ts.Close()
	host := strings.TrimPrefix(ts.URL, "http://")
	post := func(body, ctype, header, origin, hostHdr string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/ui/api/chaos/action", strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if header != "" {
			req.Header.Set("X-Slotraft-Chaos", header)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if hostHdr != "" {
			req.Host = hostHdr
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Text, Error string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Text + out.Error
	}
	const js = "application/json"
	kill := `{"action":"kill","node":"node1"}`
	tests := []struct {
		name                              string
		body, ctype, header, origin, host string
		code                              int
		says                              string
	}{
		{"a form post from another site", kill, "application/x-www-form-urlencoded", "", "http://evil.example", "", 403, "evil.example"},
		{"a form post", kill, "text/plain", "1", "", "", 415, "JSON body"},
		{"without the page's header", kill, js, "", "", "", 403, "X-Slotraft-Chaos"},
		{"from another origin", kill, js, "1", "http://evil.example", "", 403, "evil.example"},
		{"to a rebound name", kill, js, "1", "", "evil.example:80", 403, "loopback"},
		{"an unknown action", `{"action":"reboot","node":"node1"}`, js, "1", "", "", 400, "unknown action"},
		{"an unknown field", `{"action":"kill","node":"node1","x":1}`, js, "1", "", "", 400, "unknown field"},
		{"a kill without a node", `{"action":"kill"}`, js, "1", "", "", 400, "needs a node"},
		{"an unknown node", `{"action":"kill","node":"node9"}`, js, "1", "", "", 404, "node9"},
		{"a partition where none can be made", `{"action":"partition","nodes":["node1"]}`, js, "1", "", "", 503, "not root"},
		{"a kill", kill, js, "1", "http://" + host, "", 200, "kill -9 node1"},
		{"a kill of a node already down", kill, js, "1", "", "", 409, "node1 is killed"},
		{"localhost", kill, js, "1", "", "localhost:80", 409, "node1 is killed"},
	}
	for _, tc := range tests {
		code, says := post(tc.body, tc.ctype, tc.header, tc.origin, tc.host)
		if code != tc.code || !strings.Contains(says, tc.says) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, says, tc.code, tc.says)
		}
	}
	if len(ctl.done) != 1 {
		t.Errorf("actions carried out: %v, want the one kill", ctl.done)
	}
	resp, err := http.Get(ts.URL + "/ui/api/chaos")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	// The log lists what reached the controller: carried out or refused.
	if len(st.Log) != 5 || st.Log[0].Text != `refused: no such node: "node9"` || st.Log[2].Text != "kill -9 node1" ||
		st.Nodes[0].Process != ProcKilled || st.Nodes[0].Can.Kill || !st.Nodes[0].Can.Restart {
		t.Errorf("state after the actions: %+v", st)
	}
}

// TestViewFailsOver: the page's cluster view comes from a running node
// that answers; a node that stopped answering costs one try, and the
// one that answered is asked first next time.
func TestViewFailsOver(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	node := func(id string, ok bool) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			asked = append(asked, id)
			mu.Unlock()
			if !ok {
				http.Error(w, "gone", http.StatusServiceUnavailable)
				return
			}
			server.WriteUIJSON(w, http.StatusOK, server.UICluster{Self: id})
		}))
	}
	n1, n2, n3 := node("node1", false), node("node2", true), node("node3", true)
	defer n1.Close()
	defer n2.Close()
	defer n3.Close()
	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	procs := []Proc{
		{ID: "node1", Process: ProcRunning, HTTP: addr(n1)},
		{ID: "node2", Process: ProcRunning, HTTP: addr(n2)},
		{ID: "node3", Process: ProcPaused, HTTP: addr(n3)}, // would hang: not asked
	}
	v := viewSource{nodes: func() []Proc { return procs }}
	for range 2 {
		c, err := v.get(context.Background())
		if err != nil || c.Self != "node2" {
			t.Fatalf("view from %v, %v; want node2's", c, err)
		}
	}
	if got := strings.Join(asked, ","); got != "node1,node2,node2" {
		t.Errorf("asked %s, want node1,node2,node2", got)
	}
	procs[1].Process = ProcKilled
	if _, err := v.get(context.Background()); err == nil || !strings.Contains(err.Error(), "no node answers") {
		t.Errorf("with no node answering: %v", err)
	}
}

func TestServeOnlyOnLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0"} {
		if _, _, err := Serve(addr, http.NotFoundHandler(), nil); err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("Serve(%s): %v, want a refusal", addr, err)
		}
	}
	url, stop, err := Serve("127.0.0.1:0", New(&fakeCtl{}).Handler(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET %s: %s %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
}

// FuzzDecodeAction and FuzzDecodeView: bytes from the network decode or
// fail, never panic; an action that decodes names a known action with
// its arguments.
func FuzzDecodeAction(f *testing.F) {
	for _, s := range []string{`{"action":"kill","node":"node1"}`, `{"action":"partition","nodes":["a","b"]}`, `{"action":"heal"}`, `{}`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAction(bytes.NewReader(b))
		if err != nil {
			return
		}
		switch a.Action {
		case ActKill, ActPause, ActResume, ActRestart:
			if a.Node == "" {
				t.Fatalf("%q decoded without a node", b)
			}
		case ActPartition:
			if len(a.Nodes) == 0 {
				t.Fatalf("%q decoded without nodes", b)
			}
		case ActHeal:
		default:
			t.Fatalf("%q decoded as action %q", b, a.Action)
		}
	})
}

func FuzzDecodeView(f *testing.F) {
	f.Add([]byte(`{"self":"node1","slots":[{"s":0,"e":16383,"g":1}],"nodes":[{"id":"node1","health":"ok"}]}`))
	f.Add([]byte(`{"slots":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = server.DecodeUIJSON[server.UICluster](bytes.NewReader(b))
	})
}

func TestSplitSides(t *testing.T) {
	ids := []string{"node1", "node2", "node3"}
	tests := []struct {
		side    []string
		in, out string
		err     error
	}{
		{[]string{"node2"}, "{node2}", "{node1,node3}", nil},
		{[]string{"node3", "node1"}, "{node1,node3}", "{node2}", nil},
		{[]string{"node1", "node2", "node3"}, "", "", ErrBadAction},
		{nil, "", "", ErrBadAction},
		{[]string{"node9"}, "", "", ErrUnknownNode},
	}
	for _, tc := range tests {
		in, out, err := SplitSides(ids, tc.side)
		if !errors.Is(err, tc.err) || err == nil && (SideText(in) != tc.in || SideText(out) != tc.out) {
			t.Errorf("SplitSides(%v) = %v, %v, %v; want %s | %s, %v", tc.side, in, out, err, tc.in, tc.out, tc.err)
		}
	}
}
