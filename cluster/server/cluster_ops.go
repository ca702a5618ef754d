package server

import (
	"context"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// The CLUSTER subcommands that change or inspect nodes, mapped onto
// slotraft's own operations. A node's role is the one CLUSTER NODES shows
// (topology.nodeRole): a node that leads a slot group is a master, one
// that leads none is a replica of the leader of the first group it hosts.
// See docs/compatibility.md ("CLUSTER").

// clusterOpsCommands are the CLUSTER subcommands of this file.
func clusterOpsCommands(sub func(name string, arity int, flags resp.Flag, since, summary, complexity string, run nodeHandler) *command) []*command {
	const as = resp.FlagAdmin | resp.FlagStale
	replicas := func(name, since string) *command {
		return nondeterministic(adminACL(sub(name, 3, as, since, "Lists the replica nodes of a master node.",
			"O(N) where N is the number of replicas.", cmdClusterReplicas)))
	}
	return []*command{
		nondeterministic(adminACL(sub("bumpepoch", 2, as, "3.0.0", "Advances the cluster config epoch.", "O(1)", cmdClusterBumpEpoch))),
		nondeterministic(adminACL(sub("count-failure-reports", 3, as, "3.0.0", "Returns the number of active failure reports active for a node.",
			"O(N) where N is the number of failure reports", cmdClusterFailureReports))),
		adminACL(sub("failover", -2, as, "3.0.0", "Forces a replica to perform a manual failover of its master.", "O(1)", cmdClusterFailover)),
		adminACL(sub("forget", 3, as, "3.0.0", "Removes a node from the nodes table.", "O(1)", cmdClusterForget)),
		nondeterministic(sub("links", 2, resp.FlagStale, "7.0.0", "Returns a list of all TCP links to and from peer nodes.",
			"O(N) where N is the total number of Cluster nodes", cmdClusterLinks)),
		replicas("replicas", "5.0.0"),
		adminACL(sub("saveconfig", 2, as, "3.0.0", "Forces a node to save the cluster configuration to disk.", "O(1)", cmdClusterSaveConfig)),
		adminACL(sub("set-config-epoch", 3, as, "3.0.0", "Sets the configuration epoch for a new node.", "O(1)", cmdClusterSetConfigEpoch)),
		replicas("slaves", "3.0.0"),
	}
}

// adminACL gives an admin command Redis's ACL categories for the ADMIN
// flag: admin, slow, dangerous.
func adminACL(c *command) *command {
	c.meta.ACL = []string{"admin", "slow", "dangerous"}
	return c
}

// peerByNodeID finds the node whose Redis Cluster id is name, as Redis's
// clusterLookupNode: the exact 40-character id.
func (t *topology) peerByNodeID(name []byte) (cluster.Peer, bool) {
	for _, p := range t.peers {
		if NodeID(p.ID) == string(name) {
			return p, true
		}
	}
	return cluster.Peer{}, false
}

func errUnknownNode(name []byte) resp.Value {
	return resp.Err(resp.Errorf("ERR Unknown node %s", name))
}

// cmdClusterReplicas lists the CLUSTER NODES lines of the nodes that CLUSTER
// NODES shows as the given master's replicas.
func cmdClusterReplicas(s *Server, _ *client, args [][]byte) resp.Value {
	t := s.topology()
	m, ok := t.peerByNodeID(args[2])
	if !ok {
		return errUnknownNode(args[2])
	}
	if master, _, _ := t.nodeRole(m.ID); !master {
		return resp.Err(resp.NewError("ERR The specified node is not a master"))
	}
	now := time.Now().UnixMilli()
	var out []resp.Value
	for _, p := range t.peers {
		if master, _, mid := t.nodeRole(p.ID); !master && mid == m.ID {
			out = append(out, resp.BulkString(t.nodeLine(p, now)))
		}
	}
	return resp.Array(out...)
}

// cmdClusterFailureReports counts the failure reports about a node as
// this node's gossip knows them: none while it is alive, this node's own
// while it is suspected, every other live node's once gossip declared it
// dead (memberlist confirms a death with the other members).
func cmdClusterFailureReports(s *Server, _ *client, args [][]byte) resp.Value {
	t := s.topology()
	p, ok := t.peerByNodeID(args[2])
	if !ok {
		return errUnknownNode(args[2])
	}
	switch t.live[p.ID] {
	case cluster.GossipSuspect:
		return resp.Int(1)
	case cluster.GossipDead, cluster.GossipLeft:
		n := 0
		for _, q := range t.peers {
			if q.ID != p.ID && (q.ID == t.self.ID || t.live[q.ID] == cluster.GossipAlive) {
				n++
			}
		}
		return resp.Int(int64(n))
	}
	return resp.Int(0)
}

// cmdClusterFailover is CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica:
// it takes over its master's role, as Redis's manual failover does — the
// leadership of every group its master leads and it replicates moves to
// it (a Raft leadership transfer, recorded as the preferred leader). The
// reply comes at once; the transfers follow, as in Redis.
func cmdClusterFailover(s *Server, _ *client, args [][]byte) resp.Value {
	force := false
	if len(args) > 3 {
		return resp.Err(resp.ErrSubcommandSyntax(args[0], args[1]))
	}
	if len(args) == 3 {
		switch {
		case resp.EqualFold(args[2], "force"), resp.EqualFold(args[2], "takeover"):
			force = true
		default:
			return resp.Err(resp.ErrSyntax)
		}
	}
	t := s.topology()
	master, _, mid := t.nodeRole(t.self.ID)
	switch {
	case master:
		return resp.Err(resp.NewError("ERR You should send CLUSTER FAILOVER to a replica"))
	case mid == "":
		return resp.Err(resp.NewError("ERR I'm a replica but my master is unknown to me"))
	case !force && t.live[mid] != cluster.GossipAlive:
		return resp.Err(resp.NewError("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"))
	}
	for _, gv := range t.groups {
		if gv.leader != mid || !gv.g.Local() {
			continue
		}
		go s.takeLeadership(gv.g.ID(), t.self.ID)
	}
	return resp.OK()
}

// failoverRetry is the pause before CLUSTER FAILOVER asks for a group's
// leadership again (a transfer fails while the replica catches up, or
// when an election intervenes).
const failoverRetry = 200 * time.Millisecond

// takeLeadership moves group gid's leadership to this node (self), trying
// again until it has or 2×TransferWait passed, as Redis's manual failover
// has its own timeout.
func (s *Server) takeLeadership(gid uint32, self string) {
	ctx, cancel := context.WithTimeout(s.ctx, 2*cluster.TransferWait)
	defer cancel()
	for {
		err := s.n.TransferLeader(ctx, gid, self)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			s.log.Warn("CLUSTER FAILOVER: leadership not taken", "group", gid, "err", err)
			return
		case <-time.After(failoverRetry):
		}
	}
}

// cmdClusterForget removes a node from the cluster (SLOTRAFT REMOVE-NODE):
// a live one is drained first. Redis forgets a node for a minute on one
// node; redis-cli --cluster del-node sends FORGET to every node, and
// slotraft's map is the cluster's, so the first FORGET removes it
// everywhere and the later ones find it on its way out.
func cmdClusterForget(s *Server, _ *client, args [][]byte) resp.Value {
	t := s.topology()
	p, ok := t.peerByNodeID(args[2])
	switch {
	case !ok:
		return errUnknownNode(args[2])
	case p.ID == t.self.ID:
		return resp.Err(resp.NewError("ERR I tried hard but I can't forget myself..."))
	}
	if master, _, mid := t.nodeRole(t.self.ID); !master && mid == p.ID {
		return resp.Err(resp.NewError("ERR Can't forget my master!"))
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if _, err := s.n.RemoveNode(ctx, p.ID); err != nil {
		return resp.Err(resp.Errorf("ERR %v", err))
	}
	return resp.OK()
}

// cmdClusterSaveConfig: the cluster map is saved at every change (it is
// the meta group's replicated state), so there is nothing left to save.
func cmdClusterSaveConfig(*Server, *client, [][]byte) resp.Value { return resp.OK() }

// cmdClusterBumpEpoch never bumps: a node's config epoch is its place in
// the map, which only the meta group changes (Redis answers STILL when it
// need not bump).
func cmdClusterBumpEpoch(s *Server, _ *client, _ [][]byte) resp.Value {
	t := s.topology()
	return resp.Status("STILL " + itoa(int64(t.myEpoch())))
}

// cmdClusterSetConfigEpoch refuses as Redis does a node that knows other
// nodes or has an epoch already: a slotraft node always has one.
func cmdClusterSetConfigEpoch(s *Server, _ *client, args [][]byte) resp.Value {
	epoch, err := resp.ParseInt(args[2])
	switch {
	case err != nil:
		return resp.Err(resp.ErrNotInteger)
	case epoch < 0:
		return resp.Err(resp.Errorf("ERR Invalid config epoch specified: %d", epoch))
	case len(s.topology().peers) > 1:
		return resp.Err(resp.NewError("ERR The user can assign a config epoch only when the node does not know any other node."))
	}
	return resp.Err(resp.NewError("ERR Node config epoch is already non-zero"))
}

// cmdClusterLinks lists this node's bus links as Redis's: per peer, one
// "to" link (connections this node opened) and one "from" link (opened by
// the peer), each the oldest live connection that way. The bus writes
// without a send queue of its own (a connection's writes go straight to
// its socket), so the send buffers are 0 and events are "r".
func cmdClusterLinks(s *Server, _ *client, _ [][]byte) resp.Value {
	links := s.n.BusLinks()
	out := make([]resp.Value, 0, len(links))
	for _, l := range links {
		dir := "to"
		if l.Inbound {
			dir = "from"
		}
		out = append(out, resp.Map(
			resp.BulkString("direction"), resp.BulkString(dir),
			resp.BulkString("node"), resp.BulkString(NodeID(l.Peer)),
			resp.BulkString("create-time"), resp.Int(l.Created.UnixMilli()),
			resp.BulkString("events"), resp.BulkString("r"),
			resp.BulkString("send-buffer-allocated"), resp.Int(0),
			resp.BulkString("send-buffer-used"), resp.Int(0),
		))
	}
	return resp.Array(out...)
}
