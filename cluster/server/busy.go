package server

import (
	"math"
	"slices"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// Busy scripts, as Redis 7.2's (script.c, server.c processCommand): while
// a script has run longer than busy-reply-threshold ms in a group hosted
// here, this node's commands for that group are refused with -BUSY, save
// those flagged allow-busy; SCRIPT KILL and FUNCTION KILL stop a script
// running outside Apply (a read-only one). The node's record of running
// scripts is cluster/busy_scripts.go, which says what a script blocks.
//
// Redis is busy as a whole; here only the script's group is: the other
// groups of this node, the other nodes, and the commands that wait for no
// group (PING, CLIENT, INFO…) keep serving.

// Redis 7.2's texts (server.c createSharedObjects, script.c scriptKill).
var (
	errBusyEval     = resp.NewError("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	errBusyFunction = resp.NewError("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
	errUnkillable   = resp.NewError("UNKILLABLE Sorry the script already executed write commands against the dataset. " +
		"You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	// a script inside Apply of a group this node follows: Redis's text
	// for a replica running what its master sent
	errUnkillableReplica = resp.NewError("UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.")
	errNotBusy           = resp.NewError("NOTBUSY No scripts in execution right now.")
)

// busyThreshold is busy-reply-threshold; 0 means never busy. A value too
// large for a Duration (CONFIG accepts up to 2^63-1 ms) is the largest.
func (s *Server) busyThreshold() time.Duration {
	ms := s.statsCfg.busyMs.Load()
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// busyRefused replaces route r with -BUSY when its group is busy with a
// script and its command is not allowed then.
func (s *Server) busyRefused(r route) route {
	if r.group == nil || r.cmd == nil {
		return r
	}
	if err := s.busyErr(r.group, r.cmd); err != nil {
		return route{cmd: r.cmd, reply: resp.Err(err)}
	}
	return r
}

// busyErr is the -BUSY error for cmd on group g, nil when no script makes
// g busy or cmd is allowed then.
func (s *Server) busyErr(g *cluster.Group, cmd *command) error {
	if cmd.meta.Is(resp.FlagAllowBusy) {
		return nil
	}
	if run, busy := s.n.BusyScript(g.ID(), s.busyThreshold()); busy {
		return busyError(run.Function)
	}
	return nil
}

// firstNotBusy is the first of groups that no script makes busy, else the
// first one (nil for none): what any group can answer (keyless reads and
// scripts, FUNCTION STATS) does not wait for a busy group.
func (s *Server) firstNotBusy(groups []*cluster.Group) *cluster.Group {
	for _, g := range groups {
		if _, busy := s.n.BusyScript(g.ID(), s.busyThreshold()); !busy {
			return g
		}
	}
	if len(groups) == 0 {
		return nil
	}
	return groups[0]
}

// busyError is the -BUSY error of a running function or script.
func busyError(function bool) error {
	if function {
		return errBusyFunction
	}
	return errBusyEval
}

// cmdKill is SCRIPT KILL (function false) and FUNCTION KILL.
func cmdKill(function bool) nodeHandler {
	return func(s *Server, _ *client, _ [][]byte) resp.Value {
		res := s.n.KillScripts(function, s.busyThreshold())
		if !function && s.debugs.endAll(true, "", false) > 0 && res == cluster.KillNotBusy {
			res = cluster.KillDone // Lua debugging sessions end too (script_debug.go)
		}
		switch res {
		case cluster.KillDone:
			return resp.OK()
		case cluster.KillUnkillable:
			return resp.Err(errUnkillable)
		case cluster.KillReplicated:
			return resp.Err(errUnkillableReplica)
		case cluster.KillWrongKind: // the running script is of the other kind
			return resp.Err(busyError(!function))
		}
		return resp.Err(errNotBusy)
	}
}

// statsBusyError is FUNCTION STATS's refusal while a script (not a
// function) is busy, as Redis's functionStatsCommand.
func (s *Server) statsBusyError() error {
	if run, busy := s.n.AnyBusyScript(s.busyThreshold()); busy && !run.Function {
		return errBusyEval
	}
	return nil
}

// withRunningScript fills FUNCTION STATS's running_script (v's first
// value, null as the group renders it) with the busy function, as Redis
// 7.2: its name, the command that called it, how long it has run.
func (s *Server) withRunningScript(v resp.Value) resp.Value {
	run, busy := s.n.AnyBusyScript(s.busyThreshold())
	if !busy || !run.Function || v.Kind != resp.KindMap || len(v.Elems) < 2 {
		return v
	}
	v.Elems = slices.Clone(v.Elems)
	v.Elems[1] = resp.Map(resp.BulkString("name"), resp.BulkString(run.Name),
		resp.BulkString("command"), resp.BulkArray(run.Command),
		resp.BulkString("duration_ms"), resp.Int(time.Since(run.Started).Milliseconds()))
	return v
}

// txBusy is EXEC's refusal when a script makes busy the group of the
// transaction's first command with a key (the group EXEC would wait for),
// as Redis's execCommandAbort words it; it comes before the transaction's
// own errors, as processCommand's busy check comes before execCommand.
func (s *Server) txBusy(tx *txState) error {
	for _, q := range tx.queued {
		if q.slot < 0 {
			continue
		}
		if err := s.busyErr(s.n.GroupOf(uint16(q.slot)), s.table.lookup([]byte("exec"))); err != nil {
			return resp.Errorf("EXECABORT Transaction discarded because of: %s", err.Error())
		}
		return nil
	}
	return nil
}
