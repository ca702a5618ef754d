// Package testcluster starts in-process slotraft clusters for tests: N nodes
// with their client servers on loopback ports, shortened Raft timeouts and
// temporary data directories, shut down by t.Cleanup. Nodes can be stopped
// and restarted on the same data directory and ports.
package testcluster
