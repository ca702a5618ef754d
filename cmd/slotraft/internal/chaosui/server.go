package chaosui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/server"
)

const (
	// maxLog bounds the actions the page lists.
	maxLog = 50
	// maxActionBody bounds a POSTed action.
	maxActionBody = 4 << 10
	// actionTimeout bounds one action (a kill waits for the reaping, a
	// partition for nft).
	actionTimeout = 30 * time.Second
)

// Server is a supervisor's dashboard: the page, the cluster's view from
// a node that answers, the chaos state and actions.
type Server struct {
	ctl  Controller
	view viewSource
	mu   sync.Mutex
	log  []LogLine
	act  sync.Mutex // one action at a time
}

// New is the dashboard of the supervisor ctl.
func New(ctl Controller) *Server {
	return &Server{ctl: ctl, view: viewSource{nodes: func() []Proc { return ctl.State().Nodes }}}
}

// Handler serves /ui/ (the page), /ui/api/cluster, /ui/api/chaos and
// POST /ui/api/chaos/action; / redirects to /ui/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static := server.UIStaticHandler()
	mux.Handle("GET /ui", static)
	mux.Handle("GET /ui/", static)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ui/", http.StatusFound) })
	mux.HandleFunc("GET /ui/api/cluster", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.view.get(r.Context())
		if err != nil {
			server.WriteUIJSON(w, http.StatusServiceUnavailable, server.UIError{Error: err.Error()})
			return
		}
		server.WriteUIJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /ui/api/chaos", func(w http.ResponseWriter, _ *http.Request) {
		server.WriteUIJSON(w, http.StatusOK, s.state())
	})
	mux.HandleFunc("POST /ui/api/chaos/action", s.serveAction)
	return mux
}

// state is the controller's state with the log of actions.
func (s *Server) state() State {
	st := s.ctl.State()
	s.mu.Lock()
	st.Log = append([]LogLine{}, s.log...)
	s.mu.Unlock()
	return st
}

func (s *Server) note(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, LogLine{At: time.Now().UTC(), Text: text})
	if len(s.log) > maxLog {
		s.log = s.log[len(s.log)-maxLog:]
	}
}

// serveAction carries out a POSTed action, one at a time.
func (s *Server) serveAction(w http.ResponseWriter, r *http.Request) {
	if code, err := checkActionRequest(r); err != nil {
		server.WriteUIJSON(w, code, server.UIError{Error: err.Error()})
		return
	}
	a, err := decodeAction(http.MaxBytesReader(w, r.Body, maxActionBody))
	if err != nil {
		server.WriteUIJSON(w, http.StatusBadRequest, server.UIError{Error: err.Error()})
		return
	}
	s.act.Lock()
	defer s.act.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	text, err := s.ctl.Do(ctx, a)
	if err != nil {
		s.note("refused: " + err.Error())
		server.WriteUIJSON(w, statusOf(err), server.UIError{Error: err.Error()})
		return
	}
	s.note(text)
	server.WriteUIJSON(w, http.StatusOK, ActionResult{Text: text})
}

// decodeAction reads an action and checks it names one with its
// arguments.
func decodeAction(r io.Reader) (Action, error) {
	var a Action
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Action{}, fmt.Errorf("%w: %w", ErrBadAction, err)
	}
	switch a.Action {
	case ActKill, ActPause, ActResume, ActRestart:
		if a.Node == "" {
			return Action{}, fmt.Errorf("%w: %s needs a node", ErrBadAction, a.Action)
		}
	case ActPartition:
		if len(a.Nodes) == 0 {
			return Action{}, fmt.Errorf("%w: partition needs the nodes to cut off (tick them)", ErrBadAction)
		}
	case ActHeal:
	default:
		return Action{}, fmt.Errorf("%w: unknown action %q (known: kill, pause, resume, restart, partition, heal)", ErrBadAction, a.Action)
	}
	return a, nil
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrUnknownNode):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrBadAction):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// checkActionRequest refuses what a page of another site could send: a
// Host that is not a loopback address (DNS rebinding), an Origin that is
// not the page's, a body that is not JSON or a request without the
// page's header (both need a CORS preflight cross-origin, never granted).
func checkActionRequest(r *http.Request) (int, error) {
	if !loopbackHost(r.Host) {
		return http.StatusForbidden, fmt.Errorf("chaos actions are taken on a loopback address only, not Host %q", r.Host)
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return http.StatusForbidden, fmt.Errorf("chaos actions come from this page only, not from %q", o)
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, errors.New("an action is a JSON body (Content-Type: application/json)")
	}
	if r.Header.Get("X-Slotraft-Chaos") != "1" {
		return http.StatusForbidden, errors.New("an action carries the header X-Slotraft-Chaos: 1")
	}
	return 0, nil
}

// loopbackHost reports whether hostport names this machine by a loopback
// IP address or "localhost".
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Serve serves h on addr, which must be a loopback address, and returns
// the page's URL and the function that stops it.
func Serve(addr string, h http.Handler, logger *slog.Logger) (url string, stop func(), err error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", nil, fmt.Errorf("chaos dashboard address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", nil, fmt.Errorf("chaos dashboard address %q: it kills processes, so it listens on a loopback address only", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("chaos dashboard: listen on %s: %w", addr, err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("chaos dashboard stopped", "err", err)
		}
	}()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}
	return "http://" + ln.Addr().String() + "/ui/", stop, nil
}
