package cluster

import (
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

// mapState is the cluster map as this node uses it: built from the meta
// group's map each time that changes (reconcile.go), never modified.
type mapState struct {
	m      *meta.Map
	peers  []Peer          // active nodes by id; this node is always listed
	byID   map[string]Peer // every node the map knows, removed ones too
	groups []*Group        // by id
	slot   []*Group        // owner of each slot; nil while unassigned
	// pending: reconciliation left something to retry.
	pending bool
	// replaced is closed when a newer state replaces this one.
	replaced chan struct{}
}

// emptyState is the map before the meta group delivered one: this node only.
func emptyState(self Peer) *mapState {
	return &mapState{m: &meta.Map{}, peers: []Peer{self}, byID: map[string]Peer{self.ID: self},
		slot: make([]*Group, slots.Count), replaced: make(chan struct{})}
}

// peersOf turns the map's nodes into peers; self is kept listed even
// before the map knows it (a joining node).
func peersOf(m *meta.Map, self Peer) ([]Peer, map[string]Peer) {
	byID := map[string]Peer{}
	var peers []Peer
	selfListed := false
	for _, nd := range m.Nodes {
		p := Peer{ID: nd.ID, ClientAddr: nd.Client, BusAddr: nd.Bus}
		byID[p.ID] = p
		if nd.State != meta.Removed { // active or draining
			peers = append(peers, p)
			selfListed = selfListed || p.ID == self.ID
		}
	}
	if !selfListed {
		peers = append(peers, self)
		byID[self.ID] = self
	}
	return peers, byID
}

// layoutOf is a map group's layout with its replicas' addresses.
func layoutOf(g meta.Group, byID map[string]Peer) *layout {
	lay := &layout{ranges: g.Ranges}
	for _, id := range g.Replicas {
		if p, ok := byID[id]; ok {
			lay.replicas = append(lay.replicas, p)
		}
	}
	return lay
}

func (n *Node) state() *mapState { return n.ms.Load() }

// Map is the cluster map this node follows (never nil; do not modify).
func (n *Node) Map() *meta.Map { return n.state().m }

// Peers is every active node of the map, by id.
func (n *Node) Peers() []Peer { return append([]Peer(nil), n.state().peers...) }

// peer finds a node the map knows (removed ones too).
func (n *Node) peer(id string) (Peer, bool) {
	p, ok := n.state().byID[id]
	return p, ok
}

// Groups is every slot group of the cluster, hosted here or not, by id.
func (n *Node) Groups() []*Group { return append([]*Group(nil), n.state().groups...) }

// GroupOf is the group that owns slot; nil while no group does (before
// the map is known).
func (n *Node) GroupOf(slot uint16) *Group { return n.state().slot[slot] }

// Group finds a group by id.
func (n *Node) Group(id uint32) (*Group, bool) {
	g := n.state().groupByID(id)
	return g, g != nil
}

// MapChanged is closed when a newer cluster map replaces the one in use
// now: a caller reads the map after taking it and waits on it for the next.
func (n *Node) MapChanged() <-chan struct{} { return n.state().replaced }
