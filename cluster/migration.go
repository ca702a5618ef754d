package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/slotraft/slotraft/cluster/meta"
)

// Slot migration: the map records a migration {slot, from, to} in the meta
// group; the mover on the source group's leader (mover.go) copies the slot's
// keys into the target group through its log and deletes them from the
// source through the source's log; once the source holds no key of the slot
// the mover flips the owner in the map (unless the migration is held for
// CLUSTER SETSLOT … NODE, which releases it).

// ErrMigration is wrapped by the errors of starting or completing a migration.
var ErrMigration = errors.New("slot migration")

// proposeParallel bounds the meta proposals MoveSlots has in flight.
const proposeParallel = 16

// Migration is the map's record of slot's migration, if one is in flight.
func (n *Node) Migration(slot uint16) (meta.Migration, bool) {
	return n.Map().Migration(slot)
}

// StartMigration records the migration of slot from the group owning it to
// group to. hold: the mover empties the slot but leaves the owner flip to
// CompleteMigration (CLUSTER SETSLOT … NODE). Recording the same migration
// again is not an error.
func (n *Node) StartMigration(ctx context.Context, slot uint16, to uint32, hold bool) error {
	m := n.Map()
	owner, ok := m.GroupOf(slot)
	if !ok {
		return fmt.Errorf("%w: slot %d has no owner", ErrMigration, slot)
	}
	if _, ok := m.Group(to); !ok {
		return fmt.Errorf("%w: no slot group %d", ErrMigration, to)
	}
	if owner.ID == to {
		return fmt.Errorf("%w: slot %d already belongs to group %d", ErrMigration, slot, to)
	}
	if err := n.ProposeMeta(ctx, meta.StartMigration{Slot: slot, From: owner.ID, To: to, Hold: hold}); err != nil {
		return fmt.Errorf("%w: slot %d: %w", ErrMigration, slot, err)
	}
	return nil
}

// MoveSlots records migrations of slots to group to, skipping those it
// owns or that already migrate there; it returns how many it recorded.
func (n *Node) MoveSlots(ctx context.Context, to uint32, list []uint16) (int, error) {
	m := n.Map()
	if _, ok := m.Group(to); !ok {
		return 0, fmt.Errorf("%w: no slot group %d", ErrMigration, to)
	}
	var todo []uint16
	for _, slot := range list {
		owner, _ := m.GroupOf(slot)
		if mig, ok := m.Migration(slot); owner.ID == to || (ok && mig.To == to) {
			continue
		}
		todo = append(todo, slot)
	}
	chunks := slices.Collect(slices.Chunk(todo, moveSlotsChunk))
	err := inParallel(len(chunks), func(i int) error { return n.startMany(ctx, chunks[i], to) })
	return len(todo), err
}

// moveSlotsChunk is how many migrations MoveSlots records per meta entry.
const moveSlotsChunk = 256

// startMany records the migrations of slots to group to in one entry, or,
// if that fails (one slot's migration conflicts), one by one.
func (n *Node) startMany(ctx context.Context, list []uint16, to uint32) error {
	m := n.Map()
	var batch meta.StartMigrations
	for _, slot := range list {
		owner, _ := m.GroupOf(slot)
		batch.List = append(batch.List, meta.Migration{Slot: slot, From: owner.ID, To: to})
	}
	if n.ProposeMeta(ctx, batch) == nil {
		return nil
	}
	var errs []error
	for _, slot := range list {
		errs = append(errs, n.StartMigration(ctx, slot, to, false))
	}
	return errors.Join(errs...)
}

// inParallel runs fn(0) … fn(n-1), proposeParallel at a time, and joins
// their errors: for meta proposals that touch different slots (Raft
// batches them into few commits).
func inParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, proposeParallel)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CompleteMigration releases a held migration of slot and waits until the
// mover has emptied the source and the map shows the slot owned by the
// target (at once if no migration is in flight).
func (n *Node) CompleteMigration(ctx context.Context, slot uint16) error {
	for {
		// The meta replica's own map, not the routing state rebuilt from
		// it a moment later: Changed belongs to the former.
		changed := n.meta.fsm.Changed()
		mig, ok := n.meta.fsm.Map().Migration(slot)
		if !ok {
			return nil
		}
		if mig.Hold {
			if err := n.ProposeMeta(ctx, meta.ReleaseMigration{Slot: slot}); err != nil {
				return fmt.Errorf("%w: release slot %d: %w", ErrMigration, slot, err)
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w: slot %d still migrating from group %d to %d: %w", ErrMigration, slot, mig.From, mig.To, ctx.Err())
		}
	}
}

// Rebalance asks the placement controller to spread the slots evenly over
// the slot groups.
func (n *Node) Rebalance(ctx context.Context) error {
	return n.ProposeMeta(ctx, meta.SetRebalance{On: true})
}

// MigrationStatus is the progress of slot migrations (SLOTRAFT MIGRATIONS).
type MigrationStatus struct {
	Pending   int      `json:"pending"`    // migrations recorded, not finished
	Moved     uint64   `json:"moved"`      // migrations finished ever
	KeysMoved uint64   `json:"keys_moved"` // keys moved out of their groups ever
	Rebalance bool     `json:"rebalance"`  // a rebalance is in progress
	Slots     []uint16 `json:"slots"`      // the pending migrations' slots
}

// Migrations reports the progress of slot migrations; keys moved are
// counted by the groups themselves, as their replicas report them.
func (n *Node) Migrations(ctx context.Context) MigrationStatus {
	m := n.Map()
	st := MigrationStatus{Pending: len(m.Migrations), Moved: m.Moved, Rebalance: m.Rebalance, Slots: []uint16{}}
	for _, mig := range m.Migrations {
		st.Slots = append(st.Slots, mig.Slot)
	}
	_, views, _ := n.views(ctx)
	most := map[uint32]uint64{}
	for _, v := range views {
		for _, r := range v.Replicas {
			most[r.Group] = max(most[r.Group], r.MigratedKeys)
		}
	}
	for _, k := range most {
		st.KeysMoved += k
	}
	return st
}
