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
// reply it gets when it is served (blocking.go). Before routing, after
// the arity check, AUTH and the ACL check a command against the
// connection's user (acl_gate.go; the users are the meta group's:
// acl_cmd.go, acl_config.go; protected_mode.go refuses remote clients
// without a password).
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
// (script.go, function.go; SCRIPT DEBUG's Lua debugging sessions,
// script_debug.go), node-wide commands (nodewide.go), pub/sub
// (pubsub*.go), keyspace notifications (notify.go), CONFIG, INFO and
// CLIENT, and MIGRATE/CLUSTER SETSLOT (migrate_cmd.go, setslot.go).
//
// The Sentinel facade (sentinel*.go, docs/sentinel.md) is a second
// listener that speaks Redis Sentinel's protocol, with a command table of
// its own over connections of this package: its master is the deployment
// as this node knows it (sentinel_view.go: the leader of a one-group
// cluster, or a proxy), and its events on its own pub/sub are the changes
// of that knowledge (sentinel_monitor.go).
//
// Operators' HTTP (http_ops.go, on a listener the process gives it): a
// Prometheus collector that reads at scrape time the counters kept for
// INFO and the node's group stats (metrics.go, metrics_node.go,
// metrics_groups.go), /healthz, /readyz's checks (readyz.go), and the live
// dashboard /ui/ (ui.go: embedded files in ui/, the JSON of ui_types.go
// gathered by ui_view.go and, from the other nodes' /ui/api/node, by
// ui_gather.go; the live latency of ui_latency.go).
//
// Imports (ours): cluster and everything below it; nothing imports this
// package but cmd/slotraft and the test harness cluster/testcluster.
package server
