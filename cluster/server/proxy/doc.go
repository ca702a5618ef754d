// Package proxy is slotraft's proxy mode: on a listener of its own
// (slotraft server --proxy-bind), any node serves clients that do not
// speak Redis Cluster, as one Redis server would. The guarantees are in
// docs/proxy.md.
//
// A client connection is a session (session.go): its reading goroutine
// parses requests with resp.RequestReader and routes each by its keys
// (the one command table, server.Commands(); rules.go holds only what the
// proxy decides beyond it) to its slot's leader as the node's map knows
// it, over the session's own connection to that node (backend.go: opened
// when first needed, running as the client — its AUTH, HELLO and name are
// replayed there first, session_state.go). A keyless command goes to this
// node ("home"). The replies go back in the requests' order (writer.go);
// redirects are followed inside the proxy (route.go), and a slot's calls
// are kept in order across them (its gate). Commands whose keys span
// slots are split and merged (split.go); transactions (tx.go), pub/sub
// (pubsub.go) and keyspace-wide commands (fanout.go) run with the
// pipeline drained.
//
// Bounds: maxPending commands in flight per client, maxBackends node
// connections per client, maxPushData bytes of messages waiting for a
// slow subscriber, the server's maxclients and request limits. A client
// that goes leaves nothing behind: its session closes its node
// connections and waits for every goroutine it started.
//
// Imports (ours): cluster (the map, leaders), resp, slots and store (the
// SCAN cursor's layout); not cluster/server: the proxy is a client of the
// nodes' client ports, and cmd/slotraft wires it to the server's command
// table, protected mode and limits.
package proxy
