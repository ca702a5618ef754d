package meta

import (
	"slices"

	"github.com/slotraft/slotraft/slots"
)

// NodeState is a node's membership in the map.
type NodeState string

const (
	// Active nodes may hold replicas and vote in the meta group.
	Active NodeState = "active"
	// Draining nodes are being emptied for removal: they keep the
	// replicas they hold, and vote in the meta group, until placement has
	// moved those replicas to other nodes; they get no new ones. IsActive
	// and ActiveNodes count them: they are still members.
	Draining NodeState = "draining"
	// Removed nodes were taken out (dead longer than --dead-after, or by
	// an operator); one that comes back rejoins as a new incarnation.
	Removed NodeState = "removed"
)

// Node is one node as the map knows it.
type Node struct {
	ID     string    `json:"id"`
	Client string    `json:"client"` // advertised client host:port
	Bus    string    `json:"bus"`    // advertised bus host:port
	State  NodeState `json:"state"`
	// Incarnation counts the times the node was (re)added: a node removed
	// and added again is a new member under the same id.
	Incarnation uint64 `json:"incarnation"`
	// Drained: removed after an operator drained it (DrainNode), not
	// because it was down: its process leaves rather than rejoining.
	Drained bool `json:"drained,omitempty"`
	// ReplicaOf is the node this one was told to replicate (CLUSTER
	// REPLICATE, in a Manual map): CLUSTER NODES shows it as that node's
	// replica while it leads no slots.
	ReplicaOf string `json:"replica_of,omitempty"`
	// UID identifies the node's data directory (cluster/identity.go): a
	// node that comes back under this id with another one lost its data
	// and is a new member. "" until known.
	UID string `json:"uid,omitempty"`
}

// Group is one slot group: the slots it owns and the nodes replicating it.
type Group struct {
	ID     uint32        `json:"id"`
	Ranges []slots.Range `json:"ranges"`
	// Replicas are the nodes that should host the group, preferred leader
	// first.
	Replicas []string `json:"replicas"`
	// Boot is the replica set the group was created with: the only nodes
	// that may bootstrap its Raft, and only while Changes is 0.
	Boot []string `json:"boot"`
	// Changes counts replica-set changes since creation.
	Changes uint64 `json:"changes"`
}

// Map is the cluster map. Values handed out by the FSM are never
// modified: a change builds a new Map (Clone).
type Map struct {
	Epoch  uint64  `json:"epoch"`  // bumped by every change
	Nodes  []Node  `json:"nodes"`  // sorted by ID
	Groups []Group `json:"groups"` // sorted by ID
	// Migrations are the slot moves in flight, sorted by Slot, at most one
	// per slot. A migrating slot stays in its source's Ranges until
	// FinishMigration.
	Migrations []Migration `json:"migrations,omitempty"`
	// Rebalance asks placement to even out the slots over the groups.
	Rebalance bool `json:"rebalance,omitempty"`
	// Moved counts the migrations ever finished, for progress reports.
	Moved uint64 `json:"moved,omitempty"`
	// Manual: slots are placed by hand (a cluster formed with CLUSTER MEET,
	// manual.go): placement adds no groups and moves no slots on its own.
	Manual bool `json:"manual,omitempty"`
}

// Initialized reports whether the map has been created (Init applied).
func (m *Map) Initialized() bool { return m != nil && len(m.Groups) > 0 }

// Node finds a node by id, removed ones included.
func (m *Map) Node(id string) (Node, bool) {
	if m == nil {
		return Node{}, false
	}
	i, ok := m.nodeIndex(id)
	if !ok {
		return Node{}, false
	}
	return m.Nodes[i], true
}

// IsActive reports whether id is a member: an Active or Draining node. A
// draining node still hosts replicas and votes, so it counts for
// everything but receiving new replicas (see IsDraining).
func (m *Map) IsActive(id string) bool {
	nd, ok := m.Node(id)
	return ok && nd.State.member()
}

// IsDraining reports whether id is a Draining node.
func (m *Map) IsDraining(id string) bool {
	nd, ok := m.Node(id)
	return ok && nd.State == Draining
}

// member reports whether a node in state s belongs to the cluster.
func (s NodeState) member() bool { return s == Active || s == Draining }

// ActiveNodes are the members (Active and Draining nodes), by id.
func (m *Map) ActiveNodes() []Node {
	if m == nil {
		return nil
	}
	var out []Node
	for _, nd := range m.Nodes {
		if nd.State.member() {
			out = append(out, nd)
		}
	}
	return out
}

// Group finds a group by id.
func (m *Map) Group(id uint32) (Group, bool) {
	if m == nil {
		return Group{}, false
	}
	if g := m.group(id); g != nil {
		return *g, true
	}
	return Group{}, false
}

// GroupOf is the group owning slot.
func (m *Map) GroupOf(slot uint16) (Group, bool) {
	if m == nil {
		return Group{}, false
	}
	for _, g := range m.Groups {
		for _, r := range g.Ranges {
			if r.Contains(slot) {
				return g, true
			}
		}
	}
	return Group{}, false
}

// HostedBy are the ids of the groups that list node as a replica.
func (m *Map) HostedBy(node string) []uint32 {
	if m == nil {
		return nil
	}
	var out []uint32
	for _, g := range m.Groups {
		if slices.Contains(g.Replicas, node) {
			out = append(out, g.ID)
		}
	}
	return out
}

// Clone is a deep copy.
func (m *Map) Clone() *Map {
	if m == nil {
		return &Map{}
	}
	c := &Map{Epoch: m.Epoch, Nodes: slices.Clone(m.Nodes), Groups: make([]Group, len(m.Groups)),
		Migrations: slices.Clone(m.Migrations), Rebalance: m.Rebalance, Moved: m.Moved, Manual: m.Manual}
	for i, g := range m.Groups {
		g.Ranges = slices.Clone(g.Ranges)
		g.Replicas = slices.Clone(g.Replicas)
		g.Boot = slices.Clone(g.Boot)
		c.Groups[i] = g
	}
	return c
}
