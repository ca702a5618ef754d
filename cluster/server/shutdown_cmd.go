package server

import (
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the process that runs the
// server stops, through the hook it installed (SetShutdown). Without NOW
// the node first leaves as on SIGTERM: it hands its leaderships to other
// replicas and waits, up to shutdown-timeout, until its groups have a
// quorum without it; NOW stops at once (Redis's NOW: do not wait for
// replicas). SAVE, or save points without NOSAVE, snapshots every hosted
// group first (FORCE goes on if that fails).
// Acknowledged writes are in the Raft log, so NOSAVE and the default lose
// nothing. The client gets no reply: its connection closes with the
// server, as Redis's does when it exits.

var (
	errShutdownFailed = resp.NewError("ERR Errors trying to SHUTDOWN. Check logs.")
	errNoShutdown     = resp.NewError("ERR No shutdown in progress.")
)

// ShutdownFunc asks the process to stop the node as plan says (a SHUTDOWN
// has saved already, when it had to).
type ShutdownFunc func(plan ShutdownPlan)

// SetShutdown installs the hook SHUTDOWN calls; without one, SHUTDOWN
// answers Redis's shutdown error.
func (s *Server) SetShutdown(fn ShutdownFunc) { s.shutdownFn.Store(&fn) }

func shutdownCommand() *command {
	return &command{meta: &resp.Command{Name: "shutdown", Arity: -1,
		Flags: resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagNoMulti | resp.FlagAllowBusy,
		ACL:   []string{"admin", "slow", "dangerous"}, Group: "server", Since: "1.0.0",
		Summary:    "Synchronously saves the database(s) to disk and shuts down the Redis server.",
		Complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)"},
		push: cmdShutdown}
}

// shutdownFlags are SHUTDOWN's options.
type shutdownFlags struct{ save, nosave, now, force, abort bool }

// parseShutdown reads SHUTDOWN's options as Redis's shutdownCommand does.
func parseShutdown(args [][]byte) (shutdownFlags, error) {
	var f shutdownFlags
	for _, a := range args[1:] {
		switch strings.ToLower(string(a)) {
		case "nosave":
			f.nosave = true
		case "save":
			f.save = true
		case "now":
			f.now = true
		case "force":
			f.force = true
		case "abort":
			f.abort = true
		default:
			return f, resp.ErrSyntax
		}
	}
	if (f.abort && (f.save || f.nosave || f.now || f.force)) || (f.save && f.nosave) {
		return f, resp.ErrSyntax
	}
	return f, nil
}

// cmdShutdown asks the process to stop, then waits for the server to
// close, which ends the connection without a reply.
func cmdShutdown(s *Server, c *client, args [][]byte) {
	f, err := parseShutdown(args)
	switch {
	case err != nil:
		s.send(c, resp.Err(err))
		return
	case f.abort:
		// A leave once begun is not undone (leaderships already moved).
		s.send(c, resp.Err(errNoShutdown))
		return
	}
	if run, busy := s.n.AnyBusyScript(s.busyThreshold()); busy && !f.nosave {
		// Redis: only SHUTDOWN NOSAVE may stop a server busy with a script.
		s.send(c, resp.Err(busyError(run.Function)))
		return
	}
	s.n.StopScripts() // the read-only ones; those in Apply end by their budget
	fn := s.shutdownFn.Load()
	if fn == nil {
		s.log.Warn("SHUTDOWN refused: this server has no shutdown hook")
		s.send(c, resp.Err(errShutdownFailed))
		return
	}
	if f.save || (!f.nosave && s.hasSavePoints()) {
		if err := s.n.Save(); err != nil && !f.force {
			s.log.Warn("SHUTDOWN SAVE failed", "err", err)
			s.send(c, resp.Err(errShutdownFailed))
			return
		}
	}
	plan := ShutdownPlan{HandOff: !f.now, Wait: s.shutdownWait()}
	s.log.Info("SHUTDOWN requested", "client", c.addr, "hand_off", plan.HandOff, "wait", plan.Wait)
	// The replies to the commands pipelined before SHUTDOWN go out now:
	// the server's Close will close the socket under this wait.
	if c.sub == nil {
		_ = c.conn.flush()
	}
	(*fn)(plan)
	<-s.ctx.Done() // Close: the process is stopping
	c.closing = true
}
