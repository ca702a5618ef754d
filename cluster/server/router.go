package server

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// routeKind says where a command goes.
type routeKind uint8

const (
	routeReply   routeKind = iota // answered without running: an error or a redirect
	routeNode                     // a node command, run by the server
	routeRead                     // a read on a group led here (linearizable)
	routeStale                    // a READONLY read on a local replica
	routeWrite                    // a write proposed to a group led here
	routeKeyless                  // a data command without keys
	routeDebug                    // an EVAL run as a Lua debugging session (script_debug.go)
)

// route is where one command goes.
type route struct {
	kind  routeKind
	cmd   *command
	group *cluster.Group
	reply resp.Value
	// denial: the reply is NOPERM, to log when the command is answered.
	denial *acl.Denial
}

// maxBatch bounds how many pipelined commands share one proposal or one
// read-index round.
const maxBatch = 512

// serve runs a pipeline of commands in order, proposing each run of
// consecutive writes for one group as a single batch and serving each run
// of consecutive reads of one group after a single read-index round.
func (s *Server) serve(c *client, cmds []resp.Request) {
	for i := 0; i < len(cmds) && !c.closing; {
		n := s.serveRun(c, cmds[i:])
		if c.trk.on {
			s.afterTracked(c, cmds[i+n-1].Args) // CLIENT CACHING's end (tracking_cmd.go)
		}
		i += n
	}
}

// serveRun answers cmds[0], and the commands right after it when they are
// of the same kind (read or write) for the same group; it returns how many
// commands it answered.
func (s *Server) serveRun(c *client, cmds []resp.Request) int {
	if s.pubsubGate(c, cmds[0]) { // subscribed-state rules (pubsub_commands.go)
		return 1
	}
	if s.waitUnpaused(c, cmds[0]); c.closing { // CLIENT PAUSE (client_pause.go)
		return 1
	}
	if s.queueInMulti(c, cmds[0]) { // inside MULTI: queued (multi.go)
		return 1
	}
	now := time.Now()
	c.scriptCalls = c.scriptCalls[:0] // what MONITOR did not print of the last run
	r := s.route(c, cmds[0].Args)
	s.noteDenied(c, r, acl.ContextToplevel)
	c.asking = false // ASKING lasts one command (its handler sets it again)
	s.received(c, cmds[0], r, now)
	switch {
	case r.kind == routeNode && r.cmd.push != nil:
		s.runPush(c, r.cmd, cmds[0].Args) // it queues its replies itself
		c.replied()
		s.finish(c, r.cmd.meta, cmds[0].Args, time.Since(now), resp.Value{}, false)
		return 1
	case r.kind != routeWrite && r.kind != routeRead:
		v := s.exec(c, r, cmds[0].Args)
		took := time.Since(now)
		s.send(c, v) // before finish feeds monitors: a monitor's own reply comes first, as in Redis
		s.finish(c, metaOf(r.cmd), cmds[0].Args, took, v, r.kind == routeReply)
		return 1
	}
	batch, data := s.collectRun(c, r, cmds, now)
	out := s.runBatch(c, r, data, batch)
	took := time.Since(now)
	for i, v := range out {
		s.send(c, v)
		s.finish(c, data[i].Meta, batch[i], took, v, false)
	}
	return len(batch)
}

// metaOf is cmd's metadata, nil for an unknown command.
func metaOf(cmd *command) *resp.Command {
	if cmd == nil {
		return nil
	}
	return cmd.meta
}

// collectRun returns the arguments and data commands of cmds[0], routed
// as r, and of the commands after it that route the same way (same kind,
// same group), up to maxBatch. A blocking command ends its run: the
// commands after it wait until it is answered, as in Redis. A command that
// routes differently is left for the next run (routing it again there is
// cheap and pure).
func (s *Server) collectRun(c *client, r route, cmds []resp.Request, now time.Time) ([][][]byte, []*fsm.Command) {
	batch := [][][]byte{cmds[0].Args}
	data := []*fsm.Command{r.cmd.data}
	for last := r; len(cmds) > len(batch); {
		if len(batch) == maxBatch || last.cmd.data.Blocking() || c.trk.caching {
			break // CLIENT CACHING is for one command
		}
		next := cmds[len(batch)]
		if last = s.route(c, next.Args); last.kind != r.kind || last.group != r.group {
			break
		}
		s.received(c, next, last, now)
		batch = append(batch, next.Args)
		data = append(data, last.cmd.data)
	}
	return batch, data
}

// runBatch runs a run of commands of one group, routed as r: reads after
// one read-index round (readMany: each read still starts after the round
// that confirms this node's leadership began, as they all arrived before
// it, so each is linearizable; they run in order), writes proposed
// together. A panic on the way answers every command of the run with the
// internal error.
func (s *Server) runBatch(c *client, r route, data []*fsm.Command, batch [][][]byte) (out []resp.Value) {
	defer s.onPanic(r.cmd.meta.Name, func(e resp.Value) {
		out = make([]resp.Value, len(batch))
		for i := range out {
			out[i] = e
		}
	})
	if r.kind == routeRead {
		return s.readMany(c, r.group, data, batch, s.readOpts(c))
	}
	return s.propose(c, r.group, batch)
}

// received counts a request's bytes and records it as c's last command
// (CLIENT LIST). It counts as processed once it ran (finish), as in
// Redis: a command queued in MULTI when EXEC runs it, a refused or
// unknown one never.
func (s *Server) received(c *client, cmd resp.Request, r route, now time.Time) {
	s.stats.netIn.Add(int64(len(cmd.Raw)))
	c.argvMem = argvLen(cmd.Args)
	name := "NULL"
	if r.cmd != nil {
		name = r.cmd.meta.Name
		if len(r.cmd.meta.Subcommands) > 0 && len(cmd.Args) > 1 {
			name += "|" + strings.ToLower(string(cmd.Args[1]))
		}
	}
	c.touch(name, now)
}

// route decides where args go: unknown command, arity, CROSSSLOT, MOVED,
// CLUSTERDOWN or BUSY (busy.go) are answered here; the rest is run by exec
// or propose.
func (s *Server) route(c *client, args [][]byte) route {
	if r, refused := s.aclRefused(c, args); refused { // NOAUTH, NOPERM (acl_gate.go)
		return r
	}
	return s.busyRefused(s.routeCommand(c, args))
}

// routeCommand is route before the busy check.
func (s *Server) routeCommand(c *client, args [][]byte) route {
	cmd := s.table.lookup(args[0])
	if cmd == nil {
		return route{reply: resp.Err(resp.ErrUnknownCommand(args[0], args[1:]))}
	}
	if !cmd.meta.ArityOK(len(args)) {
		return route{cmd: cmd, reply: resp.Err(resp.ErrWrongArgs(cmd.meta.Name))}
	}
	if c.monitoring && cmd.meta.Flags&(resp.FlagWrite|resp.FlagReadOnly|resp.FlagMayReplicate) != 0 {
		return route{cmd: cmd, reply: resp.Err(errReplicaKeyspace)} // a monitor is a replica to Redis
	}
	if cmd.isNode() {
		return route{kind: routeNode, cmd: cmd}
	}
	if c.ldb != ldbOff && cmd.data.Script != nil && !cmd.data.Script.Function {
		return s.routeDebug(c, cmd, args) // SCRIPT DEBUG (script_debug.go)
	}
	if r, ok := s.routeScript(c, cmd, args); ok { // EVAL & co. (script.go)
		if reply, refused := s.oomRefused(r.cmd, args); r.kind == routeWrite && refused {
			return route{cmd: cmd, reply: reply}
		}
		return r
	}
	keys := cmd.meta.KeysOf(args)
	if len(keys) == 0 {
		return route{kind: routeKeyless, cmd: cmd}
	}
	slot := slots.Of(keys[0])
	for _, k := range keys[1:] {
		if slots.Of(k) != slot {
			return route{cmd: cmd, reply: resp.Err(resp.ErrCrossSlot)}
		}
	}
	g := s.n.GroupOf(slot)
	if c.asking || cmd.meta.Is(resp.FlagAsking) {
		t, reply := s.askedGroup(c, slot)
		if reply != nil {
			return route{cmd: cmd, reply: *reply}
		}
		if t != nil {
			g = t
		}
	}
	// A read that may block (XREAD … BLOCK) goes through the log too: its
	// waiter is replicated state. Only commands flagged blocking can.
	write := cmd.meta.Is(resp.FlagWrite) || cmd.data.BlocksOn(args)
	if g.IsLeader() && write {
		if reply, refused := s.oomRefused(cmd, args); refused {
			return route{cmd: cmd, reply: reply}
		}
	}
	switch {
	case g.IsLeader() && write:
		s.awaitUnfrozen(g, slot, keys)
		return route{kind: routeWrite, cmd: cmd, group: g}
	case g.IsLeader():
		return route{kind: routeRead, cmd: cmd, group: g}
	case !write && c.isReadonly() && g.Local():
		return route{kind: routeStale, cmd: cmd, group: g}
	case s.awaitFlip(slot):
		return s.routeCommand(c, args)
	}
	return route{cmd: cmd, reply: s.redirect(c, g, slot)}
}

// redirect is MOVED to the slot's leader (its TLS address for a client on
// TLS, as Redis), or CLUSTERDOWN while no leader is known.
func (s *Server) redirect(c *client, g *cluster.Group, slot uint16) resp.Value {
	leader, ok := s.n.Leader(g)
	if !ok || leader.ID == s.n.Self().ID || leader.ClientAddr == "" {
		return resp.Err(resp.ErrClusterDown)
	}
	return resp.Err(resp.ErrMoved(slot, s.clientAddr(c, leader)))
}

// exec runs one routed command that is not a batched write; a panic on
// the way is its internal error.
func (s *Server) exec(c *client, r route, args [][]byte) (v resp.Value) {
	if r.cmd != nil {
		defer s.onPanic(r.cmd.meta.Name, func(e resp.Value) { v = e })
	}
	switch r.kind {
	case routeNode:
		return s.runNode(c, r.cmd, args)
	case routeRead:
		return s.readMany(c, r.group, []*fsm.Command{r.cmd.data}, [][][]byte{args}, s.readOpts(c))[0]
	case routeStale:
		return s.readStale(c, r.group, r.cmd.data, args, s.readOpts(c))
	case routeWrite:
		return s.propose(c, r.group, [][][]byte{args})[0]
	case routeKeyless:
		return s.keyless(r.cmd, args)
	case routeDebug:
		return s.debugEval(c, r.group, r.cmd, args)
	}
	return r.reply
}

// readMany runs reads cmds[i] with args batch[i] on a group led here,
// linearizably, after one read-index round.
func (s *Server) readMany(c *client, g *cluster.Group, cmds []*fsm.Command, batch [][][]byte, opts fsm.ReadOpts) []resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	outcomes := make([]fsm.Outcome, len(batch))
	err := g.Read(ctx, func(st fsm.Reader) {
		for i, args := range batch {
			outcomes[i] = st.ReadWith(cluster.ReadNow(st), cmds[i], args, opts)
		}
	})
	out := make([]resp.Value, len(batch))
	for i, args := range batch {
		if err != nil {
			out[i] = s.groupError(c, g, args, err)
		} else {
			s.noteLookups(outcomes[i])
			out[i] = s.reply(c, g, outcomes[i], args)
		}
	}
	return out
}

// readStale runs a read command on the local replica of g (READONLY clients).
func (s *Server) readStale(c *client, g *cluster.Group, cmd *fsm.Command, args [][]byte, opts fsm.ReadOpts) resp.Value {
	var o fsm.Outcome
	if err := g.ReadStale(func(st fsm.Reader) { o = st.ReadWith(cluster.ReadNow(st), cmd, args, opts) }); err != nil {
		return s.groupError(c, g, args, err)
	}
	s.noteLookups(o)
	return s.reply(c, g, o, args)
}

// propose proposes a batch of writes of client c (nil for the server's
// own proposals) to g and returns one reply per command. cluster.ErrNotLeader
// (never reached the log) redirects; any other error, such as
// resp.ErrOutcomeUnknown, is every command's reply — never a redirect.
func (s *Server) propose(c *client, g *cluster.Group, batch [][][]byte) []resp.Value {
	ctx, cancel := context.WithTimeout(withScriptUser(proposeCtx(s.ctx, c), c, batch), requestTimeout)
	outcomes, err := g.Propose(ctx, batch)
	cancel()
	out := make([]resp.Value, len(batch))
	for i, args := range batch {
		switch {
		case err != nil:
			out[i] = s.groupError(c, g, args, err)
		case len(outcomes) != len(batch):
			out[i] = resp.Err(errors.New("internal error: proposal returned a wrong number of outcomes"))
		default:
			out[i] = s.reply(c, g, outcomes[i], args)
		}
	}
	if err == nil {
		c.noteWrite(g) // WAIT waits for the followers to apply this far
	}
	return out
}

// reply is the client's reply for outcome o of args in group g: the reply
// itself, -ASK to the leader of the group the keys went to, -TRYAGAIN, or,
// for a command that blocked, what it gets when it is served, times out or
// is sent elsewhere (which it waits for here).
func (s *Server) reply(c *client, g *cluster.Group, o fsm.Outcome, args [][]byte) resp.Value {
	if c != nil && len(o.Calls) > 0 {
		c.keepScriptCalls(args, o.Calls) // for MONITOR, after the script's line (monitor.go)
	}
	s.noteScriptDenials(c, o)
	switch o.Kind {
	case fsm.OutcomeAsk:
		return s.askReply(c, o.Slot, o.Group)
	case fsm.OutcomeTryAgain:
		return resp.Err(resp.ErrTryAgain)
	case fsm.OutcomeBlocked:
		return s.reply(c, g, s.waitBlocked(c, g, o.Waiter), args)
	}
	return o.Reply
}

// groupError turns a group's error into a reply: MOVED (or CLUSTERDOWN) when
// this node is not the leader, the error itself otherwise.
func (s *Server) groupError(c *client, g *cluster.Group, args [][]byte, err error) resp.Value {
	if errors.Is(err, cluster.ErrNotLeader) {
		cmd := s.table.lookup(args[0])
		if cmd != nil {
			if keys := cmd.meta.KeysOf(args); len(keys) > 0 {
				return s.redirect(c, g, slots.Of(keys[0]))
			}
		}
		return resp.Err(resp.ErrClusterDown)
	}
	return resp.Err(err)
}

// keyless runs a data command that names no key. Reads run on any group led
// here (their answer does not depend on the keyspace of one group, or the
// command is node-wide and has its own handler); writes have no slot to go to.
func (s *Server) keyless(cmd *command, args [][]byte) resp.Value {
	meta := cmd.meta
	if len(meta.Subcommands) > 0 { // a container's subcommand decides (XGROUP HELP is no write)
		i, err := meta.SubcommandIndex(args)
		if err != nil {
			return resp.Err(err)
		}
		meta = meta.Subcommands[i]
	}
	if meta.Is(resp.FlagWrite) {
		return resp.Err(resp.Errorf("ERR '%s' has no key to route by and is not supported in cluster mode", cmd.meta.Name))
	}
	g := s.firstNotBusy(s.groupsWhere((*cluster.Group).Local))
	if g == nil {
		return resp.Err(resp.ErrClusterDown)
	}
	if run, busy := s.n.BusyScript(g.ID(), s.busyThreshold()); busy && !cmd.meta.Is(resp.FlagAllowBusy) {
		return resp.Err(busyError(run.Function)) // every local group is busy (busy.go)
	}
	return s.readStale(nil, g, cmd.data, args, fsm.ReadOpts{})
}

// ledGroups are the groups this node leads, in slot order.
func (s *Server) ledGroups() []*cluster.Group { return s.groupsWhere((*cluster.Group).IsLeader) }

// groupsWhere are the groups for which keep is true, in slot order.
func (s *Server) groupsWhere(keep func(*cluster.Group) bool) []*cluster.Group {
	var out []*cluster.Group
	for _, g := range s.n.Groups() {
		if keep(g) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *cluster.Group) int { return int(firstSlot(a)) - int(firstSlot(b)) })
	return out
}

func firstSlot(g *cluster.Group) uint16 {
	r := g.Ranges()
	if len(r) == 0 {
		return slots.Count - 1
	}
	return r[0].Start
}
