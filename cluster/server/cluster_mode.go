package server

import "github.com/slotraft/slotraft/resp"

// Commands a Redis Cluster node refuses because it is one: SWAPDB,
// REPLICAOF/SLAVEOF and FAILOVER answer Redis's cluster-mode errors, as
// redis-server with cluster-enabled yes does (MOVE is routed by its key
// first, so it lives with the data commands, fsm/keyspace.go).

func clusterModeCommands() []*command {
	admin := []string{"admin", "slow", "dangerous"}
	const adminFlags = resp.FlagAdmin | resp.FlagNoScript | resp.FlagStale
	refuse := func(meta *resp.Command, text string) *command {
		err := resp.NewError(text)
		return &command{meta: meta, node: func(*Server, *client, [][]byte) resp.Value { return resp.Err(err) }}
	}
	replicaof := func(name, since, summary string) *command {
		return refuse(&resp.Command{Name: name, Arity: 3, Flags: adminFlags, ACL: admin, Group: "server", Since: since,
			Summary: summary, Complexity: "O(1)"}, "ERR REPLICAOF not allowed in cluster mode.")
	}
	return []*command{
		refuse(&resp.Command{Name: "swapdb", Arity: 3, Flags: resp.FlagWrite | resp.FlagFast,
			ACL: []string{"keyspace", "write", "fast", "dangerous"}, Group: "server", Since: "4.0.0",
			Summary:    "Swaps two Redis databases.",
			Complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases."},
			"ERR SWAPDB is not allowed in cluster mode"),
		replicaof("replicaof", "5.0.0", "Configures a server as replica of another, or promotes it to a master."),
		replicaof("slaveof", "1.0.0", "Sets a Redis server as a replica of another, or promotes it to being a master."),
		refuse(&resp.Command{Name: "failover", Arity: -1, Flags: adminFlags, ACL: admin, Group: "server", Since: "6.2.0",
			Summary: "Starts a coordinated failover from a server to one of its replicas.", Complexity: "O(1)"},
			"ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead."),
	}
}
