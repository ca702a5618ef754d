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
// With Config.Secret (the cluster secret), every connection, whatever its
// group, first runs a mutual HMAC challenge-response proving the secret,
// then TLS 1.3 between per-process keys pinned by that handshake; only
// then comes the header (auth.go, auth_tls.go). A failed handshake closes
// the connection, is counted (Mux.AuthFailures) and logged at WARN, rate
// limited per remote host and reason (auth_refusals.go). With Config.TLS (the
// operator's CA and this node's certificate, auth_pki.go) the TLS is
// between those certificates, each of which must name its node's id: the
// id an accepted connection's header claims, and the id the cluster map
// places at a dialled address (Config.PeerID). Without either, anyone who
// reaches the bus port is a member.
//
// A Mux whose listener is bound to a specific IP dials from that IP, so
// every connection between two nodes runs between their bus addresses.
//
// Faults, shared by in-process nodes in tests, cuts or delays the link from
// one node to another, in the spirit of etcd's bridge: a cut link refuses
// new dials and closes the connections that carry it.
package transport
