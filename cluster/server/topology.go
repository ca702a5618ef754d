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
	// A cluster placed by hand (meta.Map.Manual) shows the roles its
	// operator gave: replicaOf is each node's CLUSTER REPLICATE target.
	manual    bool
	replicaOf map[string]string
	// claims are the slots an unmet node was given (CLUSTER ADDSLOTS
	// before MEET): its own, as Redis shows them.
	claims []slots.Range
	// onTLS: rendered for a client on TLS, which is given the nodes' TLS
	// ports (tlsPort) where they announce one, as Redis 7.2 does.
	onTLS   bool
	tlsPort func(id string) int
}

type groupView struct {
	g        *cluster.Group
	ranges   []slots.Range
	leader   string   // node id of the leader; "" if unknown
	replicas []string // node ids, leader first
	// preferred is the map's preferred leader (first replica).
	preferred string
}

func (s *Server) topology() *topology {
	t := &topology{self: s.n.Self(), peers: s.n.Peers(), byID: map[string]cluster.Peer{}, epoch: map[string]int{},
		live: s.n.GossipStates(), replicaOf: map[string]string{}, tlsPort: s.n.TLSPort}
	m := s.n.Map()
	t.manual = m.Manual
	for _, nd := range m.Nodes {
		if nd.ReplicaOf != "" {
			t.replicaOf[nd.ID] = nd.ReplicaOf
		}
	}
	if s.n.Unmet() {
		t.claims = s.n.Claims()
	}
	for i, p := range t.peers {
		t.byID[p.ID] = p
		t.epoch[p.ID] = i + 1
	}
	for _, g := range s.n.Groups() {
		gv := groupView{g: g, ranges: g.Ranges()}
		if reps := g.Replicas(); len(reps) > 0 {
			gv.preferred = reps[0]
		}
		if l, ok := s.n.Leader(g); ok {
			gv.leader = l.ID
			gv.replicas = append(gv.replicas, l.ID)
			if _, known := t.byID[l.ID]; !known {
				// A leader the map has just removed (a stale answer about a
				// cut-off node): render its address rather than "?", which
				// clients would try to resolve.
				t.byID[l.ID] = l
			}
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

// endpoint is p's client host and port as this rendering gives them: the
// TLS port for a client on TLS when p announces one.
func (t *topology) endpoint(p cluster.Peer) (string, int) {
	host, port := hostPort(p.ClientAddr)
	if t.onTLS {
		if tp := t.tlsPort(p.ID); tp > 0 {
			port = tp
		}
	}
	return host, port
}

// slotNode is one node of a CLUSTER SLOTS range: endpoint, port, id, metadata.
func (t *topology) slotNode(id string) resp.Value {
	host, port := t.endpoint(t.byID[id])
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
	}
	if tp := t.tlsPort(id); tp > 0 {
		kv = append(kv, resp.BulkString("tls-port"), resp.Int(int64(tp)))
	}
	kv = append(kv,
		resp.BulkString("ip"), resp.BulkString(host),
		resp.BulkString("endpoint"), resp.BulkString(host))
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
// replica of the leader of the first group it replicates. In a cluster
// placed by hand (CLUSTER MEET) roles are the operator's: a node told to
// REPLICATE a master that leads is its replica while it leads no slots,
// any other node a master (without slots if it leads none). An unmet node
// is the master of the slots it claims.
func (t *topology) nodeRole(id string) (master bool, ranges []slots.Range, masterID string) {
	master, ranges = t.leads(id)
	switch {
	case id == t.self.ID && len(t.claims) > 0:
		return true, t.claims, ""
	case t.manual && len(ranges) == 0 && t.replicaOf[id] != "":
		// told to replicate, and leading no slots
		if of := t.replicaOf[id]; of != id {
			if ofMaster, _ := t.leads(of); ofMaster {
				return false, nil, of
			}
		}
	}
	if master || t.manual {
		// By hand, a node is a master unless told to replicate.
		return true, ranges, ""
	}
	for _, gv := range t.groups {
		if gv.leader != "" && slices.Contains(gv.replicas, id) {
			return false, nil, gv.leader
		}
	}
	return true, nil, "" // a master without slots
}

// leads reports whether node id leads a slot group, with the slots of
// the groups it leads. In a cluster placed by hand, a group whose leader
// is not known (yet) counts as led by its preferred leader, the node the
// operator gave its slots: as Redis Cluster shows a master's slots while
// it cannot serve them.
func (t *topology) leads(id string) (bool, []slots.Range) {
	var ranges []slots.Range
	leader := false
	for _, gv := range t.groups {
		if gv.leader == id || (t.manual && gv.leader == "" && gv.preferred == id) {
			leader = true
			ranges = append(ranges, gv.ranges...)
		}
	}
	return leader, ranges
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
