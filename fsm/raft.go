package fsm

import (
	"fmt"
	"log/slog"

	"github.com/hashicorp/raft"
)

// FSM is the raft.FSM of one slot group: it decodes log entries and hands
// them to its State. Its snapshots are the State's (state_snapshot.go),
// adapted in snapshot.go.
type FSM struct {
	group  uint32
	logger *slog.Logger
	state  *State
	hook   func(BlockEvent) // blocking commands' events; set before Raft starts
	notify func([]Event)    // keyspace events (notify.go); set before Raft starts
	counts func(Counts)     // counted by an entry (SetCountHook); set before Raft starts
	// track receives the keys each entry touched (tracking.go); set before
	// Raft starts.
	track func(seed uint64, touched []TouchedKey)
}

// ApplyResult is what FSM.Apply returns for an entry: one outcome per
// command (or per op of an internal entry), in order, the blocking commands
// the entry added and ended (blocking.go), and its keyspace events.
type ApplyResult struct {
	Outcomes []Outcome
	// Err is the first op of an internal entry (EntryMigrate) that the
	// state machine refused; it changed nothing.
	Err      error
	Blocked  []Blocked
	Deferred []Deferred
	Events   []Event // keyspace events, when collected (SetNotifyHook)
	// Expired is how many expired keys the entry deleted and Changes how
	// many key changes its commands made (Redis's dirty, counted by key:
	// a write that changes nothing counts nothing), when the classes asked
	// for include NotifyCount.
	Expired, Changes int
	// Freed is what Redis would have freed in the background (lazyfree.go),
	// counted when Expired is.
	Freed Freed
	// Touched are the keys the entry changed and read, when collected
	// (SetTrackHook).
	Touched []TouchedKey
}

// SetBlockingHook sets fn to receive, synchronously in Apply and Restore,
// every event about blocked commands: those an entry blocks, the replies of
// those it ends, and a reset after Restore. Call it before Raft starts.
func (f *FSM) SetBlockingHook(fn func(BlockEvent)) { f.hook = fn }

// SetNotifyHook makes Apply collect keyspace events: classes is asked once
// per entry which classes to collect (0, e.g. on a follower or with
// notifications off, collects none at no cost), and fn receives, in Apply,
// the events of each entry that had some. Call it before Raft starts.
func (f *FSM) SetNotifyHook(classes func() NotifyClass, fn func([]Event)) {
	f.state.notifyClasses = classes
	f.notify = fn
}

// Counts are an entry's counters for INFO.
type Counts struct {
	Expired, Changes int   // expired keys deleted, key changes (ApplyResult's)
	Freed            Freed // what Redis would have freed in the background
}

// SetCountHook sets fn to receive, in Apply, the counters of entries
// whose classes (SetNotifyHook) asked for NotifyCount and that counted
// some. Call it before Raft starts.
func (f *FSM) SetCountHook(fn func(Counts)) { f.counts = fn }

var _ raft.FSM = (*FSM)(nil)

// New makes the FSM of group with an empty state.
func New(group uint32, logger *slog.Logger) *FSM {
	if logger == nil {
		logger = slog.Default()
	}
	st := NewState()
	st.group = group
	return &FSM{group: group, logger: logger.With("group", group), state: st}
}

// State is the group's processor, read-only: for reads, node commands and
// the slot mover. Only the FSM applies entries to it.
func (f *FSM) State() Reader { return f.state }

// Apply applies one committed log entry. An entry that cannot be decoded, or
// whose type this binary does not know and may not skip, panics: a replica
// must stop loudly rather than diverge silently.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	e, err := DecodeEntry(l.Data)
	if err == nil {
		e.Term = l.Term
		var r *ApplyResult
		if r, err = f.state.ApplyResult(l.Index, e); err == nil {
			if f.hook != nil && (len(r.Blocked) > 0 || len(r.Deferred) > 0) {
				f.hook(BlockEvent{Index: l.Index, Blocked: r.Blocked, Deferred: r.Deferred})
			}
			if f.notify != nil && len(r.Events) > 0 {
				f.notify(r.Events)
			}
			if f.counts != nil && (r.Expired+r.Changes > 0 || !r.Freed.IsZero()) {
				f.counts(Counts{Expired: r.Expired, Changes: r.Changes, Freed: r.Freed})
			}
			if f.track != nil && len(r.Touched) > 0 {
				f.track(e.Seed, r.Touched)
			}
			return r
		}
	}
	msg := fmt.Sprintf("fsm: group %d: log index %d (term %d), type byte %s: %v",
		f.group, l.Index, l.Term, typeByte(l.Data), err)
	f.logger.Error("cannot apply log entry", "index", l.Index, "type", typeByte(l.Data), "err", err)
	panic(msg)
}

func typeByte(data []byte) string {
	if len(data) < 2 {
		return "(none)"
	}
	return fmt.Sprintf("%#02x", data[1])
}
