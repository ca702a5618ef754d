package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// snapshotOf is s's snapshot, written out.
func snapshotOf(t testing.TB, s *State) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Snapshot().WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("write snapshot: %v, %d bytes counted of %d", err, n, buf.Len())
	}
	return buf.Bytes()
}

// restoredFrom is a new State read from a snapshot.
func restoredFrom(t testing.TB, b []byte) *State {
	t.Helper()
	s := NewState()
	if err := s.ReadSnapshot(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	return s
}

// fullState has something in every part a snapshot holds: keys, a
// blocked command, a script, a library, a setting, an out-mark and a
// frozen key.
func fullState(t testing.TB) *State {
	s := NewState()
	for i, e := range []*Entry{
		{Type: EntryCommands, Now: t0, Seed: 1, Term: 2, Cmds: [][][]byte{
			fields("SET {a}k v"), fields("RPUSH l a b"), fields("BLPOP q 0"), fields("SCRIPT LOAD return~1")}},
		{Type: EntryFunctions, Now: t0 + 1, Cmds: [][][]byte{byteArgs([]string{"LOAD", lib("a", reg("fa", "return 'a'"))})}},
		SettingsEntry(SettingPreferredLeader, "node2"),
		MigrateOutEntry(slotA, 2),
		FreezeEntry(slotA, [][]byte{[]byte("{a}k")}),
	} {
		if _, err := s.ApplyEntry(uint64(i+1), e); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// asVersion rewrites a current snapshot as version v: it keeps the first
// v-1 sections after the header (each version added one) and cuts the
// others.
func asVersion(t testing.TB, data []byte, v byte) []byte {
	t.Helper()
	off := snapHeaderLen
	for range v - 1 {
		off += 4 + int(binary.BigEndian.Uint32(data[off:])) + 4
	}
	end := off
	for range snapVersion - v {
		end += 4 + int(binary.BigEndian.Uint32(data[end:])) + 4
	}
	out := append(bytes.Clone(data[:off]), data[end:]...)
	out[len(snapMagic)] = v
	return out
}

func TestStateSnapshotRoundTrip(t *testing.T) {
	s := fullState(t)
	for i, e := range randomEntries(300) {
		s.Apply(uint64(i+10), e)
	}
	data := snapshotOf(t, s)
	g := restoredFrom(t, data)
	if !bytes.Equal(snapshotOf(t, g), data) || g.LastNow() != s.LastNow() {
		t.Fatal("restored state differs")
	}
	if g.ScriptCount() != 1 || g.LibraryCount() != 1 || g.Setting(SettingPreferredLeader) != "node2" ||
		len(g.Waiters()) != 1 || g.OutSlots()[slotA] != 2 || len(g.Frozen(slotA)) != 1 {
		t.Fatalf("restored parts: %d scripts, %d libraries, %d waiters, out %v, frozen %q",
			g.ScriptCount(), g.LibraryCount(), len(g.Waiters()), g.OutSlots(), g.Frozen(slotA))
	}
}

// TestSnapshotFormatKept: fullState's snapshot is byte for byte the one
// the binary before State owned the format wrote (testdata/snapshot-v6.bin),
// and that file reads back into the same state.
func TestSnapshotFormatKept(t *testing.T) {
	golden, err := os.ReadFile("testdata/snapshot-v6.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotOf(t, fullState(t)), golden) {
		t.Fatal("the snapshot format changed")
	}
	if !bytes.Equal(snapshotOf(t, restoredFrom(t, golden)), golden) {
		t.Fatal("the golden snapshot does not round-trip")
	}
}

// TestReadSnapshotEveryVersion: every older version still reads; the
// parts it does not have are restored empty.
func TestReadSnapshotEveryVersion(t *testing.T) {
	data := snapshotOf(t, fullState(t))
	for v := byte(1); v <= snapVersion; v++ {
		old := asVersion(t, data, v)
		g := fullState(t) // everything it holds is replaced
		if err := g.ReadSnapshot(bytes.NewReader(old)); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if got := asVersion(t, snapshotOf(t, g), v); !bytes.Equal(got, old) {
			t.Errorf("version %d: the parts it holds differ after a round trip", v)
		}
		for _, part := range []struct {
			since byte
			n     int
			what  string
		}{
			{2, len(g.Waiters()), "waiters"}, {3, g.ScriptCount(), "scripts"}, {4, g.LibraryCount(), "libraries"},
			{5, len(g.Setting(SettingPreferredLeader)), "setting"}, {6, len(g.OutSlots()), "out-marks"},
		} {
			if (part.n != 0) != (v >= part.since) {
				t.Errorf("version %d: %s %d", v, part.what, part.n)
			}
		}
	}
}

// A snapshot that fails anywhere, even in the store after every section
// decoded, leaves every part of the state as it was.
func TestReadSnapshotBadInputLeavesState(t *testing.T) {
	s := fullState(t)
	data := snapshotOf(t, s)
	for name, b := range map[string][]byte{
		"empty": nil, "magic": append([]byte("XXXX"), data[4:]...),
		"version 0": append([]byte("SRFS\x00"), data[5:]...),
		"version":   append([]byte("SRFS\x09"), data[5:]...), "truncated": data[:len(data)-3],
		"bad store": append(bytes.Clone(data[:len(data)-3]), "xyz"...),
		"waiters":   flip(data, snapHeaderLen+6),
	} {
		err := s.ReadSnapshot(bytes.NewReader(b))
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		if name != "truncated" && name != "bad store" && !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("%s: %v does not wrap ErrBadSnapshot", name, err)
		}
		if !bytes.Equal(snapshotOf(t, s), data) {
			t.Fatalf("%s: a failed read changed the state", name)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestSnapshotWriteError(t *testing.T) {
	if _, err := fullState(t).Snapshot().WriteTo(failWriter{}); err == nil || err.Error() != "disk full" {
		t.Fatalf("write to a failing writer: %v", err)
	}
}

// TestApplyDuringWriteTo: WriteTo blocks on a writer nobody reads yet, and
// Apply must still go on; the snapshot keeps its point in time.
func TestApplyDuringWriteTo(t *testing.T) {
	s := NewState()
	for i := range 2000 {
		s.Apply(uint64(i+1), &Entry{Type: EntryCommands, Now: t0,
			Cmds: [][][]byte{fields("SET key:" + strings.Repeat("x", i%50) + strconv.Itoa(i) + " " + strings.Repeat("v", 100))}})
	}
	before := dump(t, s)
	snap := s.Snapshot()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := snap.WriteTo(pw)
		done <- err
		pw.Close()
	}()

	applied := make(chan struct{})
	go func() {
		defer close(applied)
		s.Apply(3000, &Entry{Type: EntryCommands, Now: t0 + 1, Cmds: [][][]byte{fields("FLUSHALL"), fields("SET after 1")}})
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		t.Fatal("Apply blocked while a snapshot was being written")
	}
	data, err := io.ReadAll(pr)
	if err != nil || <-done != nil {
		t.Fatalf("read %v write %v", err, <-done)
	}
	if !bytes.Equal(before, dump(t, restoredFrom(t, data))) {
		t.Fatal("snapshot does not hold its point in time")
	}
}

// FuzzReadSnapshot: any bytes either read into a state that writes the
// same snapshot again, or fail and leave the state as it was.
func FuzzReadSnapshot(f *testing.F) {
	base := snapshotOf(f, fullState(f))
	for v := byte(1); v <= snapVersion; v++ {
		f.Add(asVersion(f, base, v))
	}
	f.Add([]byte("SRFS\x06"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := restoredFrom(t, base)
		if err := s.ReadSnapshot(bytes.NewReader(b)); err != nil {
			if !bytes.Equal(snapshotOf(t, s), base) {
				t.Fatalf("failed read (%v) changed the state", err)
			}
			return
		}
		again := snapshotOf(t, s)
		if !bytes.Equal(snapshotOf(t, restoredFrom(t, again)), again) {
			t.Fatal("an accepted snapshot does not round-trip")
		}
	})
}
