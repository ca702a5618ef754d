package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// startPprof serves Go's profiling endpoints (/debug/pprof/...) on addr, a
// listener of its own: never on the client port, and only when the
// operator asks for it (--pprof), since a profile shows what a process
// does and its heap dump holds data. It returns the address served and a
// function that stops the server. An empty addr serves nothing.
func startPprof(addr string, logger *slog.Logger) (served net.Addr, stop func(), err error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--pprof: listen on %s: %w", addr, err)
	}
	sink := metrics.NewInmemSink(10*time.Second, time.Minute)
	conf := metrics.DefaultConfig("slotraft")
	conf.EnableHostname, conf.EnableRuntimeMetrics, conf.EnableServiceLabel = false, false, false
	if _, err := metrics.NewGlobal(conf, sink); err != nil {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("--pprof: metrics: %w", err)
	}
	mux := pprofMux()
	mux.HandleFunc("/debug/metrics", func(w http.ResponseWriter, r *http.Request) {
		summary, err := sink.DisplayMetrics(w, r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(summary)
	})
	return ln.Addr(), serveHTTP(ln, mux, "pprof", logger), nil
}

// serveHTTP serves h on ln in the background and returns the function
// that stops it (closing ln and every connection). name is what the log
// calls the server.
func serveHTTP(ln net.Listener, h http.Handler, name string, logger *slog.Logger) (stop func()) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn(name+" server stopped", "err", err)
		}
	}()
	logger.Info(name+" serving", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }
}

// pprofMux routes the net/http/pprof handlers on a mux of its own (the
// package's init registers them on http.DefaultServeMux, which nothing here
// serves).
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
