package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Online slot migration, the state machine's half. Slot s moves from group
// A (the source) to group B (the target). A mover on A's leader (package
// cluster) proposes, per batch: "freeze" of some of the slot's keys to A,
// then "import" of their records (read with ExportRecords) to B, then
// "drop" of the same keys to A; until the slot is empty in A.
//
// Imports are fenced: each carries its source group, the Raft term of the
// source leader that sent it and a sequence number that leader increases
// per import, and B refuses an import whose (term, seq) is not above the
// last it took for that slot from that source. So an import delayed in
// the network (a deposed leader's, or a timed-out attempt that a retry
// replaced) cannot land after the keys were dropped in A and written in B,
// and overwrite those writes.
//
// A group's replicated migration state (in snapshots since version 6):
//   - out-marks, slot -> target group: the slot is migrating, or has
//     migrated, out of this group;
//   - frozen keys per slot: keys being copied right now. Writes to them are
//     refused, so the copy B gets is exactly what A drops;
//   - migrated: the number of keys drop removed, for progress reports;
//   - import fences: (slot, source group) -> the last (term, seq) imported.
//
// Routing check (applyCommand and Read): a command whose keys fall in an
// out-marked slot runs only if all its keys are live here. If none is, its
// outcome is OutcomeAsk naming the slot and the target group, which the
// front end turns into -ASK with the target leader's address; if only some
// are, OutcomeTryAgain (-TRYAGAIN), as Redis answers during a migration. A
// write (or a transaction or script that may write) touching a frozen key
// is told to try again too; for reads frozen keys are simply live. The
// check runs before a blocking command could block, and a waiter that
// could no longer run here is ended with the check's outcome
// (redirectWaiters), so no client waits in the source for a key that now
// lives in the target.
//
// EntryMigrate ops, one reply each:
//
//	out <slot> <gid>         mark slot migrating out to group gid       +OK
//	in <slot>                clear slot's out-mark and frozen keys      +OK
//	freeze <slot> <key>...   freeze the live keys (expired ones are
//	                         deleted); only while slot is out-marked    :keys frozen in slot now
//	drop <slot> <key>...     delete and unfreeze the frozen keys        :keys dropped
//	import <slot> <from> <term> <seq> <record>...
//	                         install store.EncodeRecord records of slot
//	                         sent by group from, if (term, seq) is above
//	                         the slot's last from it                    :keys installed
//
// Numbers are decimal ASCII. A bad op gets an error reply and changes
// nothing. The routing check is in migrate_route.go, the snapshot section
// in migrate_snapshot.go.

// migration is a group's migration state. Apply reads it only through
// sorted lists or single lookups, so map order never reaches the state.
type migration struct {
	out      map[uint16]uint32              // slot -> target group
	frozen   map[uint16]map[string]struct{} // slot -> frozen keys (never an empty set)
	migrated uint64                         // keys dropped
	fences   map[fenceKey]fence             // the last import per slot and source
	// changed is FrozenChanged's channel, closed when the frozen set
	// changes; nil until someone asks. Not replicated.
	changed chan struct{}
}

// fenceKey is a slot and the group it is imported from.
type fenceKey struct {
	slot uint16
	from uint32
}

// fence is the source leader's term and sequence number of an import.
type fence struct{ term, seq uint64 }

func (f fence) after(o fence) bool { return f.term > o.term || (f.term == o.term && f.seq > o.seq) }

// isFrozen reports whether key, of slot, is frozen.
func (m *migration) isFrozen(slot uint16, key []byte) bool {
	_, ok := m.frozen[slot][string(key)]
	return ok
}

// frozenChanged wakes FrozenChanged's waiters.
func (m *migration) frozenChanged() {
	if m.changed != nil {
		close(m.changed)
		m.changed = nil
	}
}

// sortedFrozen is slot's frozen keys in byte order (copies).
func (m *migration) sortedFrozen(slot uint16) [][]byte {
	set := m.frozen[slot]
	if len(set) == 0 {
		return nil
	}
	out := make([][]byte, 0, len(set))
	for k := range set {
		out = append(out, []byte(k))
	}
	slices.SortFunc(out, bytes.Compare)
	return out
}

// --- entries ---------------------------------------------------------------

// MigrateOutEntry marks slot migrating out of the group to group to.
func MigrateOutEntry(slot uint16, to uint32) *Entry {
	return migrateEntry([]byte("out"), slotArg(slot), uintArg(uint64(to)))
}

// MigrateInEntry clears slot's out-mark and frozen keys, before the group
// imports the slot.
func MigrateInEntry(slot uint16) *Entry { return migrateEntry([]byte("in"), slotArg(slot)) }

// FreezeEntry freezes keys of slot for copying.
func FreezeEntry(slot uint16, keys [][]byte) *Entry {
	return migrateEntry(append([][]byte{[]byte("freeze"), slotArg(slot)}, keys...)...)
}

// DropEntry deletes the frozen keys among keys of slot (they were copied).
func DropEntry(slot uint16, keys [][]byte) *Entry {
	return migrateEntry(append([][]byte{[]byte("drop"), slotArg(slot)}, keys...)...)
}

// ImportEntry installs records of slot (ExportRecords' output) sent by
// group from's leader of term term, as its import number seq (increasing
// within the term).
func ImportEntry(slot uint16, from uint32, term, seq uint64, records [][]byte) *Entry {
	op := [][]byte{[]byte("import"), slotArg(slot), uintArg(uint64(from)), uintArg(term), uintArg(seq)}
	return migrateEntry(append(op, records...)...)
}

func migrateEntry(op ...[]byte) *Entry {
	return &Entry{Type: EntryMigrate, Cmds: [][][]byte{op}}
}

func slotArg(slot uint16) []byte { return uintArg(uint64(slot)) }

func uintArg(n uint64) []byte { return strconv.AppendUint(nil, n, 10) }

// --- apply -----------------------------------------------------------------

// applyMigrate applies an EntryMigrate's ops in order. After each, waiters
// that can no longer run here end, and those on keys an import filled (or a
// drop deleted) are served, as after a command.
func (s *State) applyMigrate(c *Ctx, term uint64, ops [][][]byte, res *ApplyResult) {
	res.Outcomes = make([]Outcome, len(ops))
	for i, op := range ops {
		v, err := s.migrateOp(c, op)
		if err != nil {
			v = resp.Err(err)
			if res.Err == nil {
				res.Err = fmt.Errorf("%w: %w", ErrOpRefused, err)
			}
		}
		res.Outcomes[i] = Replied(v)
		c.moved = s.movedCheck(c) // the op may have changed the out-marks
		s.redirectWaiters(c.Now, res)
		s.serveReady(c, term, res)
	}
	res.Events, res.Expired, res.Freed = c.Events, c.Expired, c.Freed
}

// ErrOpRefused wraps the error of an internal entry's op that the state
// machine refused (ApplyResult.Err); the op changed nothing.
var ErrOpRefused = errors.New("fsm: op refused")

// migrateOp applies one op and returns its reply, or the error that
// refused it (changing nothing).
func (s *State) migrateOp(c *Ctx, op [][]byte) (resp.Value, error) {
	if len(op) == 0 {
		return resp.Value{}, resp.Errorf("ERR empty migrate op")
	}
	switch string(op[0]) {
	case "out":
		return s.migrateOut(op)
	case "in":
		return s.migrateIn(op)
	case "freeze":
		return s.freeze(c, op)
	case "drop":
		return s.drop(c, op)
	case "import":
		return s.importRecords(c, op)
	}
	return resp.Value{}, resp.Errorf("ERR unknown migrate op %q", op[0])
}

// parseSlot reads a decimal slot number.
func parseSlot(b []byte) (uint16, bool) {
	n, err := strconv.ParseUint(string(b), 10, 16)
	return uint16(n), err == nil && n < slots.Count
}

// opSlot checks an op's length and reads its slot argument.
func opSlot(op [][]byte, minArgs int, exact bool) (uint16, error) {
	if len(op) < minArgs || (exact && len(op) != minArgs) {
		return 0, resp.Errorf("ERR wrong number of arguments for migrate op %q", op[0])
	}
	slot, ok := parseSlot(op[1])
	if !ok {
		return 0, resp.Errorf("ERR migrate %s: bad slot %q", op[0], op[1])
	}
	return slot, nil
}

func (s *State) migrateOut(op [][]byte) (resp.Value, error) {
	slot, err := opSlot(op, 3, true)
	if err != nil {
		return resp.Value{}, err
	}
	gid, perr := strconv.ParseUint(string(op[2]), 10, 32)
	if perr != nil {
		return resp.Value{}, resp.Errorf("ERR migrate out: bad group %q", op[2])
	}
	if s.mig.out == nil {
		s.mig.out = map[uint16]uint32{}
	}
	s.mig.out[slot] = uint32(gid)
	s.outMarks.Store(int32(len(s.mig.out)))
	return resp.OK(), nil
}

func (s *State) migrateIn(op [][]byte) (resp.Value, error) {
	slot, err := opSlot(op, 2, true)
	if err != nil {
		return resp.Value{}, err
	}
	delete(s.mig.out, slot)
	s.outMarks.Store(int32(len(s.mig.out)))
	if len(s.mig.frozen[slot]) > 0 {
		delete(s.mig.frozen, slot)
		s.mig.frozenChanged()
	}
	return resp.OK(), nil
}

// freeze freezes the live keys listed (an expired one is deleted, as
// active expiry would; a key of another slot is skipped).
func (s *State) freeze(c *Ctx, op [][]byte) (resp.Value, error) {
	slot, err := opSlot(op, 2, false)
	if err != nil {
		return resp.Value{}, err
	}
	if _, out := s.mig.out[slot]; !out {
		return resp.Value{}, resp.Errorf("ERR migrate freeze: slot %d is not migrating out", slot)
	}
	set, changed := s.mig.frozen[slot], false
	for _, k := range op[2:] {
		o := c.Store.GetRaw(k)
		switch {
		case o == nil || slots.Of(k) != slot:
		case o.ExpiredAt(c.Now):
			c.expiredKey(k, o)
			c.Store.Delete(k)
			c.expiredGone(k)
		case set == nil:
			set = map[string]struct{}{string(k): {}}
			changed = true
		default:
			_, had := set[string(k)]
			set[string(k)] = struct{}{}
			changed = changed || !had
		}
	}
	if changed {
		if s.mig.frozen == nil {
			s.mig.frozen = map[uint16]map[string]struct{}{}
		}
		s.mig.frozen[slot] = set
		s.mig.frozenChanged()
	}
	return resp.Int(int64(len(set))), nil
}

// drop deletes and unfreezes the frozen keys listed: they are in the
// target now. Each is counted in migrated, even if it expired meanwhile.
func (s *State) drop(c *Ctx, op [][]byte) (resp.Value, error) {
	slot, err := opSlot(op, 2, false)
	if err != nil {
		return resp.Value{}, err
	}
	set := s.mig.frozen[slot]
	n := 0
	for _, k := range op[2:] {
		if _, frozen := set[string(k)]; !frozen {
			continue
		}
		delete(set, string(k))
		n++
		if c.del(k) { // as Redis's MIGRATE deletes its keys
			c.notify(NotifyGeneric, "del", k)
		}
	}
	if n > 0 {
		if len(set) == 0 {
			delete(s.mig.frozen, slot)
		}
		s.mig.migrated += uint64(n)
		s.mig.frozenChanged()
	}
	return resp.Int(int64(n)), nil
}

// importRecords applies an import op: it checks the fence, decodes every
// record, then installs those not expired at the entry's time, stamped with
// its index and time. A stale fence, or a bad record, fails the op before
// anything is installed.
func (s *State) importRecords(c *Ctx, op [][]byte) (resp.Value, error) {
	slot, err := opSlot(op, 5, false)
	if err != nil {
		return resp.Value{}, err
	}
	key, f, err := parseFence(slot, op[2:5])
	if err != nil {
		return resp.Value{}, resp.Errorf("ERR migrate import: %v", err)
	}
	if last, seen := s.mig.fences[key]; seen && !f.after(last) {
		return resp.Value{}, resp.Errorf("ERR migrate import: stale import (term %d seq %d, last %d %d) of slot %d from group %d",
			f.term, f.seq, last.term, last.seq, slot, key.from)
	}
	keys, objs, err := decodeRecords(slot, op[5:])
	if err != nil {
		return resp.Value{}, resp.Errorf("ERR migrate import: %v", err)
	}
	if s.mig.fences == nil {
		s.mig.fences = map[fenceKey]fence{}
	}
	s.mig.fences[key] = f
	return resp.Int(int64(install(c, keys, objs))), nil
}

// parseFence reads an import's source group, term and sequence number.
func parseFence(slot uint16, args [][]byte) (fenceKey, fence, error) {
	from, err1 := strconv.ParseUint(string(args[0]), 10, 32)
	term, err2 := strconv.ParseUint(string(args[1]), 10, 64)
	seq, err3 := strconv.ParseUint(string(args[2]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fenceKey{}, fence{}, fmt.Errorf("bad group, term or sequence: %w", err)
	}
	return fenceKey{slot: slot, from: uint32(from)}, fence{term: term, seq: seq}, nil
}

// decodeRecords decodes records, each of a key of slot.
func decodeRecords(slot uint16, records [][]byte) ([][]byte, []*store.Object, error) {
	keys := make([][]byte, len(records))
	objs := make([]*store.Object, len(records))
	for i, r := range records {
		var err error
		if keys[i], objs[i], err = store.DecodeRecord(r); err != nil {
			return nil, nil, fmt.Errorf("record %d: %w", i, err)
		}
		if slots.Of(keys[i]) != slot {
			return nil, nil, fmt.Errorf("record %d: key %q is not of slot %d", i, keys[i][:min(len(keys[i]), 64)], slot)
		}
	}
	return keys, objs, nil
}

// install stores the imported objects not expired at the entry's time and
// returns how many it stored.
func install(c *Ctx, keys [][]byte, objs []*store.Object) int {
	n := 0
	for i, o := range objs {
		if o.ExpiredAt(c.Now) {
			continue // would be gone at once: leave whatever is here
		}
		c.put(keys[i], o)
		c.notify(NotifyGeneric, "restore", keys[i]) // as Redis's RESTORE-ASKING
		if o.Type == store.TypeList || o.Type == store.TypeZSet || o.Type == store.TypeStream {
			c.signalReady(keys[i])
		}
		n++
	}
	return n
}

// --- accessors (for the cluster) ---------------------------------------------

// MigratingOut reports whether slot is marked migrating out, and to which
// group.
func (s *State) MigratingOut(slot uint16) (gid uint32, ok bool) {
	if s.outMarks.Load() == 0 {
		return 0, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	gid, ok = s.mig.out[slot]
	return gid, ok
}

// OutSlots is a copy of the out-marks: slot -> target group.
func (s *State) OutSlots() map[uint16]uint32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := maps.Clone(s.mig.out)
	if out == nil {
		out = map[uint16]uint32{}
	}
	return out
}

// Frozen lists slot's frozen keys, sorted (copies).
func (s *State) Frozen(slot uint16) [][]byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mig.sortedFrozen(slot)
}

// FrozenIn reports whether any of keys is frozen.
func (s *State) FrozenIn(keys [][]byte) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.ContainsFunc(keys, func(k []byte) bool { return s.mig.isFrozen(slots.Of(k), k) })
}

// FrozenChanged returns a channel closed at the next change of the frozen
// keys. Take it before checking FrozenIn, so a change in between is not
// missed.
func (s *State) FrozenChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mig.changed == nil {
		s.mig.changed = make(chan struct{})
	}
	return s.mig.changed
}

// LiveKeysInSlot lists up to limit keys of slot live at now (the leader's
// clock, never before the last entry's time) and not frozen: the next keys
// to freeze. The keys are copies.
func (s *State) LiveKeysInSlot(now int64, slot uint16, limit int) [][]byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now = max(now, s.lastNow)
	var out [][]byte
	add := func(k []byte, o *store.Object) {
		if len(out) < limit && !o.ExpiredAt(now) && slots.Of(k) == slot && !s.mig.isFrozen(slot, k) {
			out = append(out, clone(k))
		}
	}
	// Scan in batches from the slot's first cursor until the slot ends.
	for cur := store.SlotCursor(slot); len(out) < limit; {
		cur = s.store.Scan(cur, 64, add)
		if cur == 0 || store.CursorSlot(cur) != slot {
			break
		}
	}
	return out
}

// ExportRecords encodes (store.EncodeRecord) each of keys live at now (the
// leader's clock, never before the last entry's time), in order; keys not
// live are left out.
func (s *State) ExportRecords(now int64, keys [][]byte) [][]byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now = max(now, s.lastNow)
	var out [][]byte
	for _, k := range keys {
		if o := s.store.Get(k, now); o != nil {
			out = append(out, store.EncodeRecord(k, o))
		}
	}
	return out
}

// MigratedKeys is the number of keys dropped by migrations out of the group.
func (s *State) MigratedKeys() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mig.migrated
}
