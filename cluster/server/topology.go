package server

import (
	"crypto/sha1"
	"encoding/hex"
	"net"
	"slices"
	"strconv"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// The cluster as CLUSTER SLOTS, SHARDS, NODES and INFO (and INFO's
// replication section) render it: one consistent reading of the map and
// the leaders known here, with Redis Cluster's node and shard ids.

// topology is one consistent reading of the cluster map and the leaders
// known here, from which every CLUSTER reply is rendered.
type topology struct {
	self   cluster.Peer
	peers  []cluster.Peer
	byID   map[string]cluster.Peer
	epoch  map[string]int // config epoch of each node: its 1-based position in Peers
	groups []groupView    // in slot order
	live   map[string]cluster.GossipState
}

type groupView struct {
	g        *cluster.Group
	ranges   []slots.Range
	leader   string   // node id of the leader; "" if unknown
	replicas []string // node ids, leader first
}

func (s *Server) topology() *topology {
	t := &topology{self: s.n.Self(), peers: s.n.Peers(), byID: map[string]cluster.Peer{}, epoch: map[string]int{},
		live: s.n.GossipStates()}
	for i, p := range t.peers {
		t.byID[p.ID] = p
		t.epoch[p.ID] = i + 1
	}
	for _, g := range s.n.Groups() {
		gv := groupView{g: g, ranges: g.Ranges()}
		if l, ok := s.n.Leader(g); ok {
			gv.leader = l.ID
			gv.replicas = append(gv.replicas, l.ID)
		}
		for _, id := range g.Replicas() {
			if id != gv.leader {
				gv.replicas = append(gv.replicas, id)
			}
		}
		t.groups = append(t.groups, gv)
	}
	slices.SortFunc(t.groups, func(a, b groupView) int { return int(firstSlot(a.g)) - int(firstSlot(b.g)) })
	return t
}

// hostPort splits an advertised address; a bad one renders as host "?" port 0.
func hostPort(addr string) (string, int) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "?", 0
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

// slotNode is one node of a CLUSTER SLOTS range: endpoint, port, id, metadata.
func (t *topology) slotNode(id string) resp.Value {
	host, port := hostPort(t.byID[id].ClientAddr)
	meta := []resp.Value{}
	if !isIP(host) {
		meta = append(meta, resp.BulkString("hostname"), resp.BulkString(host))
	}
	return resp.Array(resp.BulkString(host), resp.Int(int64(port)), resp.BulkString(NodeID(id)), resp.Map(meta...))
}

func (t *topology) shardNode(id string, master bool) resp.Value {
	host, port := hostPort(t.byID[id].ClientAddr)
	role := "replica"
	if master {
		role = "master"
	}
	kv := []resp.Value{
		resp.BulkString("id"), resp.BulkString(NodeID(id)),
		resp.BulkString("port"), resp.Int(int64(port)),
		resp.BulkString("ip"), resp.BulkString(host),
		resp.BulkString("endpoint"), resp.BulkString(host),
	}
	if !isIP(host) {
		kv = append(kv, resp.BulkString("hostname"), resp.BulkString(host))
	}
	kv = append(kv,
		resp.BulkString("role"), resp.BulkString(role),
		resp.BulkString("replication-offset"), resp.Int(0),
		resp.BulkString("health"), resp.BulkString(t.health(id)))
	return resp.Map(kv...)
}

// health is CLUSTER SHARDS' health of a node: failed once gossip finds it
// dead or gone, online otherwise.
func (t *topology) health(id string) string {
	switch t.live[id] {
	case cluster.GossipDead, cluster.GossipLeft:
		return "failed"
	default:
		return "online"
	}
}

// nodeRole says how CLUSTER NODES shows one node: a node that leads groups
// is the master of their slots; a node that leads none is shown as a
// replica of the leader of the first group it replicates.
func (t *topology) nodeRole(id string) (master bool, ranges []slots.Range, masterID string) {
	for _, gv := range t.groups {
		if gv.leader == id {
			master = true
			ranges = append(ranges, gv.ranges...)
		}
	}
	if master {
		return true, ranges, ""
	}
	for _, gv := range t.groups {
		if gv.leader != "" && slices.Contains(gv.replicas, id) {
			return false, nil, gv.leader
		}
	}
	return true, nil, "" // a master without slots
}

// NodeID is the 40-hex-digit Redis Cluster node id of the node configured
// with id: derived (sha1) so every node renders the same id for it.
func NodeID(id string) string {
	sum := sha1.Sum([]byte("slotraft-node:" + id))
	return hex.EncodeToString(sum[:])
}

// ShardID is the 40-hex-digit shard id of slot group g.
func ShardID(g uint32) string {
	sum := sha1.Sum([]byte("slotraft-shard:" + strconv.FormatUint(uint64(g), 10)))
	return hex.EncodeToString(sum[:])
}

// leaders maps each group of t to its leader's node id ("" while unknown).
func (t *topology) leaders() map[uint32]string {
	out := make(map[uint32]string, len(t.groups))
	for _, gv := range t.groups {
		out[gv.g.ID()] = gv.leader
	}
	return out
}

func isIP(host string) bool { return net.ParseIP(host) != nil }
