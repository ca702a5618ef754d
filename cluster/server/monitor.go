package server

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// MONITOR: every command this node runs, as Redis's
// replicationFeedMonitors prints it, pushed to the monitoring connections.
// A monitor's output goes through its connection's output queue
// (pubsub_output.go), so feeding never waits for a monitor: past the
// pubsub class's client-output-buffer-limit the monitor is closed.
// Commands are fed once they ran (as Redis's call() feeds them), those
// EXEC runs included; the commands a script or function calls run inside
// the groups' state machines, which keep them while this node has
// monitors, and are fed after the script's own command, as "[0 lua]"
// lines (not inside MULTI: a transaction's calls are not split by command).

var (
	errMonitorDenyBlocking = resp.NewError("ERR MONITOR isn't allowed for DENY BLOCKING client")
	errReplicaKeyspace     = resp.NewError("ERR Replica can't interact with the keyspace")
)

// monitors are the connections in MONITOR mode.
type monitors struct {
	mu   sync.Mutex
	subs map[uint64]*subscriber
	n    atomic.Int32 // len(subs), read without the lock on every command
}

func monitorCommand() *command {
	return &command{meta: &resp.Command{Name: "monitor", Arity: 1, Flags: resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale,
		ACL: []string{"admin", "slow", "dangerous"}, Group: "server", Since: "1.0.0",
		Summary: "Listens for all requests received by the server in real-time."},
		push: cmdMonitor, node: monitorInExec}
}

// monitorInExec is MONITOR queued in MULTI: EXEC runs node commands
// through node handlers, and Redis refuses MONITOR there.
func monitorInExec(*Server, *client, [][]byte) resp.Value { return resp.Err(errMonitorDenyBlocking) }

// cmdMonitor makes c a monitor; a second MONITOR is ignored without a
// reply, as Redis ignores it (so it queues its reply itself, or none).
func cmdMonitor(s *Server, c *client, _ [][]byte) {
	if c.monitoring {
		return
	}
	sub := s.subscriberOf(c)
	sub.monitoring.Store(true)
	c.mu.Lock()
	c.monitoring = true
	c.mu.Unlock()
	s.send(c, resp.OK())
	s.mon.mu.Lock()
	if s.mon.subs == nil {
		s.mon.subs = map[uint64]*subscriber{}
	}
	s.mon.subs[c.id] = sub
	s.mon.n.Store(int32(len(s.mon.subs)))
	s.n.SetMonitoring(len(s.mon.subs) > 0) // scripts' calls are kept while monitors exist
	s.mon.mu.Unlock()
}

// stopMonitor ends c's monitoring (RESET, the connection's end).
func (s *Server) stopMonitor(c *client) {
	if !c.monitoring {
		return
	}
	c.mu.Lock()
	c.monitoring = false
	c.mu.Unlock()
	c.sub.monitoring.Store(false)
	s.mon.mu.Lock()
	delete(s.mon.subs, c.id)
	s.mon.n.Store(int32(len(s.mon.subs)))
	s.n.SetMonitoring(len(s.mon.subs) > 0) // scripts' calls are kept while monitors exist
	s.mon.mu.Unlock()
}

// feedMonitors prints a command c ran to every monitor, unless it is an
// admin command (Redis hides those; for a container, its subcommand's
// flags decide, as Redis's c->cmd is the subcommand).
func (s *Server) feedMonitors(c *client, meta *resp.Command, args [][]byte) {
	if s.mon.n.Load() == 0 {
		return
	}
	if len(meta.Subcommands) > 0 {
		if i, err := meta.SubcommandIndex(args); err == nil {
			meta = meta.Subcommands[i]
		}
	}
	if meta.Is(resp.FlagAdmin) {
		return
	}
	now := time.Now()
	lines := [][]byte{monitorLine(now, c.addr, redactArgs(args))}
	// A script's calls follow it, from "lua", as Redis feeds them
	// (its EVAL, EVALSHA and FCALL feed themselves before they run).
	for _, call := range c.takeScriptCalls(args) {
		lines = append(lines, monitorLine(now, "lua", redactArgs(call)))
	}
	s.mon.mu.Lock()
	defer s.mon.mu.Unlock()
	for _, sub := range s.mon.subs {
		for _, line := range lines {
			sub.out.push(line)
		}
	}
}

// scriptCalls are the commands one script command of a client called
// (fsm.Outcome.Calls), kept from its reply until it is fed.
type scriptCalls struct {
	args  [][]byte // the script command's arguments (the same slice)
	calls [][][]byte
}

// keepScriptCalls keeps the calls of the script command args until
// feedMonitors prints that command.
func (c *client) keepScriptCalls(args [][]byte, calls [][][]byte) {
	c.scriptCalls = append(c.scriptCalls, scriptCalls{args: args, calls: calls})
}

// takeScriptCalls returns and forgets the calls kept for args.
func (c *client) takeScriptCalls(args [][]byte) [][][]byte {
	for i, sc := range c.scriptCalls {
		if len(args) > 0 && len(sc.args) > 0 && &sc.args[0] == &args[0] {
			c.scriptCalls = append(c.scriptCalls[:i], c.scriptCalls[i+1:]...)
			return sc.calls
		}
	}
	return nil
}

// monitorLine is one line of MONITOR's output.
func monitorLine(at time.Time, from string, args [][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "+%d.%06d [0 %s]", at.Unix(), at.Nanosecond()/1000, from)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(repr(string(a)))
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

var redacted = []byte("(redacted)")

// redactArgs hides the secrets of AUTH, HELLO … AUTH and MIGRATE … AUTH
// and AUTH2, as Redis's redactClientCommandArgument does.
func redactArgs(args [][]byte) [][]byte {
	hide := func(out [][]byte, i int) [][]byte {
		if out == nil {
			out = append([][]byte(nil), args...)
		}
		out[i] = redacted
		return out
	}
	var out [][]byte
	switch name := strings.ToLower(string(args[0])); name {
	case "auth":
		for i := 1; i < len(args); i++ {
			out = hide(out, i)
		}
	case "hello", "migrate":
		for i := 1; i < len(args); i++ {
			opt := strings.ToLower(string(args[i]))
			switch {
			case opt == "auth" && name == "hello" && i+2 < len(args):
				out, i = hide(hide(out, i+1), i+2), i+2
			case opt == "auth" && name == "migrate" && i+1 < len(args):
				out, i = hide(out, i+1), i+1
			case opt == "auth2" && name == "migrate" && i+2 < len(args):
				out, i = hide(hide(out, i+1), i+2), i+2
			}
		}
	}
	if out == nil {
		return args
	}
	return out
}
