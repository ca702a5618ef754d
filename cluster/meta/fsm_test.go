package meta

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

func quietFSM() *FSM { return NewFSM(slog.New(slog.NewTextHandler(io.Discard, nil))) }

func cmdLog(index uint64, cmd Command) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: Encode(cmd)}
}

// fired reports whether ch is closed, without waiting.
func fired(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestFSMApply applies a sequence of entries to one FSM: each step says
// what Apply returns and whether the map changed.
func TestFSMApply(t *testing.T) {
	f := quietFSM()
	if m := f.Map(); m == nil || m.Initialized() || m.Epoch != 0 {
		t.Fatalf("new FSM's map %+v, want an empty one", m)
	}
	steps := []struct {
		name    string
		log     *raft.Log
		err     error // nil: Apply returns nil
		changed bool
	}{
		{"not a command", &raft.Log{Index: 1, Type: raft.LogConfiguration, Data: []byte("x")}, nil, false},
		{"command before init", cmdLog(2, RemoveNode{ID: "n1"}), ErrNotInitialized, false},
		{"init", cmdLog(3, initCmd()), nil, true},
		{"no-op add", cmdLog(4, AddNode{Node: node("n1")}), nil, false},
		{"stale set", cmdLog(5, SetReplicas{Group: 1, Replicas: []string{"n4"}, Expect: []string{"n3", "n2", "n1"}}), ErrStale, false},
		{"set", cmdLog(6, SetReplicas{Group: 1, Replicas: []string{"n4"}, Expect: []string{"n1", "n2", "n3"}}), nil, true},
		{"skippable unknown type", &raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte("\x01\xfe{}")}, nil, false},
		{"remove", cmdLog(8, RemoveNode{ID: "n4"}), nil, true},
		{"remove again", cmdLog(9, RemoveNode{ID: "n4"}), ErrNodeRemoved, false},
		{"start migration", cmdLog(10, StartMigration{Slot: 0, From: 1, To: 2}), nil, true},
		{"start it again", cmdLog(11, StartMigration{Slot: 0, From: 1, To: 2}), nil, false},
		{"conflicting migration", cmdLog(12, StartMigration{Slot: 0, From: 1, To: 3}), ErrMigration, false},
		{"finish migration", cmdLog(13, FinishMigration{Slot: 0, From: 1, To: 2}), nil, true},
		{"finish it again", cmdLog(14, FinishMigration{Slot: 0, From: 1, To: 2}), nil, false},
		{"drain", cmdLog(15, DrainNode{ID: "n2"}), nil, true},
		{"drain again", cmdLog(16, DrainNode{ID: "n2"}), nil, false},
		{"drained node announces itself", cmdLog(17, AddNode{Node: node("n2")}), nil, false},
	}
	for _, st := range steps {
		before, ch := f.Map(), f.Changed()
		res := f.Apply(st.log)
		if st.err == nil && res != nil {
			t.Fatalf("%s: Apply = %#v, want nil", st.name, res)
		}
		if err, _ := res.(error); st.err != nil && !errors.Is(err, st.err) {
			t.Fatalf("%s: Apply = %#v, want %v", st.name, res, st.err)
		}
		if got := f.Map() != before; got != st.changed {
			t.Fatalf("%s: map changed %v, want %v", st.name, got, st.changed)
		}
		if fired(ch) != st.changed {
			t.Fatalf("%s: Changed fired %v, want %v", st.name, fired(ch), st.changed)
		}
		if st.changed && f.Map().Epoch != before.Epoch+1 {
			t.Fatalf("%s: epoch %d after %d", st.name, f.Map().Epoch, before.Epoch)
		}
	}
	if g, _ := f.Map().Group(1); len(g.Replicas) != 0 || g.Changes != 2 || g.Ranges[0].Start != 1 {
		t.Fatalf("group 1 at the end: %+v", g)
	}
	if m := f.Map(); m.Moved != 1 || !m.IsDraining("n2") || len(m.Migrations) != 0 {
		t.Fatalf("map at the end: %+v", m)
	}
}

func TestFSMApplySkipLogsWarning(t *testing.T) {
	var buf bytes.Buffer
	f := NewFSM(slog.New(slog.NewTextHandler(&buf, nil)))
	if res := f.Apply(&raft.Log{Index: 42, Type: raft.LogCommand, Data: []byte("\x01\x85")}); res != nil {
		t.Fatalf("Apply = %#v", res)
	}
	if out := buf.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "index=42") {
		t.Fatalf("log: %q", out)
	}
}

func TestFSMApplyPanicsOnBadEntry(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"unknown mandatory type", []byte("\x01\x3f{}"), "type byte 0x3f"},
		{"garbage", []byte("\x01\x02{"), "bad log entry"},
		{"empty", nil, "type byte (none)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := quietFSM()
			msg := panicOf(func() { f.Apply(&raft.Log{Index: 17, Term: 3, Type: raft.LogCommand, Data: tt.data}) })
			if !strings.Contains(msg, "meta: log index 17 (term 3)") || !strings.Contains(msg, tt.want) {
				t.Fatalf("panic %q, want the index and %q", msg, tt.want)
			}
		})
	}
}

func panicOf(fn func()) (msg string) {
	defer func() { msg = fmt.Sprint(recover()) }()
	fn()
	return ""
}

// sink is a raft.SnapshotSink writing to a buffer; fail makes Write fail.
type sink struct {
	bytes.Buffer
	fail              bool
	closed, cancelled bool
}

var _ raft.SnapshotSink = (*sink)(nil)

func (s *sink) ID() string    { return "test" }
func (s *sink) Close() error  { s.closed = true; return nil }
func (s *sink) Cancel() error { s.cancelled = true; return nil }
func (s *sink) Write(p []byte) (int, error) {
	if s.fail {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}

func persist(t *testing.T, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	var sk sink
	if err := snap.Persist(&sk); err != nil || !sk.closed || sk.cancelled {
		t.Fatalf("Persist: %v closed=%v cancelled=%v", err, sk.closed, sk.cancelled)
	}
	return sk.Bytes()
}

// closeReader records that Restore closed it.
type closeReader struct {
	io.Reader
	closed bool
}

func (r *closeReader) Close() error { r.closed = true; return nil }

func TestSnapshotRoundTrip(t *testing.T) {
	for _, m := range []*Map{{}, fixture(t), migrating(t)} {
		f := quietFSM()
		f.cur.Store(m)
		b := persist(t, f)
		if b[0] != snapshotVersion {
			t.Fatalf("snapshot starts with %#x", b[0])
		}
		g := quietFSM()
		ch := g.Changed()
		rc := &closeReader{Reader: bytes.NewReader(b)}
		if err := g.Restore(rc); err != nil {
			t.Fatal(err)
		}
		if !rc.closed {
			t.Fatal("Restore did not close its reader")
		}
		if !fired(ch) {
			t.Fatal("Restore did not fire Changed")
		}
		if !reflect.DeepEqual(normal(g.Map()), normal(m)) {
			t.Fatalf("restored\n%+v\nwant\n%+v", g.Map(), m)
		}
	}
}

// normal makes nil and empty slices alike, as JSON does not keep them apart
// for the top-level lists.
func normal(m *Map) *Map {
	c := m.Clone()
	if len(c.Nodes) == 0 {
		c.Nodes = nil
	}
	if len(c.Groups) == 0 {
		c.Groups = nil
	}
	return c
}

// The snapshot holds the map of its time, whatever Apply does next.
func TestSnapshotIsPointInTime(t *testing.T) {
	f := quietFSM()
	f.Apply(cmdLog(1, initCmd()))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	want := f.Map().Clone()
	f.Apply(cmdLog(2, RemoveNode{ID: "n1"}))
	var sk sink
	if err := snap.Persist(&sk); err != nil {
		t.Fatal(err)
	}
	g := quietFSM()
	if err := g.Restore(io.NopCloser(&sk)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.Map(), want) {
		t.Fatalf("restored %+v, want %+v", g.Map(), want)
	}
}

func TestPersistFailureCancels(t *testing.T) {
	f := quietFSM()
	snap, _ := f.Snapshot()
	sk := sink{fail: true}
	if err := snap.Persist(&sk); err == nil || !sk.cancelled || sk.closed {
		t.Fatalf("Persist to a failing sink: %v cancelled=%v closed=%v", err, sk.cancelled, sk.closed)
	}
}

func TestRestoreRefuses(t *testing.T) {
	good := func() []byte { f := quietFSM(); f.cur.Store(fixture(t)); return persist(t, f) }()
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrBadSnapshot},
		{"version 2", append([]byte{2}, good[1:]...), ErrBadSnapshot},
		{"version only", []byte{1}, ErrBadSnapshot},
		{"truncated", good[:len(good)/2], ErrBadSnapshot},
		{"garbage", []byte("\x01\xff\xfe\x00"), ErrBadSnapshot},
		{"trailing garbage", append(bytes.Clone(good), 'x'), ErrBadSnapshot},
		{"unsorted nodes", []byte("\x01" + `{"nodes":[{"id":"b"},{"id":"a"}]}`), ErrBadSnapshot},
		{"duplicate node", []byte("\x01" + `{"nodes":[{"id":"a"},{"id":"a"}]}`), ErrBadSnapshot},
		{"duplicate group", []byte("\x01" + `{"groups":[{"id":1},{"id":1}]}`), ErrBadSnapshot},
		{"unsorted migrations", []byte("\x01" + `{"migrations":[{"slot":5,"from":1,"to":2},{"slot":4,"from":1,"to":2}]}`), ErrBadSnapshot},
		{"two migrations of a slot", []byte("\x01" + `{"migrations":[{"slot":5,"from":1,"to":2},{"slot":5,"from":1,"to":3}]}`), ErrBadSnapshot},
		{"oversized", append(append([]byte{1}, good[1:]...), bytes.Repeat([]byte(" "), 1000)...), ErrBadSnapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := quietFSM()
			f.limit = int64(len(good)) + 10 // good fits, oversized does not
			f.cur.Store(fixture(t))
			before, ch := f.Map(), f.Changed()
			if err := f.Restore(io.NopCloser(bytes.NewReader(tt.in))); !errors.Is(err, tt.want) {
				t.Fatalf("Restore = %v, want %v", err, tt.want)
			}
			if f.Map() != before || fired(ch) {
				t.Fatal("a failed Restore changed the map")
			}
		})
	}
}

// endless is an unbounded stream of spaces.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.n += int64(len(p))
	return len(p), nil
}

// An endless snapshot is refused after the limit, not read forever.
func TestRestoreEndless(t *testing.T) {
	f := quietFSM()
	f.limit = 1 << 16
	r := &endless{}
	if err := f.Restore(io.NopCloser(io.MultiReader(bytes.NewReader([]byte{1}), r))); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("Restore = %v, want ErrBadSnapshot", err)
	}
	if r.n > 2*f.limit {
		t.Fatalf("read %d bytes for a limit of %d", r.n, f.limit)
	}
	if quietFSM().limit != 64<<20 {
		t.Fatal("the default limit is not 64 MiB")
	}
}

func TestRestoreReadError(t *testing.T) {
	f := quietFSM()
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader([]byte{1, '{'}), errReader{boom})
	if err := f.Restore(io.NopCloser(r)); !errors.Is(err, boom) {
		t.Fatalf("Restore = %v, want the read error", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// Changed hands out a fresh channel after each change, and the map is
// stored before the old one closes.
func TestChangedSequence(t *testing.T) {
	f := quietFSM()
	ch1 := f.Changed()
	if ch1 != f.Changed() {
		t.Fatal("Changed differs without a change")
	}
	f.Apply(cmdLog(1, initCmd()))
	<-ch1
	if !f.Map().Initialized() {
		t.Fatal("woken before the map was stored")
	}
	ch2 := f.Changed()
	if fired(ch2) {
		t.Fatal("the next channel is already closed")
	}
	f.Apply(cmdLog(2, AddNode{Node: node("n1")}))
	if fired(ch2) {
		t.Fatal("a no-op fired Changed")
	}
	f.Apply(cmdLog(3, AddNode{Node: node("n0")}))
	if !fired(ch2) {
		t.Fatal("a change did not fire Changed")
	}
}
