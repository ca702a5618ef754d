// Package server is slotraft's client front end: it serves Redis clients
// for a cluster.Node. It reads commands with resp.RequestReader (serve.go,
// conn.go),
// routes each one (router.go): unknown command, arity, CROSSSLOT, MOVED or
// CLUSTERDOWN are answered at once; a node command runs here; a read runs
// linearizably on a group led here (Group.Read), a write is proposed to it
// (Group.Propose). The group's state machine answers with a typed
// fsm.Outcome per command, which the router turns into the client's reply:
// the reply itself, -ASK to the leader of the group the keys went to
// (router_migration.go), -TRYAGAIN, or, for a command that blocked, the
// reply it gets when it is served (blocking.go).
//
// A panic on a command's way through (a bug) is recovered per command
// (Server.onPanic, commands.go): the command answers "ERR internal error
// in '<cmd>': …", as fsm answers a data command that panics, and the
// connection and the process go on.
//
// The one command table (commands.go) is fsm's data commands plus the node
// commands defined here (CLUSTER, CLIENT, COMMAND, CONFIG, INFO, MULTI,
// SCRIPT, FUNCTION, pub/sub, SLOTRAFT…); every fact the server acts on —
// node handler, a container's subcommands, what runs at once inside MULTI,
// what a subscribed connection may send, how a script or a blocking
// command routes — is a field of that table, never a list of names.
//
// It also holds transactions (multi.go), script and function routing
// (script.go, function.go), node-wide commands (nodewide.go), pub/sub
// (pubsub*.go), keyspace notifications (notify.go), CONFIG, INFO and
// CLIENT, and MIGRATE/CLUSTER SETSLOT (migrate_cmd.go, setslot.go).
//
// Imports (ours): cluster and everything below it; nothing imports this
// package but cmd/slotraft and the test harness cluster/testcluster.
package server
