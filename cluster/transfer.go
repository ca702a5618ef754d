package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
)

// Leadership transfers (hand-off on leave, spreading to the preferred
// replica) drain the proposer first. hashicorp/raft answers ErrLeadershipLost
// to every entry still in flight when the old leader steps down, although the
// new leader, which caught up before the transfer, will commit them: clients
// would see "outcome unknown" for writes that are in fact applied. So new
// proposals are refused (ErrNotLeader: never proposed, a safe redirect) and
// the transfer waits until every handed entry has been answered.

// transferDrainWait bounds the wait for in-flight entries; a transfer after
// it may still turn a slow entry's outcome unknown, never unsafe.
const transferDrainWait = 2 * time.Second

// transferLeadership hands g's leadership to `to`, or to the most
// up-to-date follower when to is nil.
func (g *Group) transferLeadership(to *Peer) error {
	g.applyMu.Lock()
	g.transferring = true
	g.applyMu.Unlock()
	defer func() {
		g.applyMu.Lock()
		g.transferring = false
		g.applyMu.Unlock()
	}()
	deadline := time.Now().Add(transferDrainWait)
	for g.inflightN.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if to == nil {
		return g.raft.LeadershipTransfer().Error()
	}
	return g.raft.LeadershipTransferToServer(raft.ServerID(to.ID), raft.ServerAddress(to.BusAddr)).Error()
}

// PreferredLeader is the id of the replica leader spreading moves g's
// leadership to: the operator's choice, else the static placement's.
func (g *Group) PreferredLeader() string { return g.preferred().ID }

// preferred is the replica g's leadership should be on.
func (g *Group) preferred() Peer {
	reps := g.layout().replicas
	if len(reps) == 0 {
		return Peer{}
	}
	if !g.local {
		return reps[0] // the setting lives in the group's state
	}
	if id := g.fsm.State().Setting(fsm.SettingPreferredLeader); id != "" {
		for _, p := range reps {
			if p.ID == id {
				return p
			}
		}
	}
	return reps[0]
}

// TransferWait bounds how long SLOTRAFT TRANSFER-LEADER waits for the
// leadership to arrive at the chosen replica.
const TransferWait = 10 * time.Second

// ErrTransfer wraps the errors of TransferLeader.
var ErrTransfer = errors.New("transfer leader")

// TransferLeader records node `to` as group gid's preferred leader (through
// the group's log, so it holds across failovers and restarts) and waits
// until `to` leads the group.
func (n *Node) TransferLeader(ctx context.Context, gid uint32, to string) error {
	g, ok := n.Group(gid)
	if !ok {
		return fmt.Errorf("%w: no group %d", ErrTransfer, gid)
	}
	if !slices.ContainsFunc(g.layout().replicas, func(p Peer) bool { return p.ID == to }) {
		return fmt.Errorf("%w: %s is not a replica of group %d", ErrTransfer, to, gid)
	}
	if err := n.setGroupSetting(ctx, g, fsm.SettingPreferredLeader, to); err != nil {
		return fmt.Errorf("%w: group %d: %w", ErrTransfer, gid, err)
	}
	deadline := time.Now().Add(TransferWait)
	for {
		if p, ok := n.Leader(g); ok && p.ID == to {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s is group %d's preferred leader now, but did not take the leadership within %v (is it healthy?)",
				ErrTransfer, to, gid, TransferWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrTransfer, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// setGroupSetting proposes a settings entry on g's leader, here or, over
// the bus, on the node that leads it.
func (n *Node) setGroupSetting(ctx context.Context, g *Group, key, value string) error {
	return n.proposeTo(ctx, g.id, fsm.SettingsEntry(key, value))
}
