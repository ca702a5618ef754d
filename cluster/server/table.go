package server

import (
	"strings"
	"sync"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// The full command table, assembled once from every file's builders: fsm's
// data commands plus the node commands defined in this package. This file
// stands above all the others: it names them, none names it.

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

// nodeCommands lists every command the server runs itself.
func nodeCommands() []*command {
	var out []*command
	out = append(out, serverCommands()...)
	out = append(out, commandCommand(), infoCommand(), debugCommand())
	out = append(out, memoryCommands()...)
	out = append(out, multiCommands()...)
	out = append(out, clusterCommands()...)
	out = append(out, clientCommands()...)
	out = append(out, nodewideCommands()...)
	out = append(out, scriptCommands()...)
	out = append(out, functionCommands()...)
	out = append(out, pubsubCommands()...)
	out = append(out, configCommand(), slowlogCommand(), latencyCommand())
	out = append(out, saveCommands()...)
	out = append(out, adminCommands()...)
	out = append(out, replicationCommands()...)
	out = append(out, lolwutCommand(), monitorCommand(), shutdownCommand())
	out = append(out, clusterModeCommands()...) // cluster_mode.go
	out = append(out, moduleCommand())
	out = append(out, aclCommand()) // acl_cmd.go
	return out
}

// aclCommands is the table ACL rules apply to (the acl engine's view of
// commands()), built once.
var aclCommands = sync.OnceValue(func() *acl.Commands {
	return acl.NewCommands(commands().meta.All())
})

// Commands is the one command table's metadata, fsm's data commands and the
// node commands, for a front end that routes as the server does (the proxy
// finds keys and flags in it).
func Commands() *resp.Table { return commands().meta }
