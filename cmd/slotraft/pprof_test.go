package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestPprofOffByDefault(t *testing.T) {
	addr, stop, err := startPprof("", slog.New(slog.DiscardHandler))
	if err != nil || addr != nil {
		t.Fatalf("empty --pprof: addr %v, err %v; want nothing served", addr, err)
	}
	stop()
}

func TestPprofServesProfiles(t *testing.T) {
	addr, stop, err := startPprof("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/goroutine?debug=1": "goroutine profile:",
		"/debug/pprof/cmdline":           "",
	} {
		resp, err := http.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: status %d, body %.80q; want 200 containing %q", path, resp.StatusCode, body, want)
		}
	}
}

func TestPprofRefusesBadAddress(t *testing.T) {
	if _, _, err := startPprof("127.0.0.1:99999", slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--pprof") {
		t.Fatalf("bad --pprof address: err %v; want an error naming --pprof", err)
	}
}
