package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/slotraft/slotraft/cluster/server"
)

// opsHTTP is where a node serves HTTP for operators (--http) and whether
// Go's profiles are served there too (--http-pprof).
type opsHTTP struct {
	addr  string
	pprof bool
	// protectedMode is --protected-mode, set on the server before it
	// serves ("" leaves it).
	protectedMode string
	sentinel      sentinelOpts // --sentinel-*: the Sentinel facade (sentinel.go)
	proxy         proxyOpts    // --proxy-*: proxy mode (proxy.go)
}

// errHTTPPprofAlone: --http-pprof mounts the profiles on --http's
// listener, so it means nothing without it.
var errHTTPPprofAlone = errors.New("--http-pprof needs --http")

// startOpsHTTP serves srv's operator endpoints (/metrics, /healthz,
// /readyz: server.HTTPHandler) on o.addr, a listener of its own, with
// /debug/pprof/ when o.pprof is set. It returns the address served and
// the function that stops it; an empty o.addr serves nothing.
func startOpsHTTP(o opsHTTP, srv *server.Server, logger *slog.Logger) (served net.Addr, stop func(), err error) {
	if o.addr == "" {
		return nil, func() {}, nil
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--http: listen on %s: %w", o.addr, err)
	}
	var h http.Handler = srv.HTTPHandler()
	if o.pprof {
		mux := http.NewServeMux()
		mux.Handle("/", h)
		mux.Handle("/debug/pprof/", pprofMux())
		h = mux
	}
	return ln.Addr(), serveHTTP(ln, h, "operator http", logger), nil
}

// httpAdvertise is the operator HTTP address other nodes dial to gather
// this node's figures for their dashboards: the address served, with the
// advertised client host in place of an unspecified one (0.0.0.0, ::).
func httpAdvertise(served net.Addr, clientAdvertise string) string {
	if served == nil {
		return ""
	}
	addr := served.String()
	if !isUnspecified(addr) {
		return addr
	}
	host, _, err := net.SplitHostPort(clientAdvertise)
	_, port, perr := net.SplitHostPort(addr)
	if err != nil || perr != nil {
		return ""
	}
	return net.JoinHostPort(host, port)
}
