package cluster

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
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
}

// SaveStatus is what INFO persistence and LASTSAVE show of the saves.
type SaveStatus struct {
	InProgress bool
	Started    time.Time // of the running save
	LastSave   time.Time // the last successful one's end
	LastOK     bool      // the last save succeeded
}

// SaveStatus reports the saves' state.
func (n *Node) SaveStatus() SaveStatus {
	s := &n.saves
	s.mu.Lock()
	defer s.mu.Unlock()
	return SaveStatus{InProgress: s.running, Started: s.started, LastSave: s.last, LastOK: s.lastErr == nil}
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
	return true
}

func (s *saveState) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.lastErr = false, err
	if err == nil {
		s.last = time.Now()
	}
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
