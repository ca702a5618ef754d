package fsm

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// sink is a raft.SnapshotSink over any writer.
type sink struct {
	io.Writer
	closed, cancelled bool
}

func (s *sink) ID() string    { return "test" }
func (s *sink) Close() error  { s.closed = true; return closeIf(s.Writer) }
func (s *sink) Cancel() error { s.cancelled = true; return closeIf(s.Writer) }

func closeIf(w io.Writer) error {
	if c, ok := w.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func applyLog(f *FSM, index uint64, e *Entry) *ApplyResult {
	return f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: e.Encode()}).(*ApplyResult)
}

// TestSnapshotRoundTrip goes through the raft.FSM adapter: Persist into a
// sink, Restore from it (state_snapshot_test.go tests the format).
func TestSnapshotRoundTrip(t *testing.T) {
	f := New(1, nil)
	for i, e := range randomEntries(300) {
		applyLog(f, uint64(i+1), e)
	}
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	sk := &sink{Writer: &buf}
	if err := snap.Persist(sk); err != nil || !sk.closed {
		t.Fatalf("persist: %v closed=%v", err, sk.closed)
	}
	snap.Release()
	g := New(1, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump(t, f.state), dump(t, g.state)) || f.state.LastNow() != g.state.LastNow() {
		t.Fatal("restored state differs")
	}
	for name, b := range map[string][]byte{
		"empty": nil, "magic": append([]byte("XXXX"), buf.Bytes()[4:]...),
		"version": append([]byte("SRFS\x09"), buf.Bytes()[5:]...), "truncated": buf.Bytes()[:buf.Len()-3],
	} {
		if err := g.Restore(io.NopCloser(bytes.NewReader(b))); err == nil {
			t.Errorf("%s: restore accepted bad input", name)
		}
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(nil))); !errors.Is(err, ErrBadSnapshot) || !strings.Contains(err.Error(), "group 1") {
		t.Errorf("empty input: %v", err)
	}
	if !bytes.Equal(dump(t, f.state), dump(t, g.state)) {
		t.Fatal("failed restore changed the state")
	}
}

// TestPersistCancelsOnError: Persist cancels the sink when the snapshot
// cannot be written.
func TestPersistCancelsOnError(t *testing.T) {
	f := New(1, nil)
	applyLog(f, 1, &Entry{Type: EntryCommands, Cmds: [][][]byte{fields("SET k v")}})
	snap, _ := f.Snapshot()
	sk := &sink{Writer: failWriter{}}
	if err := snap.Persist(sk); err == nil || !sk.cancelled {
		t.Fatalf("err %v cancelled %v", err, sk.cancelled)
	}
}

func TestFSMApplyPanicsOnBadEntry(t *testing.T) {
	f := New(7, nil)
	for name, data := range map[string][]byte{
		"undecodable": {1, 1, 2},
		"unknown":     (&Entry{Type: 0x33}).Encode(),
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "group 7") || !strings.Contains(msg, "log index 42") || !strings.Contains(msg, "type byte") {
					t.Errorf("%s: panic message %q", name, msg)
				}
			}()
			f.Apply(&raft.Log{Index: 42, Type: raft.LogCommand, Data: data})
		}()
	}
	if r := f.Apply(&raft.Log{Index: 43, Type: raft.LogNoop}); r != nil {
		t.Fatalf("noop result %v", r)
	}
	if r := applyLog(f, 44, &Entry{Type: EntryCommands, Cmds: [][][]byte{fields("SET k v"), fields("GET k")}}); showAll(repliesOf(r.Outcomes)) != `+OK "v"` {
		t.Fatalf("replies %s", showAll(repliesOf(r.Outcomes)))
	}
}
