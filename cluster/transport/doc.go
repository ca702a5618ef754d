// Package transport is slotraft's cluster bus: one TCP listener shared by
// every Raft group a node hosts.
//
// Each connection starts with a small header (magic, group id, the dialling
// node's id). A Mux accepts connections, reads the header under a deadline
// and hands the connection to the raft.StreamLayer registered for that
// group; Stream.Dial writes the header. A connection for a group nobody
// serves gets one byte saying so, then a clean close. Group 0 is reserved
// for a tiny control protocol ("who leads group G?") answered by the Mux's
// Control function, used by nodes that do not host a replica of G.
//
// Mux.Transport gives a group its raft.Transport, a RaftTransport: a
// compact binary protocol (raft_codec.go), AppendEntries pipelined on a
// connection of its own, heartbeats on another, pooled plain RPCs, and the
// msgpack protocol of raft.NetworkTransport still understood both ways so
// that nodes of earlier releases and this one form working groups during
// a rolling upgrade.
//
// A Mux whose listener is bound to a specific IP dials from that IP, so
// every connection between two nodes runs between their bus addresses.
//
// Faults, shared by in-process nodes in tests, cuts or delays the link from
// one node to another, in the spirit of etcd's bridge: a cut link refuses
// new dials and closes the connections that carry it.
package transport
