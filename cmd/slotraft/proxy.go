package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/server/proxy"
)

// `slotraft server --proxy-bind host:port`: the node also serves clients
// that do not speak Redis Cluster there (cluster/server/proxy,
// docs/proxy.md), and announces the proxy's address (--proxy-advertise)
// in gossip, where a Sentinel facade of a cluster of several groups finds
// a master to name (docs/sentinel.md).

// proxyOpts are the --proxy-* flags.
type proxyOpts struct {
	bind      string // "": no proxy
	advertise string // "": the bind address, with the node's advertised host when it binds every interface
}

// check validates the flags before anything starts and gives the proxy's
// advertised address to cfg, announced from the node's start.
func (o proxyOpts) check(cfg *cluster.Config) error {
	if o.bind == "" {
		if o.advertise != "" {
			return errors.New("--proxy-advertise needs --proxy-bind")
		}
		return nil
	}
	if err := checkPort(o.bind); err != nil {
		return fmt.Errorf("--proxy-bind: %w", err)
	}
	adv, err := advertisedFrontEnd("--proxy-advertise", o.bind, o.advertise, cfg.ClientAdvertise)
	cfg.FrontEnds.Proxy = adv
	return err
}

// startProxy serves proxy mode for node when --proxy-bind is set: its
// clients are held to the server's protected mode, maxclients and request
// limits, their commands routed by the server's command table. It returns
// the address served ("" without one) and the function that stops it
// (closing its clients and their connections to the nodes).
func startProxy(o proxyOpts, node *cluster.Node, srv *server.Server, logger *slog.Logger) (addr string, stop func(), err error) {
	if o.bind == "" {
		return "", func() {}, nil
	}
	adv, err := advertisedFrontEnd("--proxy-advertise", o.bind, o.advertise, node.Self().ClientAddr)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", o.bind)
	if err != nil {
		return "", nil, fmt.Errorf("--proxy-bind: listen on %s: %w", o.bind, err)
	}
	p := proxy.New(node, proxy.Options{
		Commands: server.Commands(),
		Logger:   logger,
		Admit:    func(nc net.Conn) bool { return !srv.RefuseUnprotected(nc) },
		Limits:   srv.ClientLimits,
	})
	node.SetProxyAddr(adv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Serve(ln); err != nil {
			logger.Error("proxy stopped serving", "err", err)
		}
	}()
	return ln.Addr().String(), func() {
		node.SetProxyAddr("") // no facade names a proxy that is gone
		_ = p.Close()
		<-done
	}, nil
}
