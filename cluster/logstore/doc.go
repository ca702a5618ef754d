// Package logstore holds the node-wide Raft log: one pebble instance per
// node (<data-dir>/raftlog) in which every Raft group the node hosts keeps
// its log under its own key prefix.
//
// Why one store for all groups: a Raft round costs each group one synced
// append on every replica. With a store per group (raft-boltdb, two fsyncs
// per commit) a node hosting many groups pays that many fsyncs per round.
// Pebble's commit pipeline merges the synced batches that arrive while a
// WAL sync is in flight into the next sync, so the groups' appends of one
// moment share one fsync (group commit across groups, as CockroachDB, TiKV
// and dragonboat do).
//
// Only the log lives here. Each group keeps its stable store (term, vote)
// and snapshots in its own directory; the group's directory names its
// prefix in a marker file (cluster/logchoice.go), so the log of a directory
// moved aside stays readable, and a prefix no directory names can be
// dropped.
//
// Keys are kind (1 byte) | prefix (8 bytes, big endian) | index (8 bytes,
// big endian), so one group's entries are contiguous and in index order.
// Values are encoded by this package (codec.go), not by msgpack, so that a
// decoder of a few dozen lines can check every byte it reads.
package logstore
