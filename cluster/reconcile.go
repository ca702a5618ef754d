package cluster

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

// Every node follows the meta group's map: it opens the slot groups the map
// gives it, stops those taken from it (keeping their data aside, never
// deleting it), and routes clients by the map's slot ownership.

// reconcileRetry is how often a node retries what it could not do at a
// map change (a group that failed to open, a leader waiting to hand off a
// group it no longer replicates).
const reconcileRetry = 500 * time.Millisecond

func (n *Node) reconcileLoop() {
	for {
		changed := n.meta.fsm.Changed()
		n.reconcile()
		select {
		case <-n.ctx.Done():
			return
		case <-changed:
		case <-time.After(reconcileRetry):
		}
	}
}

// reconcile makes the hosted groups and the routing state match the map.
func (n *Node) reconcile() {
	n.stateMu.Lock()
	defer n.stateMu.Unlock()
	if n.ctx.Err() != nil {
		return
	}
	m := n.meta.fsm.Map()
	old := n.state()
	if m == old.m && !old.pending {
		return
	}
	if nd, ok := m.Node(n.self.ID); ok && nd.State == meta.Removed && n.removedSeen != nd.Incarnation {
		n.removedSeen = nd.Incarnation
		n.noteRemoved(m, nd)
	}
	if n.staleIdentity(m) {
		n.log.Warn("the cluster map knows this node by another data directory (this one is new: the node lost its data); it hosts no group until it is added again as a new member",
			"uid", n.uid, "epoch", m.Epoch)
	}
	peers, byID := peersOf(m, n.self)
	next := &mapState{m: m, peers: peers, byID: byID, slot: make([]*Group, slots.Count), replaced: make(chan struct{})}
	kept := map[uint32]bool{}
	for _, mg := range m.Groups {
		g := n.reconcileGroup(old, next, mg)
		kept[g.id] = true
		next.groups = append(next.groups, g)
		for _, r := range g.layout().ranges {
			for s := int(r.Start); s <= int(r.End); s++ {
				next.slot[s] = g
			}
		}
	}
	for _, g := range old.groups {
		if !kept[g.id] && g.local && !n.retire(g, m.Epoch) {
			next.pending = true // not expected before groups can be deleted
		}
	}
	n.ms.Store(next)
	close(old.replaced)
	n.noteMapChange(old.m, m)
	if ready := m.Initialized(); !n.ready.Swap(ready) && ready && n.gossip != nil {
		n.goBackground(n.gossip.announce) // now a member: tell gossip (bootstrap.go)
	}
}

// noteRemoved reacts to this node's removal from the map: a node drained
// by an operator leaves (its process exits as on SIGTERM) instead of being
// added back by gossip; any other rejoins as a new member.
func (n *Node) noteRemoved(m *meta.Map, nd meta.Node) {
	if nd.Drained {
		n.log.Warn("this node was drained and removed from the cluster map: leaving", "epoch", m.Epoch)
		n.RequestLeave()
		return
	}
	n.log.Warn("this node was removed from the cluster map (down longer than --dead-after, or by an operator): it rejoins as a new member; data of groups it no longer replicates is kept aside",
		"incarnation", nd.Incarnation, "epoch", m.Epoch)
}

// reconcileGroup is the group object for mg in the next state.
func (n *Node) reconcileGroup(old, next *mapState, mg meta.Group) *Group {
	lay := layoutOf(mg, next.byID)
	// Not under another data directory's identity (identity.go).
	want := slices.Contains(mg.Replicas, n.self.ID) && !n.staleIdentity(next.m)
	g := old.groupByID(mg.ID)
	switch {
	case g != nil && g.local == want:
		g.lay.Store(lay)
		return g
	case g != nil && g.local: // taken from this node
		if !n.retire(g, next.m.Epoch) {
			g.lay.Store(lay)
			next.pending = true
			return g
		}
		return newGroup(n, mg.ID, lay, false)
	case want:
		ng := newGroup(n, mg.ID, lay, true)
		if err := ng.open(bootPeers(mg, next.byID, n.self.ID)); err != nil {
			n.log.Error("open group", "group", mg.ID, "err", err)
			next.pending = true
			return newGroup(n, mg.ID, lay, false)
		}
		ng.start()
		ng.log.Info("hosting group", "replicas", mg.Replicas, "epoch", next.m.Epoch)
		return ng
	}
	n.keepAsideStale(mg.ID, next)
	return newGroup(n, mg.ID, lay, false)
}

// keepAsideStale moves aside the data of a group this node does not
// replicate but has a directory for: left from before it was removed (it
// was down longer than --dead-after). A replica it may get later starts
// empty and receives the group from its leader. Only done with the current
// map (metaCurrent, metagroup.go): a stale one may not list a replica this
// node has since become, whose data would then reopen empty, as a voter.
func (n *Node) keepAsideStale(id uint32, next *mapState) {
	dir := n.groupDir(id)
	if _, err := os.Stat(dir); err != nil {
		return
	}
	if !n.metaCurrent(next.m) {
		next.pending = true
		return
	}
	kept, err := moveAside(dir, next.m.Epoch)
	n.log.Warn("this node was taken out of a group while away: its old data is kept (delete it when no longer wanted)",
		"group", id, "epoch", next.m.Epoch, "kept_at", kept, "err", err)
}

// bootPeers is the replica set this node bootstraps group mg with: its
// creation set, if this node is in it and the set never changed.
func bootPeers(mg meta.Group, byID map[string]Peer, self string) []Peer {
	if mg.Changes != 0 || !slices.Contains(mg.Boot, self) {
		return nil
	}
	var out []Peer
	for _, id := range mg.Boot {
		if p, ok := byID[id]; ok {
			out = append(out, p)
		}
	}
	return out
}

// retire stops hosting g (the map no longer lists this node for it) and
// moves its data aside. It returns false, keeping the replica running,
// while this node may still count for the group's quorum: while it leads
// (memberLoop hands the leadership to a listed replica first), while the
// group has no leader it knows, and while that leader still lists this node
// in the group's Raft membership. Stopping earlier could leave a group whose
// configuration still counts this replica without a quorum.
func (n *Node) retire(g *Group, epoch uint64) bool {
	if g.IsLeader() || n.stillMember(g) {
		return false
	}
	g.cancel()
	g.wg.Wait()
	err := g.shutdown()
	g.untracked() // its changes can no longer be followed here (tracking.go)
	if cerr := g.closeStores(); err == nil {
		err = cerr
	}
	dir := n.groupDir(g.id)
	kept, merr := moveAside(dir, epoch)
	g.log.Warn("this node no longer replicates the group: stopped it; its data is kept (delete it when no longer wanted)",
		"epoch", epoch, "kept_at", kept, "shutdown_err", err, "move_err", merr)
	return true
}

// stillMember: g's leader does not confirm that it removed this node from
// the group's membership. The leader is asked of the replicas the map
// lists (a removed replica no longer hears from it).
func (n *Node) stillMember(g *Group) bool {
	leader, ok := g.refreshLeader()
	if !ok || leader.ID == n.self.ID {
		return true
	}
	ctx, cancel := context.WithTimeout(n.ctx, queryTimeout)
	defer cancel()
	v, err := n.peerView(ctx, leader.ID)
	if err != nil {
		return true
	}
	for _, r := range v.Replicas {
		if r.Group == g.id && r.State == raft.Leader.String() {
			return slices.Contains(r.Voters, n.self.ID) || slices.Contains(r.Nonvoters, n.self.ID)
		}
	}
	return true
}

// moveAside renames dir to dir.removed-<epoch>[-k]: a node taken out of a
// group wipes nothing, and a later replica of the same group starts empty.
func moveAside(dir string, epoch uint64) (string, error) {
	for k := 0; ; k++ {
		to := fmt.Sprintf("%s.removed-%d", dir, epoch)
		if k > 0 {
			to = fmt.Sprintf("%s-%d", to, k)
		}
		if _, err := os.Stat(to); err == nil {
			continue
		}
		return to, os.Rename(dir, to)
	}
}

func (s *mapState) groupByID(id uint32) *Group {
	for _, g := range s.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}
