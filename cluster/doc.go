// Package cluster is a slotraft node: the Raft groups it hosts and the bus
// they share, the single place that proposes to Raft, linearizable reads,
// active expiry, and the Redis Cluster front (server, router, node commands).
//
// The core (config.go, node.go, group.go, proposer.go, readindex.go,
// expiry.go, logging.go) runs a static cluster: every node is given the same
// ordered list of peers, slot group i (id i+1) owns slots.Split(Groups)[i]
// and is replicated on Replicas consecutive peers starting at peer i mod N,
// whose first replica is the group's preferred leader.
//
// Group.Propose batches concurrent callers into one fsm.Entry and one
// raft.Apply. Its errors follow one safety rule: ErrNotLeader means the
// commands never reached the log (the caller may redirect); an error that
// wraps resp.ErrOutcomeUnknown means they may have (the caller must not
// retry on the client's behalf). Group.Read is the read-index recipe: a
// Barrier in each new term, then one VerifyLeader per batch of waiting reads.
package cluster
