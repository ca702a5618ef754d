package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// StatusTimeout bounds how long a status call waits for one peer: a node
// that does not answer in time is reported unreachable.
const StatusTimeout = time.Second

// ReplicaView is one node's view of one group it hosts.
type ReplicaView struct {
	Group        uint32 `json:"group"`
	State        string `json:"state"` // Leader, Follower, Candidate, Shutdown
	Leader       string `json:"leader"`
	Term         uint64 `json:"term"`
	LastIndex    uint64 `json:"last_index"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	// Leaders only: the group's Raft membership.
	Voters    []string `json:"voters,omitempty"`
	Nonvoters []string `json:"nonvoters,omitempty"`
	// MigratedKeys counts the keys migrated out of the group ever (a
	// replicated counter, as this replica has applied it).
	MigratedKeys uint64 `json:"migrated_keys,omitempty"`
}

// NodeView is what one node reports about itself.
type NodeView struct {
	ID       string        `json:"id"`
	Leaving  bool          `json:"leaving"`
	Ready    bool          `json:"ready"`
	Replicas []ReplicaView `json:"replicas"`
}

// NodeStatus is one node of the cluster as the asking node sees it.
type NodeStatus struct {
	ID         string `json:"id"`
	ClientAddr string `json:"client_addr"`
	BusAddr    string `json:"bus_addr"`
	Reachable  bool   `json:"reachable"`
	Gossip     string `json:"gossip"` // alive, suspect, dead, left, unknown (gossip.go)
	Error      string `json:"error,omitempty"`
	Leaving    bool   `json:"leaving"`
	Leaders    int    `json:"leaders"`
	Replicas   int    `json:"replicas"`
}

// ReplicaStatus is one replica of a group; Lag is how many entries the
// replica has yet to apply of what its group's leader has in its log.
type ReplicaStatus struct {
	Node         string `json:"node"`
	State        string `json:"state"` // as reported, or "unreachable"
	Term         uint64 `json:"term,omitempty"`
	AppliedIndex uint64 `json:"applied_index,omitempty"`
	Lag          uint64 `json:"lag"`
}

// GroupStatus is one slot group.
type GroupStatus struct {
	ID       uint32          `json:"id"`
	Slots    []string        `json:"slots"`
	Leader   string          `json:"leader"` // "" if no reachable replica leads
	Replicas []ReplicaStatus `json:"replicas"`
}

// ClusterStatus is the whole cluster as seen from one node.
type ClusterStatus struct {
	Self       string        `json:"self"`
	At         time.Time     `json:"at"`
	Epoch      uint64        `json:"epoch"`       // the cluster map's
	MetaLeader string        `json:"meta_leader"` // the meta group's leader ("" if none known)
	Nodes      []NodeStatus  `json:"nodes"`
	Groups     []GroupStatus `json:"groups"`
}

// View is this node's report about itself.
func (n *Node) View() NodeView {
	v := NodeView{ID: n.self.ID, Leaving: n.leaving.Load(), Ready: n.ready.Load()}
	for _, g := range n.Groups() {
		if !g.local {
			continue
		}
		_, lid := g.raft.LeaderWithID()
		st := g.raft.Stats()
		rv := ReplicaView{
			Group: g.id, State: g.raft.State().String(), Leader: string(lid),
			Term: g.raft.CurrentTerm(), LastIndex: g.raft.LastIndex(),
			CommitIndex: parseStat(st["commit_index"]), AppliedIndex: g.raft.AppliedIndex(),
			MigratedKeys: g.fsm.State().MigratedKeys(),
		}
		if g.raft.State() == raft.Leader {
			rv.Voters, rv.Nonvoters = members(g.raft)
		}
		v.Replicas = append(v.Replicas, rv)
	}
	return v
}

// members are the voters and non-voters of r's current configuration.
func members(r *raft.Raft) (voters, nonvoters []string) {
	cf := r.GetConfiguration()
	if cf.Error() != nil {
		return nil, nil
	}
	for _, s := range cf.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, string(s.ID))
		} else {
			nonvoters = append(nonvoters, string(s.ID))
		}
	}
	return voters, nonvoters
}

func parseStat(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

func (n *Node) serveStatus(context.Context, string, []byte) ([]byte, error) {
	return json.Marshal(n.View())
}

// Status asks every node for its view (in parallel, StatusTimeout each)
// and assembles the cluster's status.
func (n *Node) Status(ctx context.Context) ClusterStatus {
	peers, views, errs := n.views(ctx)
	cs := assembleStatus(n.self.ID, peers, n.Groups(), views, errs)
	cs.Epoch, cs.MetaLeader = n.Map().Epoch, n.MetaLeader()
	states := n.GossipStates()
	for i := range cs.Nodes {
		cs.Nodes[i].Gossip = string(states[cs.Nodes[i].ID])
	}
	return cs
}

// views asks every peer for its view, in parallel (StatusTimeout each);
// views[i] and errs[i] belong to peers[i] (the map's active nodes at the
// call), this node's own view included.
func (n *Node) views(ctx context.Context) (peers []Peer, views []NodeView, errs []error) {
	peers = n.Peers()
	views = make([]NodeView, len(peers))
	errs = make([]error, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		if p.ID == n.self.ID {
			views[i] = n.View()
			continue
		}
		wg.Go(func() { views[i], errs[i] = n.peerView(ctx, p.ID) })
	}
	wg.Wait()
	return peers, views, errs
}

func (n *Node) peerView(ctx context.Context, id string) (NodeView, error) {
	ctx, cancel := context.WithTimeout(ctx, StatusTimeout)
	defer cancel()
	b, err := n.call(ctx, id, svcStatus, nil)
	if err != nil {
		return NodeView{}, err
	}
	var v NodeView
	if err := json.Unmarshal(b, &v); err != nil {
		return NodeView{}, fmt.Errorf("status from %s: %w", id, err)
	}
	return v, nil
}

// assembleStatus joins the nodes' views: views[i] and errs[i] belong to peers[i].
func assembleStatus(self string, peers []Peer, groups []*Group, views []NodeView, errs []error) ClusterStatus {
	cs := ClusterStatus{Self: self, At: time.Now().UTC()}
	byNode := map[string]map[uint32]ReplicaView{}
	for i, p := range peers {
		ns := NodeStatus{ID: p.ID, ClientAddr: p.ClientAddr, BusAddr: p.BusAddr, Reachable: errs[i] == nil}
		if errs[i] != nil {
			ns.Error = errs[i].Error()
		} else {
			ns.Leaving = views[i].Leaving
			byNode[p.ID] = map[uint32]ReplicaView{}
			for _, r := range views[i].Replicas {
				byNode[p.ID][r.Group] = r
				ns.Replicas++
				if r.State == raft.Leader.String() {
					ns.Leaders++
				}
			}
		}
		cs.Nodes = append(cs.Nodes, ns)
	}
	for _, g := range groups {
		cs.Groups = append(cs.Groups, groupStatus(g, byNode))
	}
	return cs
}

func groupStatus(g *Group, byNode map[string]map[uint32]ReplicaView) GroupStatus {
	gs := GroupStatus{ID: g.id}
	lay := g.layout()
	for _, r := range lay.ranges {
		gs.Slots = append(gs.Slots, r.String())
	}
	var leaderLast, leaderTerm uint64
	for _, p := range lay.replicas {
		if rv, ok := byNode[p.ID][g.id]; ok && rv.State == raft.Leader.String() && rv.Term >= leaderTerm {
			gs.Leader, leaderLast, leaderTerm = p.ID, rv.LastIndex, rv.Term
		}
	}
	for _, p := range lay.replicas {
		rs := ReplicaStatus{Node: p.ID, State: "unreachable"}
		if views, ok := byNode[p.ID]; ok {
			rs.State = "missing" // the node answers but does not host the group
			if rv, ok := views[g.id]; ok {
				rs.State, rs.Term, rs.AppliedIndex = rv.State, rv.Term, rv.AppliedIndex
				if leaderLast > rv.AppliedIndex {
					rs.Lag = leaderLast - rv.AppliedIndex
				}
			}
		}
		gs.Replicas = append(gs.Replicas, rs)
	}
	slices.SortStableFunc(gs.Replicas, func(a, b ReplicaStatus) int {
		return boolRank(a.Node == gs.Leader) - boolRank(b.Node == gs.Leader)
	})
	return gs
}

func boolRank(b bool) int {
	if b {
		return 0
	}
	return 1
}
