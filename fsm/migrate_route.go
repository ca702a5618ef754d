package fsm

import (
	"slices"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// The routing check of slot migration (see migrate.go): which commands of
// an out-marked slot run here, which are asked to go to the target group and
// which are told to try again.

// migratingOutcome is the routing check of one command of an
// EntryCommands entry: redirected reports that it must not run, and o is
// its outcome (OutcomeAsk or OutcomeTryAgain).
func (s *State) migratingOutcome(now int64, args [][]byte) (o Outcome, redirected bool) {
	if len(s.mig.out) == 0 {
		return Outcome{}, false // the common case: nothing migrates
	}
	keys, write := commandKeys(args)
	return s.routeKeys(now, keys, write)
}

// readMigratingOutcome is migratingOutcome for State.Read's command.
func (s *State) readMigratingOutcome(now int64, cmd *Command, args [][]byte) (Outcome, bool) {
	if len(s.mig.out) == 0 || !cmd.Meta.ArityOK(len(args)) {
		return Outcome{}, false
	}
	return s.routeKeys(now, keysOf(cmd, args), false)
}

// routeKeys is the routing check of a command with keys at time now.
func (s *State) routeKeys(now int64, keys [][]byte, write bool) (Outcome, bool) {
	slot, gid, marked, mixed := s.outSlotOf(keys)
	switch {
	case !marked:
		return Outcome{}, false
	case mixed:
		return TryAgain(), true
	case write && s.anyFrozen(slot, keys):
		return TryAgain(), true
	}
	switch s.countLive(now, slot, keys, !write) {
	case len(keys):
		return Outcome{}, false
	case 0:
		return Asked(slot, gid), true
	}
	return TryAgain(), true
}

// movedCheck is Ctx.moved for c: the routing check of the commands a
// script calls; nil while nothing migrates.
func (s *State) movedCheck(c *Ctx) func(keys [][]byte, write bool) bool {
	if len(s.mig.out) == 0 {
		return nil
	}
	return func(keys [][]byte, write bool) bool {
		_, moved := s.routeKeys(c.Now, keys, write)
		return moved
	}
}

// outSlotOf says whether any key is in an out-marked slot, the first key's
// slot and its target, and whether the keys span several slots.
func (s *State) outSlotOf(keys [][]byte) (slot uint16, gid uint32, marked, mixed bool) {
	for i, k := range keys {
		sl := slots.Of(k)
		if i == 0 {
			slot = sl
		} else if sl != slot {
			mixed = true
		}
		if _, ok := s.mig.out[sl]; ok {
			marked = true
		}
	}
	return slot, s.mig.out[slot], marked, mixed
}

func (s *State) anyFrozen(slot uint16, keys [][]byte) bool {
	if len(s.mig.frozen[slot]) == 0 {
		return false
	}
	return slices.ContainsFunc(keys, func(k []byte) bool { return s.mig.isFrozen(slot, k) })
}

// countLive counts the keys live at now (frozen ones too when frozenLive).
func (s *State) countLive(now int64, slot uint16, keys [][]byte, frozenLive bool) int {
	n := 0
	for _, k := range keys {
		if s.store.Get(k, now) != nil || (frozenLive && s.mig.isFrozen(slot, k)) {
			n++
		}
	}
	return n
}

// commandKeys is the keys a command touches and whether it may write; for
// "exec", those of its queued commands. A command that cannot run
// (unknown, bad arity, undecodable payload) has none: it fails without
// touching a key.
func commandKeys(args [][]byte) (keys [][]byte, write bool) {
	cmd := runnable(args)
	if cmd == nil {
		return nil, false
	}
	if cmd.Meta.Name != ExecName {
		return keysOf(cmd, args), cmd.Meta.Flags&resp.FlagWrite != 0
	}
	_, queued, err := DecodeExec(args[1])
	if err != nil {
		return nil, false
	}
	for _, q := range queued {
		if qc := runnable(q); qc != nil && qc.Meta.Name != ExecName {
			keys = append(keys, keysOf(qc, q)...)
			write = write || qc.Meta.Flags&resp.FlagWrite != 0
		}
	}
	return keys, write
}

// runnable is args' command if it passes the checks run makes.
func runnable(args [][]byte) *Command {
	if len(args) == 0 {
		return nil
	}
	cmd := Lookup(args[0])
	if cmd == nil || !cmd.Meta.ArityOK(len(args)) {
		return nil
	}
	return cmd
}

// keysOf is KeysOf with a panic (a bug in a key-position function) taken as
// no keys; safeRun then catches the command's own failure.
func keysOf(cmd *Command, args [][]byte) (keys [][]byte) {
	defer func() {
		if recover() != nil {
			keys = nil
		}
	}()
	return cmd.Meta.KeysOf(args)
}

// redirectWaiters ends, with the routing check's outcome, the waiters that
// could not run here any more: their keys moved out (or are moving).
func (s *State) redirectWaiters(now int64, res *ApplyResult) {
	if len(s.blk.waiters) == 0 || len(s.mig.out) == 0 {
		return
	}
	for _, w := range s.blk.sorted() {
		s.redirectWaiter(now, w, res)
	}
}

// redirectWaiter ends w with the routing check's outcome if it may not
// run; it reports whether it did.
func (s *State) redirectWaiter(now int64, w *waiter, res *ApplyResult) bool {
	o, redirected := s.migratingOutcome(now, w.args)
	if !redirected {
		return false
	}
	s.blk.remove(w)
	res.Deferred = append(res.Deferred, Deferred{ID: w.id, Outcome: o})
	return true
}
