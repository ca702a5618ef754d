package meta

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// snapshotVersion is the first byte of a snapshot; JSON of the Map follows.
const snapshotVersion = 1

// maxSnapshot bounds what Restore reads: a map of a few hundred nodes and
// groups is kilobytes, so more is a corrupt or foreign file, and reading it
// whole must not exhaust memory.
const maxSnapshot = 64 << 20

// ErrBadSnapshot is wrapped by Restore's errors about the snapshot's content.
var ErrBadSnapshot = errors.New("meta: bad snapshot")

// FSM is the meta group's raft.FSM. Raft calls Apply, Snapshot and Restore
// from one goroutine; Map and Changed may be called from any.
type FSM struct {
	logger *slog.Logger
	limit  int64 // maxSnapshot; smaller in tests
	cur    atomic.Pointer[Map]

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on each change

	applied atomic.Uint64            // the index of the last entry Apply saw
	aclCur  atomic.Pointer[ACLState] // the user set (aclstate.go)
	acl     aclFSM
}

var _ raft.FSM = (*FSM)(nil)

// NewFSM makes the FSM with an empty map. A nil log is slog.Default().
func NewFSM(log *slog.Logger) *FSM {
	if log == nil {
		log = slog.Default()
	}
	f := &FSM{logger: log.With("group", "meta"), limit: maxSnapshot, changed: make(chan struct{})}
	f.cur.Store(&Map{})
	f.aclCur.Store(&ACLState{})
	f.acl.tableSet, f.acl.changed = make(chan struct{}), make(chan struct{})
	return f
}

// Map is the current map, never nil (an empty Map before Init). Callers must
// not modify it.
func (f *FSM) Map() *Map { return f.cur.Load() }

// Changed is closed at the next change of the map. Take it before calling
// Map, then wait on it, so no change falls between the two:
//
//	for {
//		ch := f.Changed()
//		use(f.Map())
//		<-ch
//	}
func (f *FSM) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

// set stores m and wakes the watchers. The map is stored before the channel
// is closed, so a watcher woken by it sees m or a later map.
func (f *FSM) set(m *Map) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur.Store(m)
	close(f.changed)
	f.changed = make(chan struct{})
}

// Apply applies one committed log entry and returns the command's error (nil
// on success or for an entry that is not a command). An entry that cannot be
// decoded, or whose type this binary does not know and may not skip, panics:
// a replica must stop loudly rather than diverge silently.
func (f *FSM) Apply(l *raft.Log) any {
	defer f.applied.Store(l.Index)
	if l.Type != raft.LogCommand {
		return nil
	}
	cmd, err := Decode(l.Data)
	switch {
	case errors.Is(err, ErrIgnored):
		f.logger.Warn("skipping a log entry of an unknown type", "index", l.Index, "type", typeByte(l.Data))
		return nil
	case err != nil:
		msg := fmt.Sprintf("meta: log index %d (term %d), type byte %s: %v", l.Index, l.Term, typeByte(l.Data), err)
		f.logger.Error("cannot apply log entry", "index", l.Index, "type", typeByte(l.Data), "err", err)
		panic(msg)
	}
	if ac, ok := cmd.(aclCommand); ok {
		return f.applyACL(l.Index, ac)
	}
	old := f.Map()
	m, err := Apply(old, cmd)
	if err != nil {
		f.logger.Debug("command failed", "index", l.Index, "type", typeByte(l.Data), "err", err)
		return err
	}
	if m != old {
		f.set(m)
	}
	return nil
}

func typeByte(data []byte) string {
	if len(data) < 2 {
		return "(none)"
	}
	return fmt.Sprintf("%#02x", data[1])
}

// Applied is the index of the last log entry applied here (0 before any;
// a restore leaves it, as Restore is not told the snapshot's index): a
// proposer waits for it to reach its entry's index before it reads its
// own change.
func (f *FSM) Applied() uint64 { return f.applied.Load() }

// Snapshot holds the current map and user set: neither is ever modified,
// so Persist may write them while Apply goes on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &snapshot{m: f.Map(), acl: f.ACL().snapshot()}, nil
}

type snapshot struct {
	m   *Map
	acl *aclSnapshot
}

// Persist writes the version byte, then the map as JSON.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("meta: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if err := bw.WriteByte(snapshotVersion); err != nil {
		return err
	}
	if err := json.NewEncoder(bw).Encode(snapshotBody{Map: s.m, ACL: s.acl}); err != nil {
		return err
	}
	return bw.Flush()
}

func (s *snapshot) Release() {}

// Restore replaces the map with a snapshot's and wakes the watchers. On
// error the map stays as it was.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	m, users, err := readSnapshot(rc, f.limit)
	if err != nil {
		return err
	}
	f.restoreACL(users)
	f.set(m)
	f.logger.Info("restored the map from a snapshot", "epoch", m.Epoch, "nodes", len(m.Nodes), "groups", len(m.Groups))
	return nil
}

// readSnapshot is a snapshot's map and user set (nil in a snapshot of a
// release before ACL users were replicated).
func readSnapshot(r io.Reader, limit int64) (*Map, *aclSnapshot, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("meta: read snapshot: %w", err)
	}
	switch {
	case int64(len(b)) > limit:
		return nil, nil, fmt.Errorf("%w: larger than %d bytes", ErrBadSnapshot, limit)
	case len(b) == 0:
		return nil, nil, fmt.Errorf("%w: empty", ErrBadSnapshot)
	case b[0] != snapshotVersion:
		return nil, nil, fmt.Errorf("%w: format version %d, want %d", ErrBadSnapshot, b[0], snapshotVersion)
	}
	body := snapshotBody{Map: &Map{}}
	if err := json.Unmarshal(b[1:], &body); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if err := checkMap(body.Map); err != nil {
		return nil, nil, err
	}
	if err := checkACLSnapshot(body.ACL); err != nil {
		return nil, nil, err
	}
	return body.Map, body.ACL, nil
}

// checkMap refuses a map the lookups would get wrong: Node and Migration
// search by binary search, Group finds the first group of an id.
func checkMap(m *Map) error {
	for i := 1; i < len(m.Nodes); i++ {
		if a, b := m.Nodes[i-1].ID, m.Nodes[i].ID; a >= b {
			return fmt.Errorf("%w: nodes not sorted by unique id (%q before %q)", ErrBadSnapshot, a, b)
		}
	}
	for i := 1; i < len(m.Migrations); i++ {
		if a, b := m.Migrations[i-1].Slot, m.Migrations[i].Slot; a >= b {
			return fmt.Errorf("%w: migrations not sorted by unique slot (%d before %d)", ErrBadSnapshot, a, b)
		}
	}
	seen := make(map[uint32]bool, len(m.Groups))
	for _, g := range m.Groups {
		if seen[g.ID] {
			return fmt.Errorf("%w: group %d listed twice", ErrBadSnapshot, g.ID)
		}
		seen[g.ID] = true
	}
	return nil
}
