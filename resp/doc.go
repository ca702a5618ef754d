// Package resp owns the wire: reading commands, rendering replies for RESP2
// and RESP3 clients (Value), Redis's error texts (Error), and the command
// metadata type (Command, Table) with key extraction and the one dispatch
// of a container command to its subcommands (Command.SubcommandIndex),
// which routing, COMMAND and docs all read.
package resp
