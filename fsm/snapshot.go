package fsm

import (
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// FSM.Snapshot and FSM.Restore adapt the State's snapshots (the format is
// in state_snapshot.go) to raft.FSM.

// raftSnapshot is a State's Snapshot as a raft.FSMSnapshot.
type raftSnapshot struct{ snap *Snapshot }

// Snapshot takes an O(1) copy-on-write snapshot of the state; Raft
// persists it while Apply goes on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &raftSnapshot{snap: f.state.Snapshot()}, nil
}

// Persist streams the snapshot into sink; on error the sink is cancelled.
func (s *raftSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := s.snap.WriteTo(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	return sink.Close()
}

// Release drops the snapshot.
func (s *raftSnapshot) Release() { s.snap = nil }

// Restore replaces the state with a snapshot, decoding as it streams (on
// error the state is unchanged), then tells the blocking hook which
// waiters the new state holds.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := f.state.ReadSnapshot(rc); err != nil {
		return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
	}
	if f.hook != nil {
		f.hook(BlockEvent{Reset: true, Blocked: f.state.Waiters()})
	}
	if f.track != nil && f.state.tracking() {
		f.track(0, []TouchedKey{{Kind: KeysFlushed, Pos: noPos}}) // every key may have changed
	}
	return nil
}
