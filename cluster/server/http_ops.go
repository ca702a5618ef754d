package server

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HTTPHandler serves HTTP for operators, on a listener of its own (the
// process's --http), never on the client port:
//
//	/metrics  Prometheus's text format (metrics.go): this server's
//	          collector, Go's runtime and the process;
//	/healthz  200 "ok" while the process serves;
//	/readyz   200 "ready" when every readiness check passes (readyz.go),
//	          else 503 with one line per failing check;
//	/ui/      the live dashboard and its JSON (ui.go).
//
// Each call makes a registry of its own, so several servers in one
// process (tests) do not share metrics.
func (s *Server) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry(), promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		textReply(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		failing := readiness(s.health())
		if len(failing) == 0 {
			textReply(w, http.StatusOK, "ready\n")
			return
		}
		var b strings.Builder
		for _, f := range failing {
			b.WriteString(f.String())
			b.WriteByte('\n')
		}
		textReply(w, http.StatusServiceUnavailable, b.String())
	})
	s.mountUI(mux)
	return mux
}

func textReply(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
}
