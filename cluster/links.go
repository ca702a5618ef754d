package cluster

import (
	"slices"
	"strings"
	"time"
)

// BusLink is one link between this node and another, as CLUSTER LINKS
// reports it: the oldest live connection in each direction.
type BusLink struct {
	Peer    string // node id
	Inbound bool   // opened by the peer
	Created time.Time
}

// BusLinks lists this node's links to the other nodes of the map: per peer
// and direction, the oldest live bus connection (Raft, gossip, RPC share
// the bus, as a Redis Cluster link carries every bus message). A dialled
// connection is known by its address, an accepted one by the id its
// header gave.
func (n *Node) BusLinks() []BusLink {
	st := n.state()
	byAddr := map[string]string{}
	for _, p := range st.peers {
		byAddr[p.BusAddr] = p.ID
	}
	oldest := map[BusLink]time.Time{} // keyed with Created zero
	for _, l := range n.mux.Links() {
		id := l.Remote
		if addrID, ok := byAddr[id]; ok {
			id = addrID
		}
		if _, known := st.byID[id]; !known || id == n.self.ID {
			continue
		}
		k := BusLink{Peer: id, Inbound: l.Inbound}
		if t, ok := oldest[k]; !ok || l.Created.Before(t) {
			oldest[k] = l.Created
		}
	}
	out := make([]BusLink, 0, len(oldest))
	for k, t := range oldest {
		k.Created = t
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b BusLink) int {
		if c := strings.Compare(a.Peer, b.Peer); c != 0 {
			return c
		}
		if a.Inbound == b.Inbound {
			return 0
		}
		if a.Inbound {
			return 1
		}
		return -1
	})
	return out
}
