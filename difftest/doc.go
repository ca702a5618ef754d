// Package difftest holds slotraft's differential and end-to-end tests for
// lists, hashes, sets, sorted sets and the generic commands over them: a
// random mix of commands (fixed seed) is sent to a real redis-server and to
// an in-process slotraft cluster, and their replies are compared in RESP2
// and RESP3; DUMP payloads travel between the two; and the common usage
// patterns (capped list, leaderboard, rate limiter, session hash, reliable
// queue) run through go-redis's ClusterClient against a 3-node cluster.
//
// The tests need redis-server on PATH: without it they are skipped, unless
// CI=true, where they fail.
package difftest
