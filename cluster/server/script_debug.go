package server

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// SCRIPT DEBUG and the Lua debugger's sessions at the node (the debugger
// itself is fsm's: fsm/ldb*.go).
//
// SCRIPT DEBUG YES makes the connection's next EVAL or EVAL_RO a
// debugging session, as Redis's forked mode: routed as the EVAL would be
// (CROSSSLOT, MOVED; a script without keys goes to a group led here), it
// runs on the connection's goroutine against a private copy-on-write copy
// of its group's state taken after a read barrier, never through the log;
// its changes are thrown away, and the connection is closed after the
// EVAL's reply, as Redis closes it. Other clients and Apply go on
// meanwhile: the session makes no group busy.
//
// SCRIPT DEBUG SYNC is refused: Redis keeps a synchronous session's
// changes while it blocks the server, but a slotraft script's writes are
// one log entry that every replica applies alike, which a script stepped
// by hand on one node cannot be. Since redis-cli --ldb-sync-mode sends
// its EVAL whatever SCRIPT DEBUG answered, the connection's next EVAL is
// refused too (as Redis refuses an EVAL whose session cannot start),
// rather than run for real with nobody stepping it.

// ldbMode is a connection's debug mode (Redis's CLIENT_LUA_DEBUG flags).
type ldbMode uint8

const (
	ldbOff         ldbMode = iota
	ldbYes                 // the next EVAL is a debugging session
	ldbSyncRefused         // the next EVAL gets errDebugSync
)

var (
	errDebugSync = resp.NewError("ERR SCRIPT DEBUG SYNC is not supported: a script's writes go through its group's Raft log, " +
		"which a script stepped by hand cannot; use SCRIPT DEBUG YES (changes rolled back)")
	errDebugPipeline = resp.NewError("ERR SCRIPT DEBUG must be called outside a pipeline")
	errDebugMode     = resp.NewError("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	errDebugEvalSHA  = resp.NewError("ERR Please use EVAL instead of EVALSHA for debugging")
)

// Why a session ends before its script does (fsm.DebugEnd's reasons).
const (
	endNodeClosing = "ERR Lua debugging session ended: the node is shutting down"
	endNotLeader   = "ERR Lua debugging session ended: this node no longer leads the script's slot group"
)

// How long a session waits on its client between checks that it may go
// on, and how long a write to it may take (Redis's 5 s send timeout).
const (
	debugPoll         = 250 * time.Millisecond
	debugWriteTimeout = 5 * time.Second
)

// cmdScriptDebug is SCRIPT DEBUG YES|SYNC|NO.
func cmdScriptDebug(_ *Server, c *client, args [][]byte) resp.Value {
	if len(c.conn.out) > 0 || c.inExec {
		return resp.Err(errDebugPipeline) // replies queued before it, as Redis's clientHasPendingReplies
	}
	switch mode := args[2]; {
	case resp.EqualFold(mode, "no"):
		c.ldb = ldbOff
	case resp.EqualFold(mode, "yes"):
		c.ldb = ldbYes
	case resp.EqualFold(mode, "sync"):
		c.ldb = ldbSyncRefused
		return resp.Err(errDebugSync)
	default:
		return resp.Err(errDebugMode)
	}
	return resp.OK()
}

// routeDebug routes an EVAL family command of a connection in debug mode:
// where the EVAL would run (a group led here), else MOVED; EVALSHA and
// EVALSHA_RO are refused there, as Redis refuses them.
func (s *Server) routeDebug(c *client, cmd *command, args [][]byte) route {
	if c.ldb == ldbSyncRefused {
		c.ldb = ldbOff
		return route{cmd: cmd, reply: resp.Err(errDebugSync)}
	}
	var g *cluster.Group
	if n, err := fsm.ParseNumKeys(args); err != nil || n == 0 {
		// No key (or a numkeys the session will refuse, after it starts,
		// as Redis Cluster runs such an EVAL where it was sent).
		if g = s.firstNotBusy(s.ledGroups()); g == nil {
			return route{cmd: cmd, reply: resp.Err(resp.ErrClusterDown)}
		}
	} else {
		slot := slots.Of(args[3])
		for _, k := range args[4 : 3+n] {
			if slots.Of(k) != slot {
				return route{cmd: cmd, reply: resp.Err(resp.ErrCrossSlot)}
			}
		}
		if g = s.n.GroupOf(slot); !g.IsLeader() {
			return route{cmd: cmd, reply: s.redirect(c, g, slot)}
		}
	}
	if cmd.data.Script.WithBody != nil {
		if len(args[1]) != 40 {
			return route{cmd: cmd, reply: resp.Err(fsm.ErrNoScript)}
		}
		return route{cmd: cmd, reply: resp.Err(errDebugEvalSHA)}
	}
	return route{kind: routeDebug, cmd: cmd, group: g}
}

// debugEval runs a debugging session on c's connection and returns the
// EVAL's reply; the connection closes after it.
func (s *Server) debugEval(c *client, g *cluster.Group, cmd *command, args [][]byte) resp.Value {
	c.ldb = ldbOff                         // whatever happens, as Redis's session
	if err := c.conn.flush(); err != nil { // replies before the EVAL come first
		c.closing = true // the client is gone
		return resp.Err(err)
	}
	var cp *fsm.DebugCopy
	var now int64
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	err := g.Read(ctx, func(st fsm.Reader) { cp, now = st.DebugCopy(), cluster.ReadNow(st) })
	cancel()
	if err != nil {
		return s.groupError(c, g, args, err)
	}
	end := new(fsm.DebugEnd)
	if !s.debugs.add(end) {
		return resp.Err(resp.NewError(endNodeClosing))
	}
	defer s.debugs.remove(end)
	c.closing = true // after the EVAL's reply, as Redis ends a session
	start := time.Now()
	conn := &debugConn{c: c, g: g, term: g.Term(), end: end}
	return cp.Eval(now, args, cmd.meta.Is(resp.FlagReadOnly), fsm.DebugOpts{
		Conn: conn, End: end, User: scriptUserOf(c),
		Clock: func() time.Duration { return time.Since(start) }, TimeLimit: s.busyThreshold(),
	})
}

// debugConn is a session's connection: reads wait for the client in
// short rounds, checking between them that the session may go on (not
// ended by SCRIPT KILL or the node closing, its group still led here in
// the term it started in: a leadership that moved and came back between
// two rounds ends it too).
type debugConn struct {
	c    *client
	g    *cluster.Group
	term uint64
	end  *fsm.DebugEnd
}

var errDebugEnded = errors.New("debugging session ended")

func (d *debugConn) Read(p []byte) (int, error) {
	w := d.c.watch
	for {
		if d.end.Ended() {
			return 0, errDebugEnded
		}
		if !d.g.IsLeader() || d.g.Term() != d.term {
			d.end.End(endNotLeader)
			return 0, errDebugEnded
		}
		n, err := w.ReadWithin(p, debugPoll)
		var ne net.Error
		if n == 0 && errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		return n, err
	}
}

func (d *debugConn) Write(p []byte) (int, error) {
	nc := d.c.conn.nc
	_ = nc.SetWriteDeadline(time.Now().Add(debugWriteTimeout))
	defer func() { _ = nc.SetWriteDeadline(time.Time{}) }()
	return nc.Write(p)
}

// debugSessions are the node's debugging sessions: SCRIPT KILL ends them,
// and so does the server's Close.
type debugSessions struct {
	mu     sync.Mutex
	ends   map[*fsm.DebugEnd]struct{}
	closed bool
}

// add registers a session; false once the server is closing.
func (d *debugSessions) add(e *fsm.DebugEnd) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	if d.ends == nil {
		d.ends = map[*fsm.DebugEnd]struct{}{}
	}
	d.ends[e] = struct{}{}
	return true
}

func (d *debugSessions) remove(e *fsm.DebugEnd) {
	d.mu.Lock()
	delete(d.ends, e)
	d.mu.Unlock()
}

// endAll ends every session (kill: as SCRIPT KILL, else with reason) and
// returns how many there were; close refuses sessions from now on.
func (d *debugSessions) endAll(kill bool, reason string, close bool) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = d.closed || close
	for e := range d.ends {
		if kill {
			e.Kill()
		} else {
			e.End(reason)
		}
	}
	return len(d.ends)
}

// count is how many sessions run (tests).
func (d *debugSessions) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.ends)
}
