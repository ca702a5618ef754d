package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
)

// `slotraft server --sentinel-bind host:port`: the node also serves Redis
// Sentinel's protocol there (cluster/server/sentinel.go), for the master
// names of --sentinel-master-name, and announces the facade's address
// (--sentinel-advertise) to the other nodes, whose facades list it
// (SENTINEL SENTINELS). See docs/sentinel.md.

// sentinelOpts are the --sentinel-* flags.
type sentinelOpts struct {
	bind      string // "": no facade
	advertise string // "": the bind address, with the node's advertised host when it binds every interface
	masters   string // comma-separated master names
}

// advertised is the facade address other nodes and clients are given
// ("" without a facade); client is the node's advertised client address.
func (o sentinelOpts) advertised(client string) (string, error) {
	return advertisedFrontEnd("--sentinel-advertise", o.bind, o.advertise, client)
}

// advertisedFrontEnd is the address a front end listening on bind (""
// for none) announces: advertise (the flag named flag) when given, else
// bind, with the node's advertised host (from client) when bind listens
// on every interface.
func advertisedFrontEnd(flag, bind, advertise, client string) (string, error) {
	if bind == "" {
		return "", nil
	}
	if advertise != "" {
		if err := checkHostPort(advertise); err != nil {
			return "", fmt.Errorf("%s: %w", flag, err)
		}
		if isUnspecified(advertise) {
			return "", fmt.Errorf("%s %q is not dialable", flag, advertise)
		}
		return advertise, nil
	}
	if !isUnspecified(bind) {
		return bind, nil
	}
	host, _, err := net.SplitHostPort(client)
	if err != nil {
		return "", fmt.Errorf("%s default: %w", flag, err)
	}
	_, port, _ := net.SplitHostPort(bind)
	return net.JoinHostPort(host, port), nil
}

// check validates the flags before anything starts and gives the
// facade's advertised address to cfg, announced from the node's start.
func (o sentinelOpts) check(cfg *cluster.Config) error {
	if o.bind == "" {
		if o.advertise != "" {
			return errors.New("--sentinel-advertise needs --sentinel-bind")
		}
		return nil
	}
	if err := checkPort(o.bind); err != nil {
		return fmt.Errorf("--sentinel-bind: %w", err)
	}
	if _, err := o.names(); err != nil {
		return err
	}
	adv, err := o.advertised(cfg.ClientAdvertise)
	cfg.FrontEnds.Sentinel = adv
	return err
}

// names are the master names, in order.
func (o sentinelOpts) names() ([]string, error) {
	var out []string
	for _, n := range strings.Split(o.masters, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--sentinel-master-name %q: want at least one name", o.masters)
	}
	return out, nil
}

// startSentinel serves the facade when --sentinel-bind is set; stop
// closes it (the server's Close does too). addr is "" without one.
func startSentinel(o sentinelOpts, srv *server.Server, node *cluster.Node, logger *slog.Logger) (addr string, stop func(), err error) {
	if o.bind == "" {
		return "", func() {}, nil
	}
	names, err := o.names()
	if err != nil {
		return "", nil, err
	}
	adv, err := o.advertised(node.Self().ClientAddr)
	if err != nil {
		return "", nil, err
	}
	f, err := srv.NewSentinel(server.SentinelConfig{Masters: names})
	if err != nil {
		return "", nil, fmt.Errorf("--sentinel-master-name %q: %w", o.masters, err)
	}
	ln, err := net.Listen("tcp", o.bind)
	if err != nil {
		_ = f.Close()
		return "", nil, fmt.Errorf("listen for Sentinel clients on %s: %w", o.bind, err)
	}
	node.SetSentinelAddr(adv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.Serve(ln); err != nil {
			logger.Error("sentinel facade stopped", "err", err)
		}
	}()
	logger.Info("sentinel facade serving", "addr", ln.Addr().String(), "advertise", adv, "masters", names)
	return ln.Addr().String(), func() { _ = f.Close(); <-done }, nil
}
