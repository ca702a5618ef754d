package meta

import (
	"reflect"
	"testing"

	"github.com/slotraft/slotraft/slots"
)

// migrating is the fixture with two migrations recorded: slot 8191 from
// group 1 to 3 and slot 16383 from group 2 to 1.
func migrating(tb testing.TB) *Map {
	tb.Helper()
	return applyAll(tb, fixture(tb),
		StartMigration{Slot: 16383, From: 2, To: 1},
		StartMigration{Slot: 8191, From: 1, To: 3})
}

// split3 has three groups owning slots.Split(3) and an empty group 4.
func split3(tb testing.TB) *Map {
	tb.Helper()
	init := Init{Nodes: []Node{node("n1"), node("n2")}}
	for i, r := range slots.Split(3) {
		init.Groups = append(init.Groups, Group{ID: uint32(i + 1), Ranges: []slots.Range{r}, Replicas: []string{"n1", "n2"}})
	}
	init.Groups = append(init.Groups, Group{ID: 4, Replicas: []string{"n2", "n1"}})
	return applyAll(tb, nil, init)
}

// moved is m with slot moved from one group to another, as a start and
// finish do.
func moved(tb testing.TB, m *Map, slot uint16, from, to uint32) *Map {
	tb.Helper()
	return applyAll(tb, m, StartMigration{Slot: slot, From: from, To: to}, FinishMigration{Slot: slot, From: from, To: to})
}

func rs(pairs ...uint16) []slots.Range {
	var out []slots.Range
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, slots.Range{Start: pairs[i], End: pairs[i+1]})
	}
	return out
}

func TestApplyHeldMigration(t *testing.T) {
	held := applyAll(t, migrating(t), StartMigration{Slot: 8191, From: 1, To: 3, Hold: true})
	runApply(t, []applyCase{
		{name: "held again", start: held, cmd: StartMigration{Slot: 8191, From: 1, To: 3, Hold: true}},
		{name: "unheld start keeps the hold", start: held, cmd: StartMigration{Slot: 8191, From: 1, To: 3}},
		{name: "finish refused while held", start: held, cmd: FinishMigration{Slot: 8191, From: 1, To: 3}, err: ErrMigration},
		{name: "release", start: held, cmd: ReleaseMigration{Slot: 8191},
			want: func(m *Map) { m.Migrations[0].Hold = false }},
		{name: "release of an unheld migration", start: migrating(t), cmd: ReleaseMigration{Slot: 8191}},
		{name: "release without a migration", cmd: ReleaseMigration{Slot: 5}},
		{name: "release before init", start: &Map{}, cmd: ReleaseMigration{Slot: 5}, err: ErrNotInitialized},
	})
	done := applyAll(t, held, ReleaseMigration{Slot: 8191}, FinishMigration{Slot: 8191, From: 1, To: 3})
	if _, ok := done.Migration(8191); ok || !owns(done.group(3), 8191) {
		t.Fatalf("released and finished: migrations %v, group 3 ranges %v", done.Migrations, done.group(3).Ranges)
	}
}

func TestApplyStartMigration(t *testing.T) {
	mig := migrating(t)
	runApply(t, []applyCase{
		{name: "start", cmd: StartMigration{Slot: 8191, From: 1, To: 3},
			want: func(m *Map) { m.Migrations = []Migration{{Slot: 8191, From: 1, To: 3}} }},
		{name: "start to a group owning slots", cmd: StartMigration{Slot: 0, From: 1, To: 2},
			want: func(m *Map) { m.Migrations = []Migration{{Slot: 0, From: 1, To: 2}} }},
		{name: "start kept in slot order", start: mig, cmd: &StartMigration{Slot: 9000, From: 2, To: 3},
			want: func(m *Map) {
				m.Migrations = []Migration{{Slot: 8191, From: 1, To: 3}, {Slot: 9000, From: 2, To: 3}, {Slot: 16383, From: 2, To: 1}}
			}},
		{name: "start first in order", start: mig, cmd: StartMigration{Slot: 0, From: 1, To: 2},
			want: func(m *Map) {
				m.Migrations = append([]Migration{{Slot: 0, From: 1, To: 2}}, m.Migrations...)
			}},
		{name: "same migration again", start: mig, cmd: StartMigration{Slot: 8191, From: 1, To: 3}},
		{name: "same migration, now held", start: mig, cmd: StartMigration{Slot: 8191, From: 1, To: 3, Hold: true},
			want: func(m *Map) { m.Migrations[0].Hold = true }},
		{name: "other target for a migrating slot", start: mig, cmd: StartMigration{Slot: 8191, From: 1, To: 2}, err: ErrMigration},
		{name: "migrating slot moved back", start: mig, cmd: StartMigration{Slot: 8191, From: 3, To: 1}, err: ErrMigration},
		{name: "source does not own the slot", cmd: StartMigration{Slot: 8192, From: 1, To: 3}, err: ErrMigration},
		{name: "source owns no slot", cmd: StartMigration{Slot: 0, From: 3, To: 1}, err: ErrMigration},
		{name: "unknown source", cmd: StartMigration{Slot: 0, From: 9, To: 1}, err: ErrUnknownGroup},
		{name: "unknown target", cmd: StartMigration{Slot: 0, From: 1, To: 9}, err: ErrUnknownGroup},
		{name: "to itself", cmd: StartMigration{Slot: 0, From: 1, To: 1}, err: ErrInvalid},
		{name: "slot out of range", cmd: StartMigration{Slot: slots.Count, From: 1, To: 3}, err: ErrInvalid},
		{name: "before init", start: &Map{}, cmd: StartMigration{Slot: 0, From: 1, To: 2}, err: ErrNotInitialized},
	})
}

func TestApplyFinishMigration(t *testing.T) {
	mig := migrating(t)
	s3 := split3(t)
	s3start := func(cmds ...Command) *Map { return applyAll(t, s3, cmds...) }
	runApply(t, []applyCase{
		{name: "finish", start: mig, cmd: FinishMigration{Slot: 8191, From: 1, To: 3},
			want: func(m *Map) {
				m.Migrations = []Migration{{Slot: 16383, From: 2, To: 1}}
				m.Groups[0].Ranges, m.Groups[2].Ranges = rs(0, 8190), rs(8191, 8191)
				m.Moved = 1
			}},
		{name: "finish the last one", start: applyAll(t, mig, FinishMigration{Slot: 8191, From: 1, To: 3}),
			cmd: &FinishMigration{Slot: 16383, From: 2, To: 1},
			want: func(m *Map) {
				m.Migrations = nil // no empty list: an idle map is as one never migrated
				m.Groups[0].Ranges, m.Groups[1].Ranges = rs(0, 8190, 16383, 16383), rs(8192, 16382)
				m.Moved = 2
			}},
		{name: "retry after finishing", start: moved(t, mig, 0, 1, 3), cmd: FinishMigration{Slot: 0, From: 1, To: 3}},
		{name: "never started", cmd: FinishMigration{Slot: 0, From: 1, To: 3}, err: ErrMigration},
		{name: "never started, target already owns it", cmd: FinishMigration{Slot: 0, From: 3, To: 1}},
		{name: "a neighbour of a migrating slot", start: mig, cmd: FinishMigration{Slot: 8190, From: 1, To: 3}, err: ErrMigration},
		{name: "other target", start: mig, cmd: FinishMigration{Slot: 8191, From: 1, To: 2}, err: ErrMigration},
		{name: "other source", start: mig, cmd: FinishMigration{Slot: 16383, From: 3, To: 1}, err: ErrMigration},
		{name: "unknown target", start: mig, cmd: FinishMigration{Slot: 8191, From: 1, To: 9}, err: ErrUnknownGroup},
		{name: "to itself", start: mig, cmd: FinishMigration{Slot: 8191, From: 3, To: 3}, err: ErrInvalid},
		{name: "slot out of range", start: mig, cmd: FinishMigration{Slot: 65535, From: 1, To: 3}, err: ErrInvalid},
		{name: "before init", start: &Map{}, cmd: FinishMigration{Slot: 0, From: 1, To: 3}, err: ErrNotInitialized},

		// The ranges' arithmetic, on Split(3): 0-5460, 5461-10922, 10923-16383.
		{name: "slot 0 to the empty group", start: s3start(StartMigration{Slot: 0, From: 1, To: 4}),
			cmd: FinishMigration{Slot: 0, From: 1, To: 4},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 1
				m.Groups[0].Ranges, m.Groups[3].Ranges = rs(1, 5460), rs(0, 0)
			}},
		{name: "slot 5460 joins the next range", start: s3start(StartMigration{Slot: 5460, From: 1, To: 2}),
			cmd: FinishMigration{Slot: 5460, From: 1, To: 2},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 1
				m.Groups[0].Ranges, m.Groups[1].Ranges = rs(0, 5459), rs(5460, 10922)
			}},
		{name: "a middle slot splits the range", start: s3start(StartMigration{Slot: 8000, From: 2, To: 4}),
			cmd: FinishMigration{Slot: 8000, From: 2, To: 4},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 1
				m.Groups[1].Ranges, m.Groups[3].Ranges = rs(5461, 7999, 8001, 10922), rs(8000, 8000)
			}},
		{name: "the last slot", start: s3start(StartMigration{Slot: 16383, From: 3, To: 4}),
			cmd: FinishMigration{Slot: 16383, From: 3, To: 4},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 1
				m.Groups[2].Ranges, m.Groups[3].Ranges = rs(10923, 16382), rs(16383, 16383)
			}},
		{name: "adjacent slots merge", start: applyAll(t, moved(t, s3, 5460, 1, 4), StartMigration{Slot: 5459, From: 1, To: 4}),
			cmd: FinishMigration{Slot: 5459, From: 1, To: 4},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 2
				m.Groups[0].Ranges, m.Groups[3].Ranges = rs(0, 5458), rs(5459, 5460)
			}},
		{name: "a slot closes a gap", start: applyAll(t, moved(t, moved(t, s3, 0, 1, 4), 2, 1, 4), StartMigration{Slot: 1, From: 1, To: 4}),
			cmd: FinishMigration{Slot: 1, From: 1, To: 4},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 3
				m.Groups[0].Ranges, m.Groups[3].Ranges = rs(3, 5460), rs(0, 2)
			}},
		{name: "a group's only slot goes back", start: applyAll(t, moved(t, s3, 5460, 1, 4), StartMigration{Slot: 5460, From: 4, To: 1}),
			cmd: FinishMigration{Slot: 5460, From: 4, To: 1},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 2
				m.Groups[0].Ranges, m.Groups[3].Ranges = rs(0, 5460), nil
			}},
	})
}

func TestMigrationLookups(t *testing.T) {
	m := applyAll(t, migrating(t), StartMigration{Slot: 0, From: 1, To: 2})
	if got, ok := m.Migration(8191); !ok || got != (Migration{Slot: 8191, From: 1, To: 3}) {
		t.Errorf("Migration(8191) = %+v, %v", got, ok)
	}
	if got, ok := m.Migration(8190); ok {
		t.Errorf("Migration(8190) = %+v, want none", got)
	}
	want := []Migration{{Slot: 0, From: 1, To: 2}, {Slot: 8191, From: 1, To: 3}}
	if got := m.MigrationsFrom(1); !reflect.DeepEqual(got, want) {
		t.Errorf("MigrationsFrom(1) = %+v, want %+v", got, want)
	}
	if got := m.MigrationsFrom(3); got != nil {
		t.Errorf("MigrationsFrom(3) = %+v, want none", got)
	}
	counts := map[uint32]int{1: 8192, 2: 8192, 3: 0, 9: 0}
	for gid, want := range counts {
		if got := m.SlotCount(gid); got != want {
			t.Errorf("SlotCount(%d) = %d, want %d", gid, got, want)
		}
	}
	if got := moved(t, split3(t), 100, 1, 4).SlotCount(1); got != 5460 {
		t.Errorf("SlotCount after a move out of the middle = %d, want 5460", got)
	}
	var none *Map
	if _, ok := none.Migration(0); ok || none.MigrationsFrom(1) != nil || none.SlotCount(1) != 0 {
		t.Error("a nil map has migrations or slots")
	}
}

func TestCloneMigrations(t *testing.T) {
	m := applyAll(t, migrating(t), SetRebalance{On: true})
	c := m.Clone()
	if !reflect.DeepEqual(c, m) {
		t.Fatalf("Clone = %+v, want %+v", c, m)
	}
	c.Migrations[0].To = 7
	if m.Migrations[0].To == 7 {
		t.Fatal("Clone shares the migrations")
	}
}

func TestApplyMigrationBatches(t *testing.T) {
	both := []Migration{{Slot: 8191, From: 1, To: 3}, {Slot: 16383, From: 2, To: 1}}
	runApply(t, []applyCase{
		{name: "start many", cmd: StartMigrations{List: both},
			want: func(m *Map) { m.Migrations = both }},
		{name: "start many again", start: migrating(t), cmd: StartMigrations{List: both}},
		{name: "one conflict starts none", cmd: StartMigrations{List: []Migration{{Slot: 8191, From: 1, To: 3}, {Slot: 8192, From: 1, To: 3}}}, err: ErrMigration},
		{name: "finish many", start: migrating(t), cmd: FinishMigrations{List: both},
			want: func(m *Map) {
				m.Migrations, m.Moved = nil, 2
				m.Groups[0].Ranges = slots.WithoutSlot(slots.WithSlot(m.Groups[0].Ranges, 16383), 8191)
				m.Groups[1].Ranges = slots.WithoutSlot(m.Groups[1].Ranges, 16383)
				m.Groups[2].Ranges = slots.WithSlot(m.Groups[2].Ranges, 8191)
			}},
		{name: "one unknown finishes none", start: migrating(t), cmd: FinishMigrations{List: []Migration{both[0], {Slot: 5, From: 1, To: 2}}}, err: ErrMigration},
	})
}
