package server

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// nodeHandler runs a node command (one that is not a data command of a
// group) for client c. args[0] is the command name, arity already checked.
type nodeHandler func(s *Server, c *client, args [][]byte) resp.Value

// pushHandler runs a node command that queues its replies itself (the
// subscribe family: a SUBSCRIBE of n channels answers n confirmations,
// queued under the registry's lock so they keep their order with messages).
type pushHandler func(s *Server, c *client, args [][]byte)

// command is one entry of the full command table: a data command, run by a
// group's state machine, or a node command, run by the server itself. Its
// fields are every fact about the command that the server acts on.
type command struct {
	meta *resp.Command
	data *fsm.Command
	node nodeHandler
	push pushHandler
	// subs are a node container's subcommands (CLUSTER, CLIENT, CONFIG…)
	// in meta.Subcommands order; node, if set too, runs the container
	// called alone (COMMAND).
	subs []*command
	// now: inside MULTI the command acts at once instead of being queued
	// (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET), as in Redis.
	now bool
	// subscribed: a RESP2 connection in subscribed state may run it too,
	// besides the subscribe family (PING, QUIT, RESET).
	subscribed bool
}

// isNode: the server runs the command itself.
func (c *command) isNode() bool { return c.node != nil || c.push != nil || len(c.subs) > 0 }

// commandTable is the full table: fsm's data commands plus node commands.
type commandTable struct {
	byName map[string]*command
	meta   *resp.Table
}

func (t *commandTable) add(c *command) {
	t.meta.Register(c.meta)
	t.byName[strings.ToLower(c.meta.Name)] = c
}

// lookup finds a command by name in any case; nil if unknown.
func (t *commandTable) lookup(name []byte) *command {
	if c, ok := t.byName[string(name)]; ok {
		return c
	}
	// Lowercase into a stack buffer: a map lookup by string(bytes) does
	// not allocate, strings.ToLower would for every "GET" a client sends.
	var buf [32]byte
	if len(name) > len(buf) {
		return t.byName[strings.ToLower(string(name))]
	}
	lower := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return t.byName[string(lower)]
}

// container builds a node container command (CLUSTER, CLIENT, COMMAND…)
// of subs; runNode dispatches to them. A subcommand's group is its
// container's unless it says otherwise.
func container(meta *resp.Command, subs ...*command) *command {
	for _, sc := range subs {
		if sc.meta.Group == "" {
			sc.meta.Group = meta.Group
		}
		meta.Subcommands = append(meta.Subcommands, sc.meta)
	}
	return &command{meta: meta, subs: subs}
}

// runNode runs a node command for c: a container's subcommand that args
// name (with Redis's errors for an unknown one or its arity), or the
// command itself. A handler that panics answers its command's internal
// error (onPanic).
func (s *Server) runNode(c *client, cmd *command, args [][]byte) (v resp.Value) {
	if len(cmd.subs) > 0 && (len(args) > 1 || cmd.node == nil) {
		i, err := cmd.meta.SubcommandIndex(args)
		if err != nil {
			return resp.Err(err)
		}
		cmd = cmd.subs[i]
	}
	defer s.onPanic(cmd.meta.Name, func(e resp.Value) { v = e })
	return cmd.node(s, c, args)
}

// runPush runs a node command that queues its replies itself; a panic
// queues its internal error.
func (s *Server) runPush(c *client, cmd *command, args [][]byte) {
	defer s.onPanic(cmd.meta.Name, func(e resp.Value) { s.send(c, e) })
	cmd.push(s, c, args)
}

// onPanic, deferred on a command's way through the server, recovers from a
// panic there (a bug: only fsm's commands run under its own recover) and
// gives answer Redis-style "ERR internal error in '<command>': …", as fsm
// answers a data command that panics; the panic is logged with its stack.
// So no input can end the process, and the connection goes on serving.
func (s *Server) onPanic(command string, answer func(resp.Value)) {
	if p := recover(); p != nil {
		s.log.Error("command panicked", "command", command, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		answer(resp.Err(resp.ErrInternal(command, p)))
	}
}

// fsmNode is a node command whose metadata is fsm's data command of that
// name (one source for COMMAND INFO): run answers it here, for the groups
// led here or the node itself.
func fsmNode(name string, run nodeHandler) *command {
	dc := fsm.Lookup([]byte(name))
	if dc == nil {
		panic("server: fsm has no " + name + " command")
	}
	return &command{meta: dc.Meta, data: dc, node: run}
}

// nondeterministic tips c's output as nondeterministic (COMMAND DOCS).
func nondeterministic(c *command) *command {
	c.meta.Tips = []string{"nondeterministic_output"}
	return c
}

// subMeta makes a subcommand's metadata. Arity counts as Redis counts it for
// subcommands: container name included.
func subMeta(container, name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string) *resp.Command {
	return &resp.Command{
		Name: container + "|" + name, Arity: arity, Flags: flags, ACL: acl,
		Since: since, Summary: summary, Complexity: complexity,
	}
}
