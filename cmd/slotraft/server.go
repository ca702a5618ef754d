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
	if err := applyEnv(fs, os.LookupEnv); err != nil {
		return err
	}
	var file *server.ConfigFile
	if f.config != "" {
		var err error
		if file, err = readConfigFile(fs, f); err != nil {
			return reportConfigError(err, stderr)
		}
	}
	if f.httpPprof && f.http == "" {
		return errHTTPPprofAlone
	}
	out, closeLog, err := logOutput(file, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	logger, level, err := newLogger(out, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	plog := procLog{logger: logger, level: level, levelGiven: flagGiven(fs, "log-level"), flagLevel: level.Level()}
	cfg, err := f.clusterConfig()
	if err != nil {
		return err
	}
	if err := f.sentinel.check(&cfg); err != nil {
		return err
	}
	if err := f.proxy.check(&cfg); err != nil {
		return err
	}
	cfg.Logger = logger
	warnBusSecurity(logger, f)
	_, stopPprof, err := startPprof(f.pprof, logger)
	if err != nil {
		return err
	}
	defer stopPprof()
	ops := opsHTTP{addr: f.http, pprof: f.httpPprof, protectedMode: f.protectedMode, sentinel: f.sentinel, proxy: f.proxy}
	return serveNode(cfg, ops, file, plog)
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
// file's parameters (file may be nil), serves operators' HTTP (ops),
// serves clients until a signal, SHUTDOWN or a leave request stops it
// (awaitStop), then leaves as the plan says and closes the server and the
// node.
func serveNode(cfg cluster.Config, ops opsHTTP, file *server.ConfigFile, plog procLog) error {
	logger := plog.logger
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
	srv.SetVersion(buildVersion())
	srv.SetLogLevelVar(plog.level)
	if file != nil {
		if err := srv.UseConfigFile(file); err != nil {
			return errors.Join(err, srv.Close(), node.Close(), ln.Close())
		}
	}
	plog.flagWins(srv)
	if ops.protectedMode != "" { // the flag wins over the file, as every flag
		if err := srv.SetConfig("protected-mode", ops.protectedMode); err != nil {
			return errors.Join(fmt.Errorf("--protected-mode: %w", err), srv.Close(), node.Close(), ln.Close())
		}
	}
	httpAddr, stopHTTP, err := startOpsHTTP(ops, srv, logger)
	if err != nil {
		return errors.Join(err, srv.Close(), node.Close(), ln.Close())
	}
	sentinelAddr, stopSentinel, err := startSentinel(ops.sentinel, srv, node, logger)
	if err != nil {
		stopHTTP()
		return errors.Join(err, srv.Close(), node.Close(), ln.Close())
	}
	proxyAddr, stopProxy, err := startProxy(ops.proxy, node, srv, logger)
	if err != nil {
		stopSentinel()
		stopHTTP()
		return errors.Join(err, srv.Close(), node.Close(), ln.Close())
	}
	// Other nodes' dashboards gather this node's figures from there.
	node.SetHTTPAddr(httpAdvertise(httpAddr, node.Self().ClientAddr))

	shutdownReq := make(chan server.ShutdownPlan, 1) // SHUTDOWN's
	srv.SetShutdown(func(plan server.ShutdownPlan) {
		select {
		case shutdownReq <- plan:
		default: // one is already on its way
		}
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("slotraft node started",
		"id", cfg.ID, "version", buildVersion(), "client", ln.Addr().String(), "advertise", cfg.ClientAdvertise,
		"bus", node.BusAddr(), "bus_advertise", cfg.BusAdvertise, "data_dir", cfg.DataDir,
		"peers", len(cfg.Peers), "join", cfg.Join, "bootstrap", cfg.Bootstrap, "bootstrap_expect", cfg.BootstrapExpect, "meet", cfg.Meet,
		"groups", cfg.Groups, "replicas", cfg.Replicas, "dead_after", cfg.DeadAfter, "http", httpAddr, "sentinel", sentinelAddr, "proxy", proxyAddr)

	plan, serveErr := awaitStop(srv, node, shutdownReq, served, logger)
	if serveErr != nil {
		served = nil
	} else if plan.HandOff {
		leave(node, plan, logger)
	}
	stopHTTP()  // no scrape reads a node that is closing
	stopProxy() // its clients go before the node they are served by
	stopSentinel()
	return shutdown(srv, node, served, serveErr, logger)
}

// awaitStop serves until the node must stop and says how: a signal
// (shutdown-on-sigterm / -sigint), SHUTDOWN (which saved already), a
// leave request (hand off), or the client server failing (serveErr).
// When a signal's plan saves and the save fails without force, the node
// goes on serving, as Redis does, and a later signal is handled again;
// while one is being handled, a second one kills the process the default
// way.
func awaitStop(srv *server.Server, node *cluster.Node, shutdownReq <-chan server.ShutdownPlan, served <-chan error, logger *slog.Logger) (server.ShutdownPlan, error) {
	for {
		ctx, stop, which := signalContext()
		select {
		case <-ctx.Done():
			stop()
			sig := which()
			plan := srv.SignalShutdownPlan(sig == syscall.SIGTERM)
			logger.Info("signal received, shutting down", "signal", sig.String(), "hand_off", plan.HandOff, "save", plan.Save, "wait", plan.Wait)
			if plan.Save {
				if err := node.Save(); err != nil && !plan.Force {
					logger.Error("Errors trying to shut down the server. Check the logs for more information.", "err", err)
					continue
				}
			}
			return plan, nil
		case plan := <-shutdownReq:
			stop()
			logger.Info("SHUTDOWN received, shutting down", "hand_off", plan.HandOff, "wait", plan.Wait)
			return plan, nil
		case <-node.LeaveRequested():
			stop()
			logger.Info("leave requested, shutting down")
			return srv.LeavePlan(), nil
		case err := <-served:
			stop()
			logger.Error("client server stopped", "err", err)
			if err == nil {
				err = server.ErrClosed // it returned: nothing left to wait for
			}
			return server.ShutdownPlan{}, err
		}
	}
}

// leave hands the node's leaderships to other replicas, so clients are
// redirected (MOVED) instead of waiting for an election, and waits up to
// the plan's wait until its groups have a quorum without it.
func leave(node *cluster.Node, plan server.ShutdownPlan, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), plan.LeaveTimeout())
	defer cancel()
	if err := node.Leave(ctx, plan.Wait); err != nil {
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
