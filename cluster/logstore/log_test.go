package logstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openDB(t testing.TB, dir string) *DB {
	t.Helper()
	db, err := Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func openLog(t testing.TB, db *DB, prefix uint64) *GroupLog {
	t.Helper()
	l, err := db.Log(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// entry is a raft.Log whose data names its index and term, so a read can
// be checked against what was written.
func entry(index, term uint64) *raft.Log {
	return &raft.Log{
		Index: index, Term: term, Type: raft.LogCommand,
		Data:       []byte(fmt.Sprintf("entry %d term %d", index, term)),
		Extensions: []byte{byte(index)},
		AppendedAt: time.Unix(1_700_000_000+int64(index), int64(index)),
	}
}

func entries(lo, hi, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, entry(i, term))
	}
	return out
}

func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		bytes.Equal(a.Data, b.Data) && bytes.Equal(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

// state is what a log must show: its bounds, and the term of every index
// in want (0: absent).
type state struct {
	first, last uint64
	want        map[uint64]uint64
}

func checkLog(t *testing.T, l raft.LogStore, st state) {
	t.Helper()
	first, _ := l.FirstIndex()
	last, _ := l.LastIndex()
	if first != st.first || last != st.last {
		t.Fatalf("bounds = %d..%d, want %d..%d", first, last, st.first, st.last)
	}
	for idx, term := range st.want {
		var got raft.Log
		err := l.GetLog(idx, &got)
		switch {
		case term == 0 && !errors.Is(err, raft.ErrLogNotFound):
			t.Fatalf("GetLog(%d) = %v, want ErrLogNotFound", idx, err)
		case term != 0 && err != nil:
			t.Fatalf("GetLog(%d): %v", idx, err)
		case term != 0 && !sameLog(&got, entry(idx, term)):
			t.Fatalf("GetLog(%d) = %+v, want %+v", idx, got, entry(idx, term))
		}
	}
}

func TestGroupLog(t *testing.T) {
	tests := []struct {
		name string
		do   func(t *testing.T, l *GroupLog) error
		want state
	}{
		{"empty", func(*testing.T, *GroupLog) error { return nil },
			state{0, 0, map[uint64]uint64{1: 0, 0: 0}}},
		{"store one", func(_ *testing.T, l *GroupLog) error { return l.StoreLog(entry(1, 1)) },
			state{1, 1, map[uint64]uint64{1: 1, 2: 0}}},
		{"store batch", func(_ *testing.T, l *GroupLog) error { return l.StoreLogs(entries(1, 5, 2)) },
			state{1, 5, map[uint64]uint64{1: 2, 3: 2, 5: 2, 6: 0}}},
		{"empty batch", func(_ *testing.T, l *GroupLog) error { return l.StoreLogs(nil) },
			state{0, 0, nil}},
		{"out of order and overwrite", func(_ *testing.T, l *GroupLog) error {
			return errors.Join(l.StoreLogs(entries(5, 7, 1)), l.StoreLog(entry(3, 1)), l.StoreLog(entry(6, 2)))
		}, state{3, 7, map[uint64]uint64{3: 1, 4: 0, 5: 1, 6: 2, 7: 1}}},
		{"delete head", func(_ *testing.T, l *GroupLog) error {
			return errors.Join(l.StoreLogs(entries(1, 10, 1)), l.DeleteRange(1, 4))
		}, state{5, 10, map[uint64]uint64{4: 0, 5: 1, 10: 1}}},
		{"delete tail then append", func(_ *testing.T, l *GroupLog) error {
			return errors.Join(l.StoreLogs(entries(1, 10, 1)), l.DeleteRange(8, 10), l.StoreLog(entry(8, 2)))
		}, state{1, 8, map[uint64]uint64{7: 1, 8: 2, 9: 0, 10: 0}}},
		{"delete all", func(_ *testing.T, l *GroupLog) error {
			return errors.Join(l.StoreLogs(entries(3, 6, 1)), l.DeleteRange(0, math.MaxUint64))
		}, state{0, 0, map[uint64]uint64{3: 0, 6: 0}}},
		{"delete middle keeps bounds", func(_ *testing.T, l *GroupLog) error {
			return errors.Join(l.StoreLogs(entries(1, 6, 1)), l.DeleteRange(3, 4), l.DeleteRange(5, 4))
		}, state{1, 6, map[uint64]uint64{2: 1, 3: 0, 4: 0, 5: 1}}},
		{"delete past both ends", func(_ *testing.T, l *GroupLog) error {
			return errors.Join(l.StoreLogs(entries(4, 6, 1)), l.DeleteRange(1, 4), l.DeleteRange(6, 100))
		}, state{5, 5, map[uint64]uint64{4: 0, 5: 1, 6: 0}}},
		{"index 0 refused", func(t *testing.T, l *GroupLog) error {
			if err := l.StoreLog(entry(0, 1)); err == nil {
				t.Error("storing index 0 succeeded")
			}
			return nil
		}, state{0, 0, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openDB(t, dir)
			l := openLog(t, db, 7)
			if err := tt.do(t, l); err != nil {
				t.Fatal(err)
			}
			checkLog(t, l, tt.want)
			// Reopened, the store shows the same: bounds are recomputed
			// from what is on disk, deletions included.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = openDB(t, dir)
			defer db.Close()
			checkLog(t, openLog(t, db, 7), tt.want)
		})
	}
}

func TestPrefixesAreSeparate(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	prefixes := []uint64{1, 2, 1 << 40, math.MaxUint64}
	logs := map[uint64]*GroupLog{}
	for i, p := range prefixes {
		logs[p] = openLog(t, db, p)
		if err := logs[p].StoreLogs(entries(uint64(10*i+1), uint64(10*i+5), uint64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	if err := logs[2].DeleteRange(0, math.MaxUint64); err != nil {
		t.Fatal(err)
	}
	checkLog(t, logs[1], state{1, 5, map[uint64]uint64{1: 1, 5: 1, 11: 0}})
	checkLog(t, logs[2], state{0, 0, map[uint64]uint64{11: 0, 1: 0, 21: 0}})
	checkLog(t, logs[1<<40], state{21, 25, map[uint64]uint64{21: 3, 5: 0, 31: 0}})
	checkLog(t, logs[math.MaxUint64], state{31, 35, map[uint64]uint64{31: 4, 35: 4, 25: 0}})
	got, err := db.Prefixes()
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{1, 1 << 40, math.MaxUint64}; !slices.Equal(got, want) {
		t.Fatalf("Prefixes() = %v, want %v", got, want)
	}
}

func TestDropLog(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	a, b := openLog(t, db, 10), openLog(t, db, 11)
	for _, l := range []*GroupLog{a, b} {
		if err := l.StoreLogs(entries(1, 100, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DropLog(10); err == nil {
		t.Fatal("DropLog of an open log succeeded")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.StoreLog(entry(101, 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("StoreLog on a closed log = %v, want ErrClosed", err)
	}
	if err := db.DropLog(10); err != nil {
		t.Fatal(err)
	}
	if has, err := db.HasLog(10); has || err != nil {
		t.Fatalf("HasLog(10) after drop = %v, %v", has, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, dir)
	defer db.Close()
	checkLog(t, openLog(t, db, 10), state{0, 0, map[uint64]uint64{1: 0, 100: 0}})
	checkLog(t, openLog(t, db, 11), state{1, 100, map[uint64]uint64{1: 1, 100: 1}})
	if got, _ := db.Prefixes(); !slices.Equal(got, []uint64{11}) {
		t.Fatalf("Prefixes() = %v, want [11]", got)
	}
}

func TestOpenOnceAndClosed(t *testing.T) {
	db := openDB(t, t.TempDir())
	l := openLog(t, db, 3)
	if _, err := db.Log(3); err == nil {
		t.Fatal("a second Log(3) succeeded")
	}
	if err := l.StoreLog(entry(1, 1)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var out raft.Log
	for name, err := range map[string]error{
		"StoreLog":    l.StoreLog(entry(2, 1)),
		"GetLog":      l.GetLog(1, &out),
		"DeleteRange": l.DeleteRange(1, 1),
		"DropLog":     db.DropLog(4),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if _, err := db.Log(4); !errors.Is(err, ErrClosed) {
		t.Errorf("Log after Close = %v, want ErrClosed", err)
	}
}
