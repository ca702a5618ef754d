// Package cluster is a slotraft node: the Raft groups it hosts and the bus
// they share. It talks to the network of nodes, never to clients (that is
// cluster/server, which imports this package; never the reverse).
//
// A Node (node.go) starts the bus (cluster/transport), gossip (gossip.go),
// and the meta group that holds the cluster map (metagroup.go,
// cluster/meta); it follows the map (reconcile.go), opening the slot
// groups it is given and retiring those taken from it, and on the meta
// leader changes it (controller.go, cluster/placement): replacing dead
// nodes, creating groups, rebalancing slots. Slots move between groups
// online (migration.go, mover.go).
//
// A Group is one slot group: a Raft group on a few nodes. Group.Propose is
// the single place that proposes to Raft (proposer.go): it batches
// concurrent callers into one fsm.Entry and one raft.Apply and returns one
// fsm.Outcome per command. Its errors follow one safety rule: ErrNotLeader
// means the commands never reached the log (the caller may redirect); an
// error that wraps resp.ErrOutcomeUnknown means they may have (the caller
// must not retry on the client's behalf). Group.Read is the read-index
// recipe (readindex.go): a Barrier in each new term, then one VerifyLeader
// per batch of waiting reads, before fn reads the state through
// fsm.Reader. A group's leader also proposes active expiry (expiry.go),
// unblocks the blocked commands whose deadline passed (blocking.go),
// spreads leaderships (group.go, transfer.go) and changes the group's
// membership (membership.go).
//
// What the front end needs of the bus is here too, behind plain methods:
// forwarding published messages to every node (forward.go), applying a
// FUNCTION change to every group (function_fanout.go), keyspace events
// (notify.go), the front ends' addresses announced in gossip
// (frontends.go) and a node's report on itself (report.go) for the
// Sentinel facades, and each hosted group's stats for operators (group_stats.go:
// Raft's indexes plus the apply, log append and snapshot timings that
// raftmetrics.go records around what raft is given), the recent events it
// observed (events.go: leader changes, gossip states, map changes, in a
// bounded ring) and its operator HTTP address announced in gossip (for
// the dashboard). testing.go starts in-process nodes for tests of this
// package and of the front end.
//
// Imports (ours): cluster/transport, cluster/meta, cluster/placement, fsm,
// store, resp, slots.
package cluster
