package fsm

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// ErrUnknownEntry is returned for an entry type this binary does not know
// and may not skip (no IgnoreUnknown bit): the node must stop rather than
// diverge.
var ErrUnknownEntry = errors.New("fsm: unknown log entry type")

// State is the processor of one slot group: the store and the time of the
// last applied entry, behind a RWMutex. It knows nothing of Raft.
type State struct {
	group   uint32 // the slot group (0 for a State outside an FSM); fixed
	mu      sync.RWMutex
	store   *store.Store
	lastNow int64
	blk     blockState    // blocked commands (blocking.go)
	reads   atomic.Uint64 // varies the seeds of reads' randomness
	scripts scriptCache   // the replicated Lua script cache (script.go)
	// settings is the group's replicated metadata (settings.go); replaced,
	// never modified.
	settings map[string]string
	// notifyClasses, if set, says per entry which keyspace events to
	// collect (notify.go); set before the first Apply.
	notifyClasses func() NotifyClass
	// trackOn, if set, says per entry whether to collect the keys it
	// touches (tracking.go); set before the first Apply.
	trackOn func() bool
	mig     migration // slot migration: out-marks, frozen keys (migrate.go)
	// outMarks is len(mig.out), readable without the lock: the router asks
	// on every write whether its slot is migrating out, and almost never is.
	outMarks atomic.Int32
	// accessHook, if set, is the node's access-metadata setting
	// (access.go); set before the first Apply.
	accessHook func() *AccessSettings
	// scriptHook, if set, learns of every script run (script_watch.go);
	// set before the first Apply.
	scriptHook func(ScriptRun) func()
	// users rebuilds the users entries carry (script_acl.go).
	users userCache
	// dataBytes is the store's DataBytes after the last entry or restore,
	// readable without the lock (the node's maxmemory check).
	dataBytes atomic.Int64
}

// NewState makes an empty State.
func NewState() *State { return &State{store: store.New(), blk: newBlockState()} }

// Apply applies entry e at log index index and returns one outcome per
// command (per op for internal entries that have them). It panics on an
// entry type it may not skip; ApplyEntry returns that as an error instead.
func (s *State) Apply(index uint64, e *Entry) []Outcome {
	outcomes, err := s.ApplyEntry(index, e)
	if err != nil {
		panic(fmt.Sprintf("fsm: index %d: %v", index, err))
	}
	return outcomes
}

// ApplyEntry is Apply returning ErrUnknownEntry (wrapped) for an unknown
// entry type without the IgnoreUnknown bit; an unknown type with the bit is
// skipped. Time never goes backwards: the entry runs at max(e.Now, the last
// entry's time), so a leader with a slower clock cannot resurrect keys.
func (s *State) ApplyEntry(index uint64, e *Entry) ([]Outcome, error) {
	r, err := s.ApplyResult(index, e)
	if err != nil {
		return nil, err
	}
	return r.Outcomes, nil
}

// ApplyResult is ApplyEntry with the whole result: the replies, and the
// commands that blocked and the blocked commands that ended (blocking.go).
func (s *State) ApplyResult(index uint64, e *Entry) (*ApplyResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.noteDataBytes()
	now := max(e.Now, s.lastNow)
	res := &ApplyResult{}
	switch e.Type &^ IgnoreUnknown {
	case EntryCommands:
		s.lastNow = now
		c := s.entryCtx(index, now, e.Seed)
		c.user, c.userBroken = s.scriptUser(e.User)
		res.Outcomes = make([]Outcome, len(e.Cmds))
		for i, args := range e.Cmds {
			c.pos = int32(i)
			calls, denials := len(c.calls), len(c.denials)
			res.Outcomes[i] = s.applyCommand(c, args, i, e.Term, res)
			if len(c.calls) > calls {
				res.Outcomes[i].Calls = c.calls[calls:]
			}
			if len(c.denials) > denials {
				res.Outcomes[i].Denials = c.denials[denials:]
			}
			s.serveReady(c, e.Term, res)
		}
		res.Events, res.Expired, res.Freed, res.Touched = c.Events, c.Expired, c.Freed, c.Touched
		if c.notifyOn&NotifyCount != 0 {
			res.Changes = c.dirty
		}
		return res, nil
	case EntryMigrate:
		s.lastNow = now
		c := s.entryCtx(index, now, e.Seed)
		c.pos = noPos
		s.applyMigrate(c, e.Term, e.Cmds, res)
		res.Touched = c.Touched
		return res, nil
	case EntryFunctions:
		s.lastNow = now
		res.Outcomes = s.applyFunctions(e.Cmds, loadBudget(scriptBudgetOf(s.settings)))
		return res, nil
	case EntrySettings &^ IgnoreUnknown:
		s.lastNow = now
		s.applySettings(e.Cmds)
		return res, nil
	case EntryEvict:
		s.lastNow = now
		var c *Ctx
		res.Outcomes, c = s.evict(now, e.Cmds)
		res.Events, res.Freed, res.Touched = c.Events, c.Freed, c.Touched
		return res, nil
	case EntryExpire:
		s.lastNow = now
		if len(e.Cmds) > 0 {
			c := s.expire(now, e.Cmds[0])
			res.Events, res.Expired, res.Freed, res.Touched = c.Events, c.Expired, c.Freed, c.Touched
		}
		return res, nil
	case EntryUnblock &^ IgnoreUnknown:
		s.lastNow = now
		if len(e.Cmds) > 0 {
			s.unblock(e.Cmds[0], res)
		}
		return res, nil
	case EntryClearWaiters &^ IgnoreUnknown:
		s.lastNow = now
		s.clearWaiters(e.Term, res)
		return res, nil
	}
	if e.Type&IgnoreUnknown != 0 {
		return res, nil
	}
	return nil, fmt.Errorf("%w: %#x", ErrUnknownEntry, uint8(e.Type))
}

// entryCtx is the Ctx of an entry's commands: its index and time, and
// randomness seeded from it.
func (s *State) entryCtx(index uint64, now int64, seed uint64) *Ctx {
	c := &Ctx{Store: s.store, Now: now, Index: index, seed: [2]uint64{seed, seed},
		scripts: &s.scripts, scriptBudget: scriptBudgetOf(s.settings), scriptHook: s.scriptHook, notifyOn: s.collected(),
		trackOn: s.tracking()}
	c.monitorOn = c.notifyOn&NotifyMonitor != 0
	c.moved = s.movedCheck(c)
	return c.withAccess(s.accessSettings(), false)
}

// applyCommand runs the command at position pos of an entry. The routing
// check of a migrating slot comes first (migrate.go): a command it answers
// never runs, so it never blocks here either.
func (s *State) applyCommand(c *Ctx, args [][]byte, pos int, term uint64, res *ApplyResult) Outcome {
	if o, redirected := s.migratingOutcome(c.Now, args); redirected {
		return o
	}
	return s.maybeBlock(c, args, pos, run(c, args), term, res)
}

// run executes one command of a log entry: an unknown name or a wrong
// number of arguments is the command's error reply, not a failure.
func run(c *Ctx, args [][]byte) resp.Value {
	if len(args) == 0 {
		return errReply(resp.ErrUnknownCommand(nil, nil))
	}
	cmd := Lookup(args[0])
	if cmd == nil {
		return errReply(resp.ErrUnknownCommand(args[0], args[1:]))
	}
	if !cmd.Meta.ArityOK(len(args)) {
		return errReply(resp.ErrWrongArgs(string(args[0])))
	}
	return safeRun(c, cmd, args)
}

// safeRun runs cmd and turns a panic (a bug in the command) into an error
// reply, so that no input from a client can crash a node. In Apply every
// replica runs the same code on the same state, so each one panics at the
// same point and recovers the same way: replicas stay identical.
func safeRun(c *Ctx, cmd *Command, args [][]byte) (v resp.Value) {
	cmd, err := cmd.resolve(args)
	if err != nil {
		return errReply(err)
	}
	defer func() {
		if p := recover(); p != nil {
			slog.Error("command panicked", "command", cmd.Meta.Name, "index", c.Index,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			v = errReply(resp.ErrInternal(cmd.Meta.Name, p))
		}
	}()
	v = cmd.Run(c, args)
	c.readBy(cmd, args) // a tracking client's reads (tracking.go)
	return v
}

// expire deletes each key that is still expired at now (it may have been
// rewritten since the leader proposed its deletion), with an "expired"
// event for each when they are collected, and their count when counted.
func (s *State) expire(now int64, keys [][]byte) *Ctx {
	c := &Ctx{Store: s.store, Now: now, notifyOn: s.collected(), trackOn: s.tracking(), pos: noPos}
	for _, k := range keys {
		if o := s.store.GetRaw(k); o != nil && o.ExpiredAt(now) {
			s.store.Delete(k)
			c.modified(k)
			c.expiredKey(k, o)
		}
	}
	return c
}

// collected is the keyspace event classes the next entry collects.
func (s *State) collected() NotifyClass {
	if s.notifyClasses == nil {
		return 0
	}
	return s.notifyClasses()
}

// Read runs a read-only command at time now (the leader's clock, never
// earlier than the last applied entry) under the read lock. A write command
// is refused: writes go through the log.
func (s *State) Read(now int64, cmd *Command, args [][]byte) Outcome {
	return s.ReadWith(now, cmd, args, ReadOpts{})
}

// ReadWith is Read with options.
func (s *State) ReadWith(now int64, cmd *Command, args [][]byte, opts ReadOpts) Outcome {
	if sub, err := cmd.resolve(args); err == nil && sub.Meta.Flags&resp.FlagWrite != 0 {
		return Replied(errf("ERR %s is a write command and must be proposed", cmd.Meta.Name))
	}
	seed := s.reads.Add(1)
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := &Ctx{Store: s.store, Now: max(now, s.lastNow), seed: [2]uint64{seed, uint64(now)},
		scripts: &s.scripts, scriptBudget: scriptBudgetOf(s.settings), scriptHook: s.scriptHook}
	c.moved = s.movedCheck(c)
	c.withAccess(s.accessSettings(), opts.NoTouch)
	if o, redirected := s.readMigratingOutcome(c.Now, cmd, args); redirected {
		return o // a key of a migrating slot has moved (migrate.go)
	}
	c.trackOn = opts.Tracked != nil
	c.monitorOn = opts.Monitor
	c.user = opts.User
	o := Replied(safeRun(c, cmd, args))
	o.Lookups, o.Calls, o.Denials = c.lookups, c.calls, c.denials
	if opts.Tracked != nil {
		opts.Tracked(readKeys(c.Touched)) // under the read lock: before any later entry applies
	}
	return o
}

// noteDataBytes publishes the store's size for DataBytes; called with the
// lock held after every change.
func (s *State) noteDataBytes() { s.dataBytes.Store(s.store.DataBytes()) }

// DataBytes is the group's dataset size as of the last applied entry
// (store.DataBytes), without the lock.
func (s *State) DataBytes() int64 { return s.dataBytes.Load() }

// View runs fn with the store, read-only, under the read lock (for node
// commands such as CLUSTER COUNTKEYSINSLOT).
func (s *State) View(fn func(st store.Reader)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(s.store)
}

// LastNow is the time of the last applied entry (unix ms).
func (s *State) LastNow() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lastNow
}
