package cluster

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/slotraft/slotraft/fsm"
)

// SAVE and BGSAVE on a slotraft node: a Raft snapshot of every group this
// node hosts (the meta group included), which is also what lets Raft
// compact those groups' logs. A write is durable long before (its log
// entry is fsync'd on a quorum before it is acknowledged), so saving is
// about log size and restart time, not about losing data.

// ErrSaveInProgress: a save of this node is running.
var ErrSaveInProgress = errors.New("background save already in progress")

// ErrNodeClosed: the node is closing and starts nothing new.
var ErrNodeClosed = errors.New("node closed")

// saveState is the bookkeeping of SAVE and BGSAVE, as INFO persistence and
// LASTSAVE report it.
type saveState struct {
	mu        sync.Mutex
	running   bool
	scheduled bool      // BGSAVE SCHEDULE while running: one more after it
	last      time.Time // the last successful save's end (the node's start at first)
	lastErr   error     // the last save's error, nil if it succeeded
	started   time.Time // the running save's start
	saves     int64     // successful saves since the start (rdb_saves)
	lastDur   time.Duration
	ran       bool // a save has ended since the start
	// changes: writes applied by the groups led here since the last
	// save's start (INFO's rdb_changes_since_last_save; a failed save
	// gives them back, as Redis's dirty_before_bgsave).
	changes atomic.Int64
	atStart int64 // changes when the running save started
}

// countApplied is the groups' count hook (fsm.SetCountHook), called in
// Apply on a group's leader: expired keys, writes applied, values freed.
func (n *Node) countApplied(c fsm.Counts) {
	n.expiry.expired.Add(int64(c.Expired))
	n.saves.changes.Add(int64(c.Changes))
	if !c.Freed.IsZero() {
		n.lazyfree.add(c.Freed)
	}
}

// SaveStatus is what INFO persistence and LASTSAVE show of the saves.
type SaveStatus struct {
	Changes    int64 // writes applied by the groups led here since the last save
	InProgress bool
	Started    time.Time // of the running save
	LastSave   time.Time // the last successful one's end
	LastOK     bool      // the last save succeeded
	Saves      int64     // successful saves since the node started
	// LastDuration is how long the last save took, -1 before any.
	LastDuration time.Duration
}

// SaveStatus reports the saves' state.
func (n *Node) SaveStatus() SaveStatus {
	s := &n.saves
	s.mu.Lock()
	defer s.mu.Unlock()
	st := SaveStatus{Changes: s.changes.Load(), InProgress: s.running, Started: s.started, LastSave: s.last,
		LastOK: s.lastErr == nil, Saves: s.saves, LastDuration: -1}
	if s.ran {
		st.LastDuration = s.lastDur
	}
	return st
}

// ResetSaveCount zeroes the count of saves (CONFIG RESETSTAT's rdb_saves).
func (n *Node) ResetSaveCount() {
	n.saves.mu.Lock()
	defer n.saves.mu.Unlock()
	n.saves.saves = 0
}

// Save snapshots every hosted group now and returns when all are written:
// ErrSaveInProgress if a save is running, else the first group's error.
func (n *Node) Save() error {
	if !n.saves.begin(false) {
		return ErrSaveInProgress
	}
	return n.runSave()
}

// BackgroundSave starts a save in the background. It returns
// ErrSaveInProgress when one is running, unless schedule is set: then one
// more save runs after it and scheduled is true.
func (n *Node) BackgroundSave(schedule bool) (scheduled bool, err error) {
	if !n.saves.begin(schedule) {
		if schedule {
			return true, nil
		}
		return false, ErrSaveInProgress
	}
	if !n.goBackground(func() {
		for {
			err := n.runSave()
			n.log.Info("background save done", "err", err)
			if !n.saves.again() {
				return
			}
		}
	}) {
		n.saves.end(ErrNodeClosed)
		return false, ErrNodeClosed
	}
	return false, nil
}

// begin marks a save running; false if one already is (then schedule
// asks for one more after it).
func (s *saveState) begin(schedule bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		s.scheduled = s.scheduled || schedule
		return false
	}
	s.running, s.started = true, time.Now()
	s.atStart = s.changes.Swap(0)
	return true
}

// again reports whether a scheduled save should run now (and marks it
// running), after the running one ended.
func (s *saveState) again() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.scheduled {
		return false
	}
	s.scheduled, s.running, s.started = false, true, time.Now()
	s.atStart = s.changes.Swap(0)
	return true
}

func (s *saveState) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.lastErr, s.ran = false, err, true
	s.lastDur = time.Since(s.started)
	if err == nil {
		s.last = time.Now()
		s.saves++
	} else {
		s.changes.Add(s.atStart)
	}
	s.atStart = 0
}

// runSave snapshots the meta group and every hosted slot group in turn; a
// group with nothing new since its last snapshot counts as saved.
func (n *Node) runSave() error {
	var errs []error
	rafts := []*raft.Raft{n.meta.raft}
	ids := []string{"meta"}
	for _, g := range n.Groups() {
		rafts = append(rafts, g.raft)
		ids = append(ids, fmt.Sprint(g.id))
	}
	for i, r := range rafts {
		if err := r.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			errs = append(errs, fmt.Errorf("group %s: snapshot: %w", ids[i], err))
		}
	}
	err := errors.Join(errs...)
	n.saves.end(err)
	return err
}
