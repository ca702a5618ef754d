package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/cluster/placement"
)

// The placement controller runs on the meta group's leader: it creates the
// map after a bootstrap, adds nodes gossip finds, removes nodes dead longer
// than DeadAfter, and keeps every group at its replication factor with
// replicas and preferred leaders spread (cluster/placement plans, this
// file observes and proposes). It also keeps the meta group's own Raft
// membership following the map: up to metaVoters voters, the rest
// non-voters.

// controlInterval is how often the meta leader's controller runs.
const controlInterval = 500 * time.Millisecond

// drainedGrace is how long a drained, removed node may still be seen in
// gossip (its process leaving) without being added back.
const drainedGrace = 30 * time.Second

// maxMigrations bounds the slot migrations the controller keeps recorded
// at once: enough to keep every source group's mover busy (mover.go).
const maxMigrations = 1024

// settleMaxLag is how far behind its leader a replica may be for its group
// to count as settled (ready for the next replica change).
const settleMaxLag = 1024

type controller struct {
	n    *Node
	down map[string]time.Time // since when an active node is seen not alive
	// drained: since when this controller sees a drained, removed node
	// still alive in gossip; while its process leaves, it is no joiner.
	drained map[string]time.Time
}

func (n *Node) controlLoop() {
	c := &controller{n: n, down: map[string]time.Time{}, drained: map[string]time.Time{}}
	tick := time.NewTicker(controlInterval)
	defer tick.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		}
		if !n.meta.isLeader() {
			clear(c.down) // a new leader observes for itself
			continue
		}
		if err := c.step(); err != nil {
			n.log.Info("placement controller", "err", err)
		}
	}
}

// step observes the cluster once and proposes what the planner says.
func (c *controller) step() error {
	n := c.n
	m := n.meta.fsm.Map()
	if !m.Initialized() {
		if init := n.meta.init.Load(); init != nil {
			n.log.Info("creating the cluster map", "nodes", len(init.Nodes), "groups", len(init.Groups))
			return n.meta.propose(init)
		}
		return nil
	}
	if n.leaving.Load() {
		return nil
	}
	in := c.observe(m)
	var starts []meta.Command
	for _, cmd := range placement.Plan(in) {
		if _, ok := cmd.(meta.StartMigration); ok {
			starts = append(starts, cmd)
			continue
		}
		err := n.meta.propose(cmd)
		n.log.Info("placement", "change", fmt.Sprintf("%T%+v", cmd, cmd), "err", err)
		if err != nil {
			return err
		}
	}
	if err := c.startMigrations(starts); err != nil {
		return err
	}
	return c.reconcileMetaMembers(n.meta.fsm.Map())
}

// startMigrations records the planned slot migrations in one entry: every
// node rebuilds its routing state once, not once per slot.
func (c *controller) startMigrations(cmds []meta.Command) error {
	if len(cmds) == 0 {
		return nil
	}
	var batch meta.StartMigrations
	for _, cmd := range cmds {
		batch.List = append(batch.List, meta.Migration(cmd.(meta.StartMigration)))
	}
	err := c.n.meta.propose(batch)
	c.n.log.Info("placement: slot migrations recorded", "count", len(batch.List), "err", err)
	return err
}

// observe gathers the planner's input: gossip liveness, how long nodes
// have been down, and which groups are settled.
func (c *controller) observe(m *meta.Map) placement.Input {
	n := c.n
	in := placement.Input{
		Map: m, Replicas: n.cfg.Replicas, DeadAfter: n.cfg.DeadAfter,
		Alive: map[string]bool{}, DownFor: map[string]time.Duration{},
		Groups: targetGroups(m, n.cfg.GroupsPerNode), MaxMigrations: maxMigrations,
	}
	if m.Manual {
		in.Groups = 0 // slots placed by hand: no group is added for a joiner (meet.go)
	}
	now := time.Now()
	in.UIDs = n.gossip.uids()
	for _, p := range n.gossip.alivePeers() {
		in.Alive[p.ID] = true
		if !m.IsActive(p.ID) && !c.leaving(m, p.ID, now) {
			in.Joiners = append(in.Joiners, meta.Node{ID: p.ID, Client: p.ClientAddr, Bus: p.BusAddr, UID: in.UIDs[p.ID]})
		}
	}
	in.Alive[n.self.ID] = true
	for _, nd := range m.ActiveNodes() {
		if in.Alive[nd.ID] {
			delete(c.down, nd.ID)
			continue
		}
		if c.down[nd.ID].IsZero() {
			c.down[nd.ID] = now
		}
		in.DownFor[nd.ID] = now.Sub(c.down[nd.ID])
	}
	for id := range in.DownFor {
		if g, ok := quorumNeeds(m, id, in.Alive); ok {
			// Removing it would take the group's data from the nodes that
			// could restore its quorum when they come back.
			n.log.Debug("not removing a down node: a group lacks a live quorum without it", "down", id, "group", g)
			delete(in.DownFor, id)
		}
	}
	in.Settled = c.settled(m)
	return in
}

// targetGroups is how many slot groups the cluster should have: perNode
// for every active node that is not draining, never fewer than it has.
func targetGroups(m *meta.Map, perNode int) int {
	if perNode <= 0 {
		return 0
	}
	nodes := 0
	for _, nd := range m.ActiveNodes() {
		if !m.IsDraining(nd.ID) {
			nodes++
		}
	}
	return max(perNode*nodes, len(m.Groups))
}

// leaving: id was drained and removed, and was first seen alive since
// then less than drainedGrace ago (its process is leaving). Once the
// grace is over it may join again as a new member.
func (c *controller) leaving(m *meta.Map, id string, now time.Time) bool {
	if nd, ok := m.Node(id); !ok || !nd.Drained {
		return false
	}
	if _, seen := c.drained[id]; !seen {
		c.drained[id] = now
	}
	return now.Sub(c.drained[id]) < drainedGrace
}

// quorumNeeds finds a group that lists node and whose live replicas are
// not a majority of its replica set: its leader could not change the
// membership, and the node's copy is needed to restore the quorum.
func quorumNeeds(m *meta.Map, node string, alive map[string]bool) (uint32, bool) {
	for _, g := range m.Groups {
		if !slices.Contains(g.Replicas, node) {
			continue
		}
		live := 0
		for _, r := range g.Replicas {
			if alive[r] {
				live++
			}
		}
		if live <= len(g.Replicas)/2 {
			return g.ID, true
		}
	}
	return 0, false
}

// settled says, per group, whether its leader's Raft membership is the
// map's replica set, all voting, and every replica has caught up.
func (c *controller) settled(m *meta.Map) map[uint32]bool {
	ctx, cancel := context.WithTimeout(c.n.ctx, StatusTimeout)
	defer cancel()
	_, all, errs := c.n.views(ctx)
	views := map[string]NodeView{}
	for i, v := range all {
		if errs[i] == nil {
			views[v.ID] = v
		}
	}
	out := map[uint32]bool{}
	for _, g := range m.Groups {
		out[g.ID] = groupSettled(g, views)
	}
	return out
}

func groupSettled(g meta.Group, views map[string]NodeView) bool {
	reps, leader := replicaViews(g.ID, g.Replicas, views)
	if leader.State == "" || len(leader.Nonvoters) > 0 || len(leader.Voters) != len(g.Replicas) {
		return false
	}
	for _, id := range g.Replicas {
		r, ok := reps[id]
		if !ok || !slices.Contains(leader.Voters, id) || r.Term != leader.Term || r.AppliedIndex+settleMaxLag < leader.LastIndex {
			return false
		}
	}
	return true
}

// reconcileMetaMembers makes one change of the meta group's Raft
// membership toward the map: removed nodes out, active ones in as
// non-voters, alive non-voters promoted while fewer than metaVoters vote.
func (c *controller) reconcileMetaMembers(m *meta.Map) error {
	r := c.n.meta.raft
	cf := r.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	servers := cf.Configuration().Servers
	voters := 0
	for _, s := range servers {
		if !m.IsActive(string(s.ID)) {
			c.n.log.Info("meta group: removing a node the map removed", "node", s.ID)
			return r.RemoveServer(s.ID, 0, 0).Error()
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	for _, nd := range m.ActiveNodes() {
		if !slices.ContainsFunc(servers, func(s raft.Server) bool { return s.ID == raft.ServerID(nd.ID) }) {
			c.n.log.Info("meta group: adding a node as non-voter", "node", nd.ID)
			return r.AddNonvoter(raft.ServerID(nd.ID), raft.ServerAddress(nd.Bus), 0, 0).Error()
		}
	}
	if voters >= metaVoters {
		return nil
	}
	states := c.n.GossipStates()
	for _, s := range servers {
		if s.Suffrage != raft.Voter && states[string(s.ID)] == GossipAlive {
			c.n.log.Info("meta group: promoting a node to voter", "node", s.ID)
			return r.AddVoter(s.ID, s.Address, 0, 0).Error()
		}
	}
	return nil
}
