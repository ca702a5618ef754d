package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
)

// shutdownGrace bounds how long the client server may take to stop serving
// after Close before the process gives up waiting for it.
const shutdownGrace = 10 * time.Second

// leaveTimeout bounds how long a stopping node tries to hand its
// leaderships to other replicas and waits for its groups to have a quorum
// without it (Node.Leave) before it closes anyway. Below Kubernetes'
// default 30 s grace period.
const leaveTimeout = 20 * time.Second

// runServer implements `slotraft server`: it runs one node until SIGINT or
// SIGTERM, then shuts down cleanly and returns nil.
func runServer(args []string, stderr io.Writer) error {
	fs, f := newServerFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "slotraft server: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	var file *server.ConfigFile
	if f.config != "" {
		var err error
		if file, err = readConfigFile(fs, f); err != nil {
			return reportConfigError(err, stderr)
		}
	}
	logger, err := newLogger(stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	cfg, err := f.clusterConfig()
	if err != nil {
		return err
	}
	cfg.Logger = logger
	_, stopPprof, err := startPprof(f.pprof, logger)
	if err != nil {
		return err
	}
	defer stopPprof()
	ctx, stop, which := signalContext()
	defer stop()
	return serveNode(ctx, stop, func() bool { return which() == syscall.SIGTERM }, cfg, file, logger)
}

// reportConfigError prints a bad line of the config file as Redis does
// (the line number, the line, the reason) and returns errReported, so
// the process exits with 1 and no second message.
func reportConfigError(err error, stderr io.Writer) error {
	var fe *server.ConfigFileError
	if !errors.As(err, &fe) {
		return err
	}
	fmt.Fprint(stderr, fe.Error())
	return errReported
}

// signalContext is done at the first SIGINT or SIGTERM; which tells which
// one arrived. stop restores the default handling.
func signalContext() (ctx context.Context, stop func(), which func() os.Signal) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	var got atomic.Value
	go func() {
		select {
		case sig := <-sigs:
			got.Store(sig)
			cancel()
		case <-ctx.Done():
		}
	}()
	stop = func() { signal.Stop(sigs); cancel() }
	which = func() os.Signal { sig, _ := got.Load().(os.Signal); return sig }
	return ctx, stop, which
}

// serveNode opens the client listener and the node, takes the config
// file's parameters (file may be nil), serves clients until ctx
// is done, then closes the server and the node. stop is called once ctx is
// done so that a second signal kills the process the default way. When
// handOff says so (SIGTERM: one node of a running cluster is stopped, as in
// a rolling restart), the node first hands its leaderships to other
// replicas; SIGINT (Ctrl-C on `make run`, which stops every node) does not.
func serveNode(ctx context.Context, stop func(), handOff func() bool, cfg cluster.Config, file *server.ConfigFile, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", cfg.ClientBind)
	if err != nil {
		return fmt.Errorf("listen for clients on %s: %w", cfg.ClientBind, err)
	}
	node, err := cluster.NewNode(cfg)
	if err != nil {
		ln.Close()
		return fmt.Errorf("start node %s: %w", cfg.ID, err)
	}
	srv := server.New(node, logger)
	if file != nil {
		if err := srv.UseConfigFile(file); err != nil {
			return errors.Join(err, srv.Close(), node.Close(), ln.Close())
		}
	}
	shutdownReq := make(chan bool, 1) // SHUTDOWN: whether to hand off first
	srv.SetShutdown(func(handOff bool) {
		select {
		case shutdownReq <- handOff:
		default: // one is already on its way
		}
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("slotraft node started",
		"id", cfg.ID, "version", version, "client", ln.Addr().String(), "advertise", cfg.ClientAdvertise,
		"bus", node.BusAddr(), "bus_advertise", cfg.BusAdvertise, "data_dir", cfg.DataDir,
		"peers", len(cfg.Peers), "join", cfg.Join, "bootstrap", cfg.Bootstrap, "bootstrap_expect", cfg.BootstrapExpect,
		"groups", cfg.Groups, "replicas", cfg.Replicas, "dead_after", cfg.DeadAfter)

	var serveErr error
	select {
	case <-ctx.Done():
		stop()
		logger.Info("signal received, shutting down", "id", cfg.ID)
		if handOff() {
			leave(node, logger)
		}
	case handOff := <-shutdownReq:
		stop()
		logger.Info("SHUTDOWN received, shutting down", "id", cfg.ID, "hand_off", handOff)
		if handOff {
			leave(node, logger)
		}
	case <-node.LeaveRequested():
		stop()
		logger.Info("leave requested, shutting down", "id", cfg.ID)
		leave(node, logger)
	case serveErr = <-served:
		served = nil
		logger.Error("client server stopped", "err", serveErr)
	}
	return shutdown(srv, node, served, serveErr, logger)
}

// leave hands the node's leaderships to other replicas, so clients are
// redirected (MOVED) instead of waiting for an election, and waits until its
// groups have a quorum without it.
func leave(node *cluster.Node, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if err := node.Leave(ctx); err != nil {
		logger.Warn("leaving incomplete", "err", err)
	}
}

// shutdown stops accepting clients, waits for Serve to return, closes the
// node, and reports the first real error.
func shutdown(srv *server.Server, node *cluster.Node, served <-chan error, serveErr error, logger *slog.Logger) error {
	closeErr := srv.Close()
	if served != nil {
		select {
		case <-served:
		case <-time.After(shutdownGrace):
			logger.Warn("client server did not stop in time", "after", shutdownGrace)
		}
	}
	nodeErr := node.Close()
	switch {
	case serveErr != nil && !errors.Is(serveErr, server.ErrClosed) && !errors.Is(serveErr, net.ErrClosed):
		return fmt.Errorf("serve clients: %w", serveErr)
	case closeErr != nil:
		return fmt.Errorf("close client server: %w", closeErr)
	case nodeErr != nil:
		return fmt.Errorf("close node: %w", nodeErr)
	}
	logger.Info("slotraft node stopped")
	return nil
}
