package server

import (
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"time"
)

// The live dashboard (/ui) on the operator HTTP port: static files
// embedded in the binary (ui/: HTML, CSS, JavaScript, no external
// resource) and two JSON endpoints the page polls:
//
//	/ui/api/cluster  UICluster: the map's slots, migrations, nodes with
//	                 their health and figures, groups, recent events;
//	/ui/api/node     UINodeStats: this node's own figures, which the
//	                 node serving the page fetches from every other node.
//
// The page talks to its own origin only; no CORS header is ever sent, so
// other sites' scripts cannot read the answers. docs/dashboard.md.

//go:embed ui
var uiFiles embed.FS

// UIFiles are the dashboard's static files (index.html, app.js,
// style.css), for a process that serves the page itself (the chaos
// supervisors in cmd/slotraft).
func UIFiles() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree always has ui/
	}
	return sub
}

// UISecurityHeaders are set on every dashboard answer: the page may load
// only its own files and talk only to its own origin, and may not be
// framed.
func UISecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

// UIStaticHandler serves the dashboard's files under /ui/ (and /ui
// redirected there).
func UIStaticHandler() http.Handler {
	files := http.StripPrefix("/ui/", http.FileServerFS(UIFiles()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" {
			http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
			return
		}
		UISecurityHeaders(w.Header())
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// mountUI adds the dashboard to mux.
func (s *Server) mountUI(mux *http.ServeMux) {
	u := &uiState{s: s}
	static := UIStaticHandler()
	mux.Handle("GET /ui", static)
	mux.Handle("GET /ui/", static)
	mux.HandleFunc("GET /ui/api/cluster", func(w http.ResponseWriter, r *http.Request) {
		WriteUIJSON(w, http.StatusOK, u.clusterView(r.Context()))
	})
	mux.HandleFunc("GET /ui/api/node", func(w http.ResponseWriter, _ *http.Request) {
		WriteUIJSON(w, http.StatusOK, u.nodeStats(time.Now()))
	})
	mux.HandleFunc("GET /ui/api/", func(w http.ResponseWriter, _ *http.Request) {
		WriteUIJSON(w, http.StatusNotFound, UIError{Error: "no such dashboard endpoint on a node (chaos controls are served by `slotraft dev --chaos-ui` and `slotraft chaos run --ui`)"})
	})
}

// UIError is a dashboard endpoint's error answer.
type UIError struct {
	Error string `json:"error"`
}

// WriteUIJSON answers v as JSON with the dashboard's headers.
func WriteUIJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		code = http.StatusInternalServerError
		b.Reset()
		_ = json.NewEncoder(&b).Encode(UIError{Error: "encode: " + err.Error()})
	}
	UISecurityHeaders(w.Header())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}
