package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// CLUSTER SETSLOT <slot> IMPORTING <node-id> | MIGRATING <node-id> |
// NODE <node-id> | STABLE, mapped onto slot migrations between slot groups
// so that redis-cli --cluster reshard (IMPORTING on the target, MIGRATING
// on the source, MIGRATE until the slot is empty, NODE everywhere) moves
// slots with their keys:
//
//   - IMPORTING and MIGRATING record a held migration of the slot from its
//     owner group to a group led by the importing node; the mover empties
//     the slot but leaves the owner flip to NODE;
//   - NODE completes the recorded migration (waits until the map shows the
//     slot owned by the target); without one it only confirms the owner;
//   - STABLE cannot cancel a migration: keys may already have moved.
//
// A node "owns" a slot when it leads the slot's owner group, as CLUSTER
// NODES shows it; a node is a master when it leads a group.

var (
	errSetSlotNotMaster = resp.NewError("ERR Please use SETSLOT only with masters.")
	errSetSlotSlot      = resp.NewError("ERR Invalid or out of range slot")
	errSetSlotAction    = resp.NewError("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
	errTargetNotMaster  = resp.NewError("ERR Target node is not a master")
)

// setSlotAction is CLUSTER SETSLOT's subcommand.
type setSlotAction uint8

const (
	slotImporting setSlotAction = iota + 1
	slotMigrating
	slotNode
	slotStable
)

// setSlotCmd is a parsed CLUSTER SETSLOT.
type setSlotCmd struct {
	slot   uint16
	action setSlotAction
	node   string // the node id argument (Redis's 40-hex form)
}

// parseSetSlot parses CLUSTER SETSLOT's arguments (args[0] is CLUSTER) in
// Redis's order: the slot, then the action with its argument count.
func parseSetSlot(args [][]byte) (setSlotCmd, error) {
	n, err := resp.ParseInt(args[2])
	if err != nil || n < 0 || n >= slots.Count {
		return setSlotCmd{}, errSetSlotSlot
	}
	cmd := setSlotCmd{slot: uint16(n)}
	withNode := len(args) == 5
	switch {
	case withNode && resp.EqualFold(args[3], "importing"):
		cmd.action = slotImporting
	case withNode && resp.EqualFold(args[3], "migrating"):
		cmd.action = slotMigrating
	case withNode && resp.EqualFold(args[3], "node"):
		cmd.action = slotNode
	case len(args) == 4 && resp.EqualFold(args[3], "stable"):
		cmd.action = slotStable
	default:
		return setSlotCmd{}, errSetSlotAction
	}
	if withNode {
		cmd.node = string(args[4])
	}
	return cmd, nil
}

// slotState is what CLUSTER SETSLOT decides from, read once per call.
type slotState struct {
	self       string            // this node's id
	selfMaster bool              // CLUSTER NODES shows this node as a master
	nodes      map[string]string // Redis node id -> node id, for the nodes CLUSTER NODES lists
	groups     []groupHosts      // by id
	owner      uint32            // the slot's owner group; 0 while none
	mig        meta.Migration    // the slot's migration, when migrating
	migrating  bool
}

// groupHosts is one slot group as CLUSTER NODES renders it.
type groupHosts struct {
	id       uint32
	leader   string   // node id; "" while unknown
	replicas []string // node ids
}

// slotStateOf reads slot's state from a topology and the map.
func slotStateOf(t *topology, m *meta.Map, slot uint16) slotState {
	master, _, _ := t.nodeRole(t.self.ID)
	st := slotState{self: t.self.ID, selfMaster: master, nodes: map[string]string{}}
	for _, p := range t.peers {
		st.nodes[NodeID(p.ID)] = p.ID
	}
	for _, gv := range t.groups {
		leader := gv.leader
		if leader == "" && t.manual {
			leader = gv.preferred // as CLUSTER NODES shows it (topology.leads)
		}
		st.groups = append(st.groups, groupHosts{id: gv.g.ID(), leader: leader, replicas: gv.replicas})
	}
	slices.SortFunc(st.groups, func(a, b groupHosts) int { return int(a.id) - int(b.id) })
	if g, ok := m.GroupOf(slot); ok {
		st.owner = g.ID
	}
	st.mig, st.migrating = m.Migration(slot)
	return st
}

// leads reports whether node leads group id.
func (st slotState) leads(node string, id uint32) bool {
	i := slices.IndexFunc(st.groups, func(g groupHosts) bool { return g.id == id })
	return i >= 0 && node != "" && st.groups[i].leader == node
}

// hosts reports whether node replicates group id (leading it or not).
func (st slotState) hosts(node string, id uint32) bool {
	i := slices.IndexFunc(st.groups, func(g groupHosts) bool { return g.id == id })
	return i >= 0 && slices.Contains(st.groups[i].replicas, node)
}

// importTo is the group a migration of the slot to node goes to: the
// recorded migration's target when node leads it, else the lowest-id group
// node leads other than the owner; ok is false when node leads none.
func (st slotState) importTo(node string) (uint32, bool) {
	if st.migrating && st.leads(node, st.mig.To) {
		return st.mig.To, true
	}
	for _, g := range st.groups {
		if g.id != st.owner && g.leader == node {
			return g.id, true
		}
	}
	return 0, false
}

// setSlotPlan is what CLUSTER SETSLOT does once decided; the zero plan
// only answers OK.
type setSlotPlan struct {
	start    bool   // record the migration of the slot to group to, held
	to       uint32 // with start and complete: the target group
	complete bool   // complete the slot's migration (to group to)
}

// decideSetSlot is CLUSTER SETSLOT's decision, with Redis's checks and
// error texts where Redis has them.
func decideSetSlot(cmd setSlotCmd, st slotState) (setSlotPlan, error) {
	switch cmd.action {
	case slotImporting:
		return decideImporting(cmd, st)
	case slotMigrating:
		return decideMigrating(cmd, st)
	case slotNode:
		return decideNode(cmd, st)
	}
	return setSlotPlan{}, decideStable(cmd, st)
}

// decideImporting: this node imports the slot into a group it leads.
func decideImporting(cmd setSlotCmd, st slotState) (setSlotPlan, error) {
	if st.leads(st.self, st.owner) {
		return setSlotPlan{}, resp.Errorf("ERR I'm already the owner of hash slot %d", cmd.slot)
	}
	if _, ok := st.nodes[cmd.node]; !ok {
		return setSlotPlan{}, resp.Errorf("ERR I don't know about node %s", cmd.node)
	}
	to, ok := st.importTo(st.self)
	if !ok {
		return setSlotPlan{}, resp.Errorf("ERR I lead no slot group to import hash slot %d into", cmd.slot)
	}
	return startPlan(st, to), nil
}

// decideMigrating: this node, owner of the slot, sends it to a group the
// given node leads.
func decideMigrating(cmd setSlotCmd, st slotState) (setSlotPlan, error) {
	if !st.leads(st.self, st.owner) {
		return setSlotPlan{}, resp.Errorf("ERR I'm not the owner of hash slot %d", cmd.slot)
	}
	dst, ok := st.nodes[cmd.node]
	if !ok {
		return setSlotPlan{}, resp.Errorf("ERR I don't know about node %s", cmd.node)
	}
	to, ok := st.importTo(dst)
	switch {
	case ok:
		return startPlan(st, to), nil
	case st.leads(dst, st.owner):
		return setSlotPlan{}, resp.Errorf("ERR Target node is already the owner of hash slot %d", cmd.slot)
	}
	return setSlotPlan{}, errTargetNotMaster
}

// startPlan records the migration to group to, unless it is recorded
// already (held or not: either way it goes where it is asked to).
func startPlan(st slotState, to uint32) setSlotPlan {
	if st.migrating && st.mig.To == to {
		return setSlotPlan{}
	}
	return setSlotPlan{start: true, to: to}
}

// decideNode: the slot is to be served by the given node. A recorded
// migration completes when the node replicates its target; without one the
// node must replicate the owner: slotraft never reassigns a slot without
// moving its keys.
func decideNode(cmd setSlotCmd, st slotState) (setSlotPlan, error) {
	id, ok := st.nodes[cmd.node]
	if !ok {
		return setSlotPlan{}, resp.Errorf("ERR Unknown node %s", cmd.node)
	}
	switch {
	case st.migrating && st.hosts(id, st.mig.To):
		return setSlotPlan{complete: true, to: st.mig.To}, nil
	case st.migrating:
		return setSlotPlan{}, resp.Errorf("ERR hash slot %d is migrating from slot group %d to %d, which node %s does not replicate; a migration cannot be redirected or cancelled", cmd.slot, st.mig.From, st.mig.To, cmd.node)
	case st.owner != 0 && st.hosts(id, st.owner):
		return setSlotPlan{}, nil
	}
	return setSlotPlan{}, resp.Errorf("ERR hash slot %d is served by slot group %d, which node %s does not replicate; slotraft moves a slot with its keys: use CLUSTER SETSLOT %d MIGRATING/IMPORTING (then NODE) or slotraft admin move-slots", cmd.slot, st.owner, cmd.node, cmd.slot)
}

// decideStable: without a migration there is nothing to clear; a
// migration cannot be cancelled once keys may have moved.
func decideStable(cmd setSlotCmd, st slotState) error {
	if !st.migrating {
		return nil
	}
	how := "it completes on its own"
	if st.mig.Hold {
		how = fmt.Sprintf("complete it with CLUSTER SETSLOT %d NODE and the target's node id", cmd.slot)
	}
	return resp.Errorf("ERR hash slot %d is migrating from slot group %d to %d and cannot be cancelled safely once keys may have moved; %s", cmd.slot, st.mig.From, st.mig.To, how)
}

func cmdClusterSetSlot(s *Server, _ *client, args [][]byte) resp.Value {
	t := s.topology()
	if master, _, _ := t.nodeRole(t.self.ID); !master {
		return resp.Err(errSetSlotNotMaster)
	}
	cmd, err := parseSetSlot(args)
	if err != nil {
		return resp.Err(err)
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	if cmd.action == slotImporting && s.n.Map().Manual {
		if err := s.importGroup(ctx); err != nil {
			return resp.Err(err)
		}
		t = s.topology()
	}
	plan, err := decideSetSlot(cmd, slotStateOf(t, s.n.Map(), cmd.slot))
	if err != nil {
		return resp.Err(err)
	}
	switch {
	case plan.start:
		if err = s.n.StartMigration(ctx, cmd.slot, plan.to, true); err == nil {
			err = s.awaitMigration(ctx, cmd.slot, plan.to, false)
		}
	case plan.complete:
		if err = s.n.CompleteMigration(ctx, cmd.slot); err == nil {
			err = s.awaitMigration(ctx, cmd.slot, plan.to, true)
		}
	}
	if err != nil {
		return resp.Err(err)
	}
	return resp.OK()
}

// importGroup makes sure that this node, in a cluster placed by hand,
// leads a slot group to import slots into: a master without slots (a node
// added with CLUSTER MEET) gets a new group of its own, empty, as Redis
// Cluster's empty master receives slots (redis-cli --cluster rebalance
// --cluster-use-empty-masters, reshard). It waits until it leads it.
func (s *Server) importGroup(ctx context.Context) error {
	if leads, _ := s.topology().leads(s.n.Self().ID); leads {
		return nil
	}
	if err := s.n.ClaimSlots(ctx, nil); err != nil {
		return fmt.Errorf("ERR creating a slot group to import into: %w", err)
	}
	tick := time.NewTicker(migratePollMin)
	defer tick.Stop()
	for {
		t := s.topology()
		for _, gv := range t.groups {
			if gv.leader == t.self.ID {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ERR waiting to lead the new slot group: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// awaitMigration waits until this node's map shows slot migrating to group
// to (or owned by it), or with done, owned by it and no longer migrating:
// the meta group commits a change before every node's routing map shows it,
// and the next commands of the reshard (MIGRATE, ASKING, SETSLOT STABLE) are
// decided by this node's map.
func (s *Server) awaitMigration(ctx context.Context, slot uint16, to uint32, done bool) error {
	tick := time.NewTicker(migratePollMin)
	defer tick.Stop()
	for {
		m := s.n.Map()
		mig, migrating := m.Migration(slot)
		owner, _ := m.GroupOf(slot)
		if owner.ID == to && !(done && migrating) || !done && migrating && mig.To == to {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: slot %d: the migration to group %d is recorded but not yet in this node's map: %w", cluster.ErrMigration, slot, to, ctx.Err())
		}
	}
}

// migrationMarks is Redis's open-slot markers of CLUSTER NODES, rendered
// on the line of myself only: " [slot->-<target>]" for a slot this node's
// group sends, " [slot-<-<source>]" for one it receives, named by the other
// group's leader (left out while unknown). A slot shows one marker, the
// outgoing one first, as in Redis.
func migrationMarks(self string, leaders map[uint32]string, migs []meta.Migration) string {
	var b strings.Builder
	for _, m := range migs {
		from, to := leaders[m.From], leaders[m.To]
		switch {
		case from == self && to != "":
			fmt.Fprintf(&b, " [%d->-%s]", m.Slot, NodeID(to))
		case to == self && from != "":
			fmt.Fprintf(&b, " [%d-<-%s]", m.Slot, NodeID(from))
		}
	}
	return b.String()
}
