package cluster

import (
	"strings"
	"sync"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// nodeHandler runs a node command (one that is not a data command of a
// group) for client c. args[0] is the command name, arity already checked.
type nodeHandler func(s *Server, c *client, args [][]byte) resp.Value

// command is one entry of the full command table: a data command, run by a
// group's state machine, or a node command, run by the server itself.
type command struct {
	meta *resp.Command
	data *fsm.Command
	node nodeHandler
}

// subcommand is one subcommand of a node container command (CLUSTER, CLIENT, COMMAND).
type subcommand struct {
	meta *resp.Command
	run  nodeHandler
}

// commandTable is the full table: fsm's data commands plus node commands.
type commandTable struct {
	byName map[string]*command
	meta   *resp.Table
}

// commands is built once: the data commands and node commands never change
// while a process runs.
var commands = sync.OnceValue(buildCommandTable)

func buildCommandTable() *commandTable {
	t := &commandTable{byName: map[string]*command{}, meta: resp.NewTable()}
	for _, nc := range nodeCommands() {
		t.add(nc)
	}
	for _, dc := range fsm.Commands() {
		name := strings.ToLower(dc.Meta.Name)
		if _, dup := t.byName[name]; dup {
			// A node-wide version (KEYS, SCAN, DBSIZE…) spans every group led
			// here; the group-local data command stays reachable through fsm.
			continue
		}
		t.add(&command{meta: dc.Meta, data: dc})
	}
	return t
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
	return t.byName[strings.ToLower(string(name))]
}

// nodeCommands lists every command the server runs itself.
func nodeCommands() []*command {
	var out []*command
	out = append(out, serverCommands()...)
	out = append(out, clusterCommands()...)
	out = append(out, clientCommands()...)
	out = append(out, nodewideCommands()...)
	out = append(out, scriptCommands()...)
	out = append(out, functionCommands()...)
	out = append(out, pubsubCommands()...)
	out = append(out, configCommand())
	out = append(out, adminCommands()...)
	return out
}

// container builds a container command (CLUSTER, CLIENT, COMMAND) whose
// handler dispatches to its subcommands, checking their arity with Redis's
// "container|sub" names.
func container(meta *resp.Command, subs []subcommand) *command {
	bySub := map[string]subcommand{}
	for _, sc := range subs {
		meta.Subcommands = append(meta.Subcommands, sc.meta)
		_, name, _ := strings.Cut(sc.meta.Name, "|")
		bySub[name] = sc
	}
	run := func(s *Server, c *client, args [][]byte) resp.Value {
		sc, ok := bySub[strings.ToLower(string(args[1]))]
		if !ok {
			return resp.Err(resp.ErrUnknownSubcommand(args[0], args[1]))
		}
		if !sc.meta.ArityOK(len(args)) {
			return resp.Err(resp.ErrWrongArgs(sc.meta.Name))
		}
		return sc.run(s, c, args)
	}
	return &command{meta: meta, node: run}
}

// subMeta makes a subcommand's metadata. Arity counts as Redis counts it for
// subcommands: container name included.
func subMeta(container, name string, arity int, flags resp.Flag, acl []string, since, summary, complexity string) *resp.Command {
	return &resp.Command{
		Name: container + "|" + name, Arity: arity, Flags: flags, ACL: acl,
		Group: groupOf(container), Since: since, Summary: summary, Complexity: complexity,
	}
}

func groupOf(container string) string {
	switch container {
	case "cluster":
		return "cluster"
	case "client":
		return "connection"
	default:
		return "server"
	}
}
