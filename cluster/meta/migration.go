package meta

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/slotraft/slotraft/slots"
)

// ErrMigration is wrapped by the migration commands' conflicts: the source
// does not own the slot, or the slot has another migration (or none where
// one is needed).
var ErrMigration = errors.New("meta: slot migration conflict")

// Migration is one slot moving from group From to group To.
type Migration struct {
	Slot uint16 `json:"slot"`
	From uint32 `json:"from"`
	To   uint32 `json:"to"`
	// Hold: the mover empties the slot but does not finish the migration
	// until ReleaseMigration (CLUSTER SETSLOT … NODE, as Redis tooling
	// expects the slot to stay migrating until then).
	Hold bool `json:"hold,omitempty"`
}

// sameRoute: a and b move the same slot between the same groups.
func sameRoute(a, b Migration) bool { return a.Slot == b.Slot && a.From == b.From && a.To == b.To }

// Migration is the migration of slot, if one is in flight.
func (m *Map) Migration(slot uint16) (Migration, bool) {
	if m == nil {
		return Migration{}, false
	}
	i, ok := m.migrationIndex(slot)
	if !ok {
		return Migration{}, false
	}
	return m.Migrations[i], true
}

// MigrationsFrom are the migrations out of group gid, in slot order.
func (m *Map) MigrationsFrom(gid uint32) []Migration {
	if m == nil {
		return nil
	}
	var out []Migration
	for _, mg := range m.Migrations {
		if mg.From == gid {
			out = append(out, mg)
		}
	}
	return out
}

// SlotCount is the number of slots group gid owns (migrating ones
// included: they are the source's until finished).
func (m *Map) SlotCount(gid uint32) int {
	g, _ := m.Group(gid)
	n := 0
	for _, r := range g.Ranges {
		n += r.Len()
	}
	return n
}

// migrationIndex finds slot's migration, or where it would be inserted.
func (m *Map) migrationIndex(slot uint16) (int, bool) {
	return slices.BinarySearchFunc(m.Migrations, slot, func(mg Migration, s uint16) int { return cmp.Compare(mg.Slot, s) })
}

// StartMigration records that Slot starts moving from group From, which
// owns it, to group To. Recording the same migration again changes nothing,
// so a retried proposal is harmless.
type StartMigration Migration

func (c StartMigration) apply(m *Map) error {
	mg := Migration(c)
	from, _, err := migrationGroups(m, mg)
	if err != nil {
		return err
	}
	i, found := m.migrationIndex(mg.Slot)
	switch {
	case found && sameRoute(m.Migrations[i], mg):
		if !mg.Hold || m.Migrations[i].Hold {
			return errUnchanged
		}
		m.Migrations[i].Hold = true
		return nil
	case found:
		cur := m.Migrations[i]
		return fmt.Errorf("%w: slot %d already migrates from group %d to %d", ErrMigration, mg.Slot, cur.From, cur.To)
	case !owns(from, mg.Slot):
		return fmt.Errorf("%w: group %d does not own slot %d", ErrMigration, mg.From, mg.Slot)
	}
	m.Migrations = slices.Insert(m.Migrations, i, mg)
	return nil
}

// FinishMigration ends the recorded migration of Slot (which must be this
// one): the slot moves from From's ranges to To's, atomically for every
// node following the map. Once finished, the same command changes nothing
// (To owns the slot, no migration is left), so a retry is harmless.
type FinishMigration Migration

func (c FinishMigration) apply(m *Map) error {
	mg := Migration(c)
	from, to, err := migrationGroups(m, mg)
	if err != nil {
		return err
	}
	i, found := m.migrationIndex(mg.Slot)
	switch {
	case !found && owns(to, mg.Slot):
		return errUnchanged
	case !found:
		return fmt.Errorf("%w: slot %d is not migrating", ErrMigration, mg.Slot)
	case !sameRoute(m.Migrations[i], mg):
		cur := m.Migrations[i]
		return fmt.Errorf("%w: slot %d migrates from group %d to %d, not from %d to %d",
			ErrMigration, mg.Slot, cur.From, cur.To, mg.From, mg.To)
	case m.Migrations[i].Hold:
		return fmt.Errorf("%w: slot %d's migration is held until released", ErrMigration, mg.Slot)
	case !owns(from, mg.Slot):
		// StartMigration checked it and only this command moves slots:
		// a map where it fails is corrupt, and must not get a slot owned
		// twice.
		return fmt.Errorf("%w: group %d does not own slot %d", ErrMigration, mg.From, mg.Slot)
	}
	m.Migrations = slices.Delete(m.Migrations, i, i+1)
	if len(m.Migrations) == 0 {
		m.Migrations = nil // an idle map equals one that never migrated, as after a snapshot
	}
	from.Ranges = slots.WithoutSlot(from.Ranges, mg.Slot)
	to.Ranges = slots.WithSlot(to.Ranges, mg.Slot)
	m.Moved++
	return nil
}

// StartMigrations is StartMigration for many slots in one entry (the
// controller's rebalance): all of them or, on the first error, none.
type StartMigrations struct {
	List []Migration `json:"list"`
}

func (c StartMigrations) apply(m *Map) error {
	return applyEach(m, c.List, func(mg Migration) error { return StartMigration(mg).apply(m) })
}

// FinishMigrations is FinishMigration for many slots in one entry (the
// movers finishing slots at the same time): all of them or, on the first
// error, none. One map change instead of many: every node rebuilds its
// routing state once per change.
type FinishMigrations struct {
	List []Migration `json:"list"`
}

func (c FinishMigrations) apply(m *Map) error {
	return applyEach(m, c.List, func(mg Migration) error { return FinishMigration(mg).apply(m) })
}

// applyEach applies fn to each migration of list; the ones that change
// nothing are fine, any other error stops it (Apply then discards m).
func applyEach(m *Map, list []Migration, fn func(Migration) error) error {
	changed := false
	for _, mg := range list {
		switch err := fn(mg); {
		case errors.Is(err, errUnchanged):
		case err != nil:
			return err
		default:
			changed = true
		}
	}
	if !changed {
		return errUnchanged
	}
	return nil
}

// ReleaseMigration lets the mover finish a held migration of Slot. Without
// a held migration it changes nothing (a retry, or the slot already moved).
type ReleaseMigration struct {
	Slot uint16 `json:"slot"`
}

func (c ReleaseMigration) apply(m *Map) error {
	if !m.Initialized() {
		return ErrNotInitialized
	}
	i, found := m.migrationIndex(c.Slot)
	if !found || !m.Migrations[i].Hold {
		return errUnchanged
	}
	m.Migrations[i].Hold = false
	return nil
}

// migrationGroups checks mg's fields and finds its two groups in m.
func migrationGroups(m *Map, mg Migration) (from, to *Group, err error) {
	if !m.Initialized() {
		return nil, nil, ErrNotInitialized
	}
	if mg.Slot >= slots.Count {
		return nil, nil, fmt.Errorf("%w: slot %d out of range", ErrInvalid, mg.Slot)
	}
	if mg.From == mg.To {
		return nil, nil, fmt.Errorf("%w: slot %d migrates from group %d to itself", ErrInvalid, mg.Slot, mg.From)
	}
	if from = m.group(mg.From); from == nil {
		return nil, nil, fmt.Errorf("%w: %d", ErrUnknownGroup, mg.From)
	}
	if to = m.group(mg.To); to == nil {
		return nil, nil, fmt.Errorf("%w: %d", ErrUnknownGroup, mg.To)
	}
	return from, to, nil
}

// group points at group id in m, nil if none.
func (m *Map) group(id uint32) *Group {
	i := slices.IndexFunc(m.Groups, func(g Group) bool { return g.ID == id })
	if i < 0 {
		return nil
	}
	return &m.Groups[i]
}

func owns(g *Group, slot uint16) bool {
	return slices.ContainsFunc(g.Ranges, func(r slots.Range) bool { return r.Contains(slot) })
}
