package difftest

import "testing"

// TestClusterModeDifferential: the commands a cluster node refuses and
// MODULE answer as redis-server started with cluster-enabled yes does
// (a one-node Redis Cluster with every slot: MOVE is routed by its key
// first on both).
func TestClusterModeDifferential(t *testing.T) {
	redisAddr := startRedisCluster(t)
	slotraftAddr := startSlotraft(t)
	cmds := [][]string{
		{"SET", "k", "v"},
		{"MOVE", "k", "1"},
		{"MOVE", "k"},
		{"MOVE", "nokey", "x"},
		{"SWAPDB", "0", "1"},
		{"SWAPDB", "0"},
		{"REPLICAOF", "127.0.0.1", "1"},
		{"REPLICAOF", "NO", "ONE"},
		{"SLAVEOF", "NO", "ONE"},
		{"FAILOVER"},
		{"FAILOVER", "ABORT"},
		{"MODULE", "LIST"},
		{"MODULE", "LOAD", "/nonexistent.so"},
		{"MODULE", "LOADEX", "/nonexistent.so", "CONFIG", "a", "b"},
		{"MODULE", "UNLOAD", "nosuch"},
		{"MODULE", "NOPE"},
		{"MODULE"},
		{"GET", "k"},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		sameReplies(t, rc, sc, cmds)
	}
}
