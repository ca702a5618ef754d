package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// CLUSTER subcommands and ASKING. A group's Raft leader is rendered as the
// master of its slot ranges and its other replicas as that master's replicas.

var (
	errInvalidSlot     = resp.NewError("ERR Invalid slot")
	errInvalidSlotKeys = resp.NewError("ERR Invalid slot or number of keys")
)

func clusterCommands() []*command {
	slow := []string{"slow"}
	ls := resp.FlagLoading | resp.FlagStale
	sub := func(name string, arity int, flags resp.Flag, since, summary, complexity string, run nodeHandler) *command {
		return &command{meta: subMeta("cluster", name, arity, flags, slow, since, summary, complexity), node: run}
	}
	subs := []*command{
		sub("countkeysinslot", 3, resp.FlagStale, "3.0.0", "Returns the number of keys in a hash slot.", "O(1)", cmdClusterCountKeysInSlot),
		nondeterministic(sub("getkeysinslot", 4, resp.FlagStale, "3.0.0", "Returns the key names in a hash slot.", "O(N) where N is the number of requested keys", cmdClusterGetKeysInSlot)),
		sub("help", 2, ls, "5.0.0", "Returns helpful text about the different subcommands.", "O(1)", cmdClusterHelp),
		sub("info", 2, ls, "3.0.0", "Returns information about the state of a node.", "O(1)", cmdClusterInfo),
		sub("keyslot", 3, resp.FlagStale, "3.0.0", "Returns the hash slot for a key.", "O(N) where N is the number of bytes in the key", cmdClusterKeySlot),
		sub("myid", 2, ls, "3.0.0", "Returns the ID of a node.", "O(1)", cmdClusterMyID),
		sub("myshardid", 2, ls, "7.2.0", "Returns the shard ID of a node.", "O(1)", cmdClusterMyShardID),
		nondeterministic(sub("nodes", 2, ls, "3.0.0", "Returns the cluster configuration for a node.", "O(N) where N is the total number of Cluster nodes", cmdClusterNodes)),
		sub("setslot", -4, resp.FlagAdmin|resp.FlagStale, "3.0.0", "Binds a hash slot to a node.", "O(1)", cmdClusterSetSlot), // setslot.go
		nondeterministic(sub("shards", 2, ls, "7.0.0", "Returns the mapping of cluster slots to shards.", "O(N) where N is the total number of cluster nodes", cmdClusterShards)),
		nondeterministic(sub("slots", 2, ls, "3.0.0", "Returns the mapping of cluster slots to nodes.", "O(N) where N is the total number of Cluster nodes", cmdClusterSlots)),
	}
	subs = append(subs, clusterOpsCommands(sub)...)     // cluster_ops.go
	subs = append(subs, clusterSlotOpsCommands(sub)...) // cluster_slots_ops.go
	subs = append(subs, clusterMeetCommands(sub)...)    // cluster_meet.go
	meta := &resp.Command{Name: "cluster", Arity: -2, Group: "cluster", Since: "3.0.0",
		Summary: "A container for Redis Cluster commands.", Complexity: "Depends on subcommand."}
	return []*command{
		container(meta, subs...),
		{meta: &resp.Command{Name: "asking", Arity: 1, Flags: resp.FlagFast, ACL: []string{"fast", "connection"}, Group: "cluster",
			Since: "3.0.0", Summary: "Signals that a cluster client is following an -ASK redirect.", Complexity: "O(1)"},
			node: func(_ *Server, c *client, _ [][]byte) resp.Value { c.asking = true; return resp.OK() }},
		migrateCommand(), // migrate_cmd.go
	}
}

func cmdClusterSlots(s *Server, c *client, _ [][]byte) resp.Value {
	t := s.topology()
	t.onTLS = c.onTLS
	var out []resp.Value
	for _, gv := range t.groups {
		if len(gv.replicas) == 0 {
			continue
		}
		// A group with no leader known here (an election) is listed all
		// the same, its preferred replica in the master's place, as Redis
		// lists a failed master's slots until a replica takes over: a
		// client that maps its slots then gets a retryable error there
		// (TRYAGAIN, CLUSTERDOWN, MOVED), not a hole in its slot map
		// that some clients (redis-py) refuse to start with.
		for _, r := range gv.ranges {
			entry := []resp.Value{resp.Int(int64(r.Start)), resp.Int(int64(r.End))}
			for _, id := range gv.replicas {
				entry = append(entry, t.slotNode(id))
			}
			out = append(out, resp.Array(entry...))
		}
	}
	return resp.Array(out...)
}

func cmdClusterShards(s *Server, c *client, _ [][]byte) resp.Value {
	t := s.topology()
	t.onTLS = c.onTLS
	var out []resp.Value
	for _, gv := range t.groups {
		var rs []resp.Value
		for _, r := range gv.ranges {
			rs = append(rs, resp.Int(int64(r.Start)), resp.Int(int64(r.End)))
		}
		var nodes []resp.Value
		for _, id := range gv.replicas {
			nodes = append(nodes, t.shardNode(id, id == gv.leader))
		}
		out = append(out, resp.Map(resp.BulkString("slots"), resp.Array(rs...), resp.BulkString("nodes"), resp.Array(nodes...)))
	}
	return resp.Array(out...)
}

func cmdClusterNodes(s *Server, c *client, _ [][]byte) resp.Value {
	t := s.topology()
	t.onTLS = c.onTLS
	now := time.Now().UnixMilli()
	var b strings.Builder
	for _, p := range t.peers {
		b.WriteString(t.nodeLine(p, now))
		if p.ID == t.self.ID {
			b.WriteString(migrationMarks(p.ID, t.leaders(), s.n.Map().Migrations)) // setslot.go
		}
		b.WriteString("\n")
	}
	return resp.Verbatim("txt", []byte(b.String()))
}

// nodeLine is p's line of CLUSTER NODES (without migration marks or the
// newline), as CLUSTER REPLICAS lists it too.
func (t *topology) nodeLine(p cluster.Peer, now int64) string {
	var b strings.Builder
	master, ranges, masterID := t.nodeRole(p.ID)
	host, port := t.endpoint(p)
	_, bus := hostPort(p.BusAddr)
	addr := fmt.Sprintf("%s:%d@%d", host, port, bus)
	if !isIP(host) {
		addr += "," + host
	}
	var flags []string
	if p.ID == t.self.ID {
		flags = append(flags, "myself")
	}
	epoch, mid := t.epoch[p.ID], "-"
	if master {
		flags = append(flags, "master")
	} else {
		flags = append(flags, "slave")
		epoch, mid = t.epoch[masterID], NodeID(masterID)
	}
	pong, link := now, "connected"
	switch t.live[p.ID] {
	case cluster.GossipSuspect:
		flags = append(flags, "fail?")
	case cluster.GossipDead, cluster.GossipLeft:
		flags, pong, link = append(flags, "fail"), 0, "disconnected"
	}
	if p.ID == t.self.ID {
		pong = 0
	}
	fmt.Fprintf(&b, "%s %s %s %s 0 %d %d %s", NodeID(p.ID), addr, strings.Join(flags, ","), mid, pong, epoch, link)
	for _, r := range ranges {
		b.WriteString(" " + r.String())
	}
	return b.String()
}

func cmdClusterInfo(s *Server, _ *client, _ [][]byte) resp.Value {
	t := s.topology()
	assigned, ok := 0, 0
	for _, gv := range t.groups {
		for _, r := range gv.ranges {
			assigned += r.Len()
			if gv.leader != "" {
				ok += r.Len()
			}
		}
	}
	state := "ok"
	if ok < slots.Count {
		state = "fail"
	}
	masters := map[string]bool{}
	for _, gv := range t.groups {
		if gv.leader != "" {
			masters[gv.leader] = true
		}
	}
	myEpoch := t.myEpoch()
	lines := []string{
		"cluster_state:" + state,
		fmt.Sprintf("cluster_slots_assigned:%d", assigned),
		fmt.Sprintf("cluster_slots_ok:%d", ok),
		"cluster_slots_pfail:0",
		fmt.Sprintf("cluster_slots_fail:%d", assigned-ok),
		fmt.Sprintf("cluster_known_nodes:%d", len(t.peers)),
		fmt.Sprintf("cluster_size:%d", len(masters)),
		fmt.Sprintf("cluster_current_epoch:%d", len(t.peers)),
		fmt.Sprintf("cluster_my_epoch:%d", myEpoch),
		fmt.Sprintf("cluster_stats_messages_sent:%d", 0),
		fmt.Sprintf("cluster_stats_messages_received:%d", 0),
		"total_cluster_links_buffer_limit_exceeded:0",
	}
	return resp.Verbatim("txt", []byte(strings.Join(lines, "\r\n")+"\r\n"))
}

// myEpoch is this node's config epoch as CLUSTER INFO and NODES show it:
// its own, or its master's for a replica.
func (t *topology) myEpoch() int {
	if master, _, mid := t.nodeRole(t.self.ID); !master {
		return t.epoch[mid]
	}
	return t.epoch[t.self.ID]
}

func cmdClusterMyID(s *Server, _ *client, _ [][]byte) resp.Value {
	return resp.BulkString(NodeID(s.n.Self().ID))
}

// cmdClusterMyShardID answers the shard of the first group led here, else
// of the first group this node replicates.
func cmdClusterMyShardID(s *Server, _ *client, _ [][]byte) resp.Value {
	t := s.topology()
	for _, gv := range t.groups {
		if gv.leader == t.self.ID {
			return resp.BulkString(ShardID(gv.g.ID()))
		}
	}
	for _, gv := range t.groups {
		if gv.g.Local() {
			return resp.BulkString(ShardID(gv.g.ID()))
		}
	}
	return resp.BulkString(NodeID(t.self.ID))
}

func cmdClusterKeySlot(_ *Server, _ *client, args [][]byte) resp.Value {
	return resp.Int(int64(slots.Of(args[2])))
}

func parseSlot(b []byte) (uint16, error) {
	n, err := resp.ParseInt(b)
	if err != nil {
		return 0, err
	}
	if n < 0 || n >= slots.Count {
		return 0, errInvalidSlot
	}
	return uint16(n), nil
}

func cmdClusterCountKeysInSlot(s *Server, c *client, args [][]byte) resp.Value {
	slot, err := parseSlot(args[2])
	if err != nil {
		return resp.Err(err)
	}
	var n int
	if v, ok := s.slotView(c, slot, func(st store.Reader) { n = st.CountInSlot(slot) }); !ok {
		return v
	}
	return resp.Int(int64(n))
}

func cmdClusterGetKeysInSlot(s *Server, c *client, args [][]byte) resp.Value {
	n, err := resp.ParseInt(args[2])
	if err != nil {
		return resp.Err(err)
	}
	count, err := resp.ParseInt(args[3])
	if err != nil {
		return resp.Err(err)
	}
	if n < 0 || n >= slots.Count || count < 0 {
		return resp.Err(errInvalidSlotKeys)
	}
	slot := uint16(n)
	var keys [][]byte
	if v, ok := s.slotView(c, slot, func(st store.Reader) { keys = st.KeysInSlot(slot, int(count)) }); !ok {
		return v
	}
	return resp.BulkArray(keys)
}

// slotView runs fn on the store of the group of slot: linearizably on its
// leader, on the local replica for READONLY clients, or answers MOVED.
func (s *Server) slotView(c *client, slot uint16, fn func(st store.Reader)) (resp.Value, bool) {
	g := s.n.GroupOf(slot)
	view := func(st fsm.Reader) { st.View(fn) }
	var err error
	switch {
	case g.IsLeader():
		ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
		defer cancel()
		err = g.Read(ctx, view)
	case c.isReadonly() && g.Local():
		err = g.ReadStale(view)
	default:
		return s.redirect(c, g, slot), false
	}
	if err != nil {
		if errors.Is(err, cluster.ErrNotLeader) {
			return s.redirect(c, g, slot), false
		}
		return resp.Err(err), false
	}
	return resp.Value{}, true
}

func cmdClusterHelp(_ *Server, _ *client, _ [][]byte) resp.Value {
	return helpReply("CLUSTER", []string{
		"COUNTKEYSINSLOT <slot>",
		"    Return the number of keys in <slot>.",
		"GETKEYSINSLOT <slot> <count>",
		"    Return key names stored by current node in a slot.",
		"INFO",
		"    Return information about the cluster.",
		"KEYSLOT <key>",
		"    Return the hash slot for <key>.",
		"MYID",
		"    Return the node id.",
		"MYSHARDID",
		"    Return the node's shard id.",
		"NODES",
		"    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port@bus-port[,hostname]> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
		"SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
		"    Set slot state.",
		"SHARDS",
		"    Return information about slot range mappings and the nodes associated with them.",
		"SLOTS",
		"    Return information about slots range mappings. Each range is made of:",
		"    start, end, master and replicas IP addresses, ports and ids",
	})
}
