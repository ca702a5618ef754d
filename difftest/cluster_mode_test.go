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
		{"SET", "{c}a", "v"},
		{"COPY", "{c}a", "{c}b", "DB", "1"},
		{"COPY", "{c}a", "{c}b", "DB", "x"},
		{"COPY", "{c}a", "{c}b", "DB", "0"},
		{"COPY", "{c}a", "{c}b", "DB"},
		{"SELECT", "1"},
		{"SELECT", "0"},
		{"SELECT", "x"},
		{"XADD", "{c}s", "1-1", "f", "v"},
		{"XGROUP", "CREATE", "{c}s", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{c}s", ">"},
		{"COPY", "{c}s", "{c}s2"},
		{"XINFO", "GROUPS", "{c}s2"},
		{"XPENDING", "{c}s2", "g"},
		{"PFADD", "{c}h", "a", "b", "c"},
		{"COPY", "{c}h", "{c}h2"},
		{"PFCOUNT", "{c}h2"},
		{"GEOADD", "{c}g", "13.361389", "38.115556", "Palermo"},
		{"COPY", "{c}g", "{c}g2"},
		{"GEOPOS", "{c}g2", "Palermo"},
		{"CLUSTER", "ADDSLOTS", "1"},
		{"CLUSTER", "ADDSLOTS", "x"},
		{"CLUSTER", "ADDSLOTS", "16384"},
		{"CLUSTER", "ADDSLOTS", "5", "x"},
		{"CLUSTER", "ADDSLOTS"},
		{"CLUSTER", "ADDSLOTSRANGE", "1", "5"},
		{"CLUSTER", "ADDSLOTSRANGE", "5", "1"},
		{"CLUSTER", "ADDSLOTSRANGE", "1", "2", "3"},
		{"CLUSTER", "ADDSLOTSRANGE", "1"},
		{"CLUSTER", "ADDSLOTSRANGE", "-1", "2"},
		{"CLUSTER", "DELSLOTS", "99999"},
		{"CLUSTER", "DELSLOTSRANGE", "9", "3"},
		{"CLUSTER", "FLUSHSLOTS"},
		{"CLUSTER", "FLUSHSLOTS", "x"},
		{"CLUSTER", "RESET", "BAD"},
		{"CLUSTER", "RESET", "SOFT", "x"},
		{"CLUSTER", "RESET", "HARD"},
		{"CLUSTER", "RESET"},
		{"GET", "k"},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		sameReplies(t, rc, sc, cmds)
	}
}
