package main

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
)

// --http serves the operator endpoints; Go's profiles are there only
// with --http-pprof; no --http serves nothing.
func TestOpsHTTPPprofOnlyOnRequest(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	srv := server.New(c.Nodes[0], cluster.TestLogger())
	defer srv.Close()
	logger := slog.New(slog.DiscardHandler)
	if addr, stop, err := startOpsHTTP(opsHTTP{}, srv, logger); err != nil || addr != nil {
		t.Fatalf("no --http: addr %v, err %v; want nothing served", addr, err)
	} else {
		stop()
	}
	for _, pprof := range []bool{false, true} {
		addr, stop, err := startOpsHTTP(opsHTTP{addr: "127.0.0.1:0", pprof: pprof}, srv, logger)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"/healthz": http.StatusOK, "/debug/pprof/": http.StatusNotFound}
		if pprof {
			want["/debug/pprof/"] = http.StatusOK
		}
		for path, code := range want {
			resp, err := http.Get("http://" + addr.String() + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != code {
				t.Errorf("--http-pprof=%v: GET %s: %d, want %d", pprof, path, resp.StatusCode, code)
			}
		}
		stop()
	}
}

// --http-pprof alone is refused before anything starts.
func TestHTTPPprofNeedsHTTP(t *testing.T) {
	if err := runServer([]string{"--id", "n1", "--http-pprof"}, io.Discard); !errors.Is(err, errHTTPPprofAlone) {
		t.Fatalf("--http-pprof without --http: %v, want %v", err, errHTTPPprofAlone)
	}
}

// TestHTTPAdvertise: the HTTP address a node announces in gossip is one
// other nodes can dial.
func TestHTTPAdvertise(t *testing.T) {
	tests := []struct {
		served, client, want string
	}{
		{"127.0.0.1:9701", "127.0.0.1:7001", "127.0.0.1:9701"},
		{"0.0.0.0:9701", "pod-0.slotraft:6379", "pod-0.slotraft:9701"},
		{"[::]:9701", "[fd00::5]:6379", "[fd00::5]:9701"},
		{"10.0.0.5:80", "node.example:6379", "10.0.0.5:80"},
	}
	for _, tc := range tests {
		addr, err := net.ResolveTCPAddr("tcp", tc.served)
		if err != nil {
			t.Fatal(err)
		}
		if got := httpAdvertise(addr, tc.client); got != tc.want {
			t.Errorf("httpAdvertise(%s, %s) = %q, want %q", tc.served, tc.client, got, tc.want)
		}
	}
	if got := httpAdvertise(nil, "127.0.0.1:7001"); got != "" {
		t.Errorf("no --http: %q", got)
	}
}
