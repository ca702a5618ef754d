package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/tidwall/redcon"
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
)

// route is where one command goes.
type route struct {
	kind  routeKind
	cmd   *command
	group *Group
	reply resp.Value
}

// maxBatch bounds how many pipelined writes go into one proposal.
const maxBatch = 512

// serve runs a pipeline of commands in order, proposing each run of
// consecutive writes for one group as a single batch.
func (s *Server) serve(c *client, cmds []redcon.Command) {
	for i := 0; i < len(cmds) && !c.closing; {
		i += s.serveRun(c, cmds[i:])
	}
}

// serveRun answers cmds[0], and the writes right after it when it is a
// write for the same group; it returns how many commands it answered.
func (s *Server) serveRun(c *client, cmds []redcon.Command) int {
	if s.pubsubGate(c, cmds[0]) { // subscribed-state rules (pubsub_commands.go)
		return 1
	}
	if s.queueInMulti(c, cmds[0]) { // inside MULTI: queued (multi.go)
		return 1
	}
	now := time.Now()
	r := s.route(c, cmds[0].Args)
	c.asking = false // ASKING lasts one command (its handler sets it again)
	s.account(c, cmds[0], r, now)
	if r.kind != routeWrite {
		s.send(c, s.exec(c, r, cmds[0].Args))
		return 1
	}
	batch := [][][]byte{cmds[0].Args}
	for _, next := range cmds[1:] {
		// A blocking command ends its batch: the commands after it wait
		// until it is answered, as in Redis.
		if len(batch) == maxBatch || fsm.IsBlocking(batch[len(batch)-1][0]) {
			break
		}
		r2 := s.route(c, next.Args)
		if r2.kind != routeWrite || r2.group != r.group {
			break
		}
		s.account(c, next, r2, now)
		batch = append(batch, next.Args)
	}
	for i, v := range s.propose(r.group, batch) {
		if id, ok := fsm.BlockedWaiter(v); ok {
			v = s.waitBlocked(c, r.group, id, batch[i])
		}
		s.send(c, v)
	}
	return len(batch)
}

func (s *Server) account(c *client, cmd redcon.Command, r route, now time.Time) {
	s.stats.commands.Add(1)
	s.stats.netIn.Add(int64(len(cmd.Raw)))
	name := "NULL"
	if r.cmd != nil {
		name = r.cmd.meta.Name
		if len(r.cmd.meta.Subcommands) > 0 && len(cmd.Args) > 1 {
			name += "|" + strings.ToLower(string(cmd.Args[1]))
		}
	}
	c.touch(name, now)
}

func (s *Server) send(c *client, v resp.Value) {
	if v.Kind == kindNoReply { // the command queued its replies itself (pubsub_commands.go)
		return
	}
	if v.IsError() {
		v = s.askReply(v)
		s.stats.errors.Add(1)
	}
	s.stats.netOut.Add(int64(c.reply(v)))
}

// route decides where args go: unknown command, arity, CROSSSLOT, MOVED or
// CLUSTERDOWN are answered here; the rest is run by exec or propose.
func (s *Server) route(c *client, args [][]byte) route {
	cmd := s.table.lookup(args[0])
	if cmd == nil {
		return route{reply: resp.Err(resp.ErrUnknownCommand(args[0], args[1:]))}
	}
	if !cmd.meta.ArityOK(len(args)) {
		return route{cmd: cmd, reply: resp.Err(resp.ErrWrongArgs(cmd.meta.Name))}
	}
	if cmd.node != nil {
		return route{kind: routeNode, cmd: cmd}
	}
	if r, ok := s.routeScript(c, cmd, args); ok { // EVAL & co. (script.go)
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
		if t := s.askingTarget(slot); t != nil {
			g = t
		}
	}
	// A read that may block (XREAD … BLOCK) goes through the log too: its
	// waiter is replicated state. Only commands flagged blocking can.
	write := cmd.meta.Is(resp.FlagWrite) || (cmd.meta.Is(resp.FlagBlocking) && fsm.BlocksOn(args))
	switch {
	case g.IsLeader() && write:
		s.awaitUnfrozen(g, slot, keys)
		return route{kind: routeWrite, cmd: cmd, group: g}
	case g.IsLeader():
		return route{kind: routeRead, cmd: cmd, group: g}
	case !write && c.isReadonly() && g.Local():
		return route{kind: routeStale, cmd: cmd, group: g}
	case s.awaitFlip(slot):
		return s.route(c, args)
	}
	return route{cmd: cmd, reply: s.redirect(g, slot)}
}

// redirect is MOVED to the slot's leader, or CLUSTERDOWN while no leader is known.
func (s *Server) redirect(g *Group, slot uint16) resp.Value {
	leader, ok := s.n.Leader(g)
	if !ok || leader.ID == s.n.Self().ID || leader.ClientAddr == "" {
		return resp.Err(resp.ErrClusterDown)
	}
	return resp.Err(resp.ErrMoved(slot, leader.ClientAddr))
}

// exec runs one routed command that is not a batched write.
func (s *Server) exec(c *client, r route, args [][]byte) resp.Value {
	switch r.kind {
	case routeNode:
		return r.cmd.node(s, c, args)
	case routeRead:
		return s.read(r.group, r.cmd.data, args)
	case routeStale:
		return s.readStale(r.group, r.cmd.data, args)
	case routeWrite:
		return s.propose(r.group, [][][]byte{args})[0]
	case routeKeyless:
		return s.keyless(r.cmd, args)
	}
	return r.reply
}

// read runs a read command on a group led here, linearizably.
func (s *Server) read(g *Group, cmd *fsm.Command, args [][]byte) resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	var v resp.Value
	err := g.Read(ctx, func(st *fsm.State) { v = st.Read(readNow(st), cmd, args) })
	if err != nil {
		return s.groupError(g, args, err)
	}
	return v
}

// readStale runs a read command on the local replica of g (READONLY clients).
func (s *Server) readStale(g *Group, cmd *fsm.Command, args [][]byte) resp.Value {
	var v resp.Value
	if err := g.ReadStale(func(st *fsm.State) { v = st.Read(readNow(st), cmd, args) }); err != nil {
		return s.groupError(g, args, err)
	}
	return v
}

// readNow is the time a read runs at: the leader's clock, never before the
// time of the last applied entry (so a key the log already expired stays expired).
func readNow(st *fsm.State) int64 {
	return max(time.Now().UnixMilli(), st.LastNow())
}

// propose proposes a batch of writes to g and returns one reply per command.
// ErrNotLeader (never reached the log) redirects; any other error, such as
// resp.ErrOutcomeUnknown, is every command's reply — never a redirect.
func (s *Server) propose(g *Group, batch [][][]byte) []resp.Value {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	replies, err := g.Propose(ctx, batch)
	if err == nil && len(replies) == len(batch) {
		return replies
	}
	out := make([]resp.Value, len(batch))
	for i, args := range batch {
		if err == nil {
			out[i] = resp.Err(errors.New("internal error: proposal returned a wrong number of replies"))
			continue
		}
		out[i] = s.groupError(g, args, err)
	}
	return out
}

// groupError turns a group's error into a reply: MOVED (or CLUSTERDOWN) when
// this node is not the leader, the error itself otherwise.
func (s *Server) groupError(g *Group, args [][]byte, err error) resp.Value {
	if errors.Is(err, ErrNotLeader) {
		cmd := s.table.lookup(args[0])
		if cmd != nil {
			if keys := cmd.meta.KeysOf(args); len(keys) > 0 {
				return s.redirect(g, slots.Of(keys[0]))
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
	if cmd.meta.Is(resp.FlagWrite) {
		return resp.Err(resp.Errorf("ERR '%s' has no key to route by and is not supported in cluster mode", cmd.meta.Name))
	}
	for _, g := range s.n.Groups() {
		if g.Local() {
			return s.readStale(g, cmd.data, args)
		}
	}
	return resp.Err(resp.ErrClusterDown)
}

// ledGroups are the groups this node leads, in slot order.
func (s *Server) ledGroups() []*Group {
	var out []*Group
	for _, g := range s.n.Groups() {
		if g.IsLeader() {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b *Group) int { return int(firstSlot(a)) - int(firstSlot(b)) })
	return out
}

func firstSlot(g *Group) uint16 {
	r := g.Ranges()
	if len(r) == 0 {
		return slots.Count - 1
	}
	return r[0].Start
}
