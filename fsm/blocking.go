package fsm

import (
	"container/list"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Blocking commands (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX
// BZMPOP). Their Run is the non-blocking form. When a client's command of
// an EntryCommands entry gets a null reply from it, the state records a
// waiter in a FIFO queue per key and the command's outcome is
// OutcomeBlocked, naming the waiter. After every command of an entry, the waiters
// queued on the keys that gained elements (Ctx.Ready) are served in FIFO
// order by running their command again, as Redis's
// handleClientsBlockedOnKeys does; each served waiter's reply is a Deferred
// reply of the entry. Waiters are replicated state: every replica serves
// the same waiters the same elements, and they are part of the snapshot.
//
// A waiter ends when it is served, when an EntryUnblock names it (the
// leader saw its deadline pass or its client go away), or when it belongs
// to an earlier Raft term than the entry that finds it: such waiters are
// dropped (EntryClearWaiters, which a new leader proposes, drops them all)
// and never served. Only entries of its own term, all appended by the
// leader its client is connected to, may serve a waiter; an entry of that
// term may still be applied after the leader lost the leadership (the next
// one commits it), and that node, applying it as a follower, hands its
// client the reply, so the element is never lost.

// WaiterID identifies a waiter: the log index of the entry whose command
// blocked and the command's position in that entry.
type WaiterID struct {
	Index uint64
	Pos   uint32
}

func (id WaiterID) less(o WaiterID) bool {
	return id.Index < o.Index || (id.Index == o.Index && id.Pos < o.Pos)
}

// waiterIDLen is the size of an encoded WaiterID.
const waiterIDLen = 12

// AppendWaiterID appends id's 12-byte encoding (index, position; big-endian).
func AppendWaiterID(b []byte, id WaiterID) []byte {
	b = binary.BigEndian.AppendUint64(b, id.Index)
	return binary.BigEndian.AppendUint32(b, id.Pos)
}

// ParseWaiterID decodes AppendWaiterID's encoding.
func ParseWaiterID(b []byte) (WaiterID, bool) {
	if len(b) != waiterIDLen {
		return WaiterID{}, false
	}
	return WaiterID{Index: binary.BigEndian.Uint64(b), Pos: binary.BigEndian.Uint32(b[8:])}, true
}

// UnblockEntry is the entry that ends the waiters ids (deadline passed or
// client gone): each still present gets the timeout reply.
func UnblockEntry(ids []WaiterID) *Entry {
	args := make([][]byte, len(ids))
	for i, id := range ids {
		args[i] = AppendWaiterID(nil, id)
	}
	return &Entry{Type: EntryUnblock, Cmds: [][][]byte{args}}
}

// Blocked describes a waiter: a command that blocked, or (in a Reset event)
// a waiter of a restored state.
type Blocked struct {
	ID       WaiterID
	Term     uint64 // Raft term of the entry that blocked it
	Deadline int64  // unix ms; 0 = no deadline
}

// Deferred is the outcome of a waiter that ended: served, timed out,
// dropped, or sent elsewhere because its keys left a migrating slot.
type Deferred struct {
	ID      WaiterID
	Outcome Outcome
}

// BlockEvent is what the blocking hook (FSM.SetBlockingHook) receives.
type BlockEvent struct {
	Index    uint64     // the entry's log index (0 for Reset)
	Blocked  []Blocked  // waiters the entry added
	Deferred []Deferred // waiters the entry ended, with their replies
	// Reset: the state was replaced by a snapshot; Blocked lists every
	// waiter of the new state and any waiter not listed is gone.
	Reset bool
}

// ErrUnblocked is the reply of a waiter dropped because the leadership of
// its group moved: Redis's reply to a blocked client of a master that
// becomes a replica.
var ErrUnblocked = resp.NewError("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)")

// timeoutReply is what a blocked client gets when its timeout passes: a
// null array whatever the command (Redis's replyToBlockedClientTimedOut,
// BLMOVE and BRPOPLPUSH included).
func timeoutReply() resp.Value { return resp.NullArray() }

// blockSpec says how a blocking command blocks.
type blockSpec struct {
	kind    store.Type                   // the type of value that can serve it
	timeout func(args [][]byte) int      // index of the timeout argument (0: never blocks)
	keys    func(args [][]byte) [][]byte // the keys it waits on
	// timeoutMs: the timeout is in integer milliseconds (XREAD BLOCK), not
	// in seconds.
	timeoutMs bool
	// prepare rewrites the arguments when the command blocks (XREAD's "$"
	// becomes the stream's last ID then, as Redis does).
	prepare func(c *Ctx, args [][]byte) [][]byte
	// unblockOnGone: the waiter also runs again when its key is deleted or
	// no longer holds its type (XREADGROUP: its group is gone), as Redis's
	// unblock_on_nokey.
	unblockOnGone bool
}

func lastArgTimeout(args [][]byte) int { return len(args) - 1 }

// keysBeforeTimeout: BLPOP key [key …] timeout.
func keysBeforeTimeout(args [][]byte) [][]byte { return args[1 : len(args)-1] }

// firstKey: BLMOVE/BRPOPLPUSH wait on their source only.
func firstKey(args [][]byte) [][]byte { return args[1:2] }

// numkeysKeys: BLMPOP/BZMPOP timeout numkeys key [key …] …
func numkeysKeys(args [][]byte) [][]byte {
	if len(args) < 4 {
		return nil
	}
	n, err := resp.ParseInt(args[2])
	if err != nil || n <= 0 || n > int64(len(args)-3) {
		return nil
	}
	return args[3 : 3+n]
}

// The block specs of the blocking commands, set on their table entries
// (Command.blocks).
var (
	// BLPOP BRPOP BZPOPMIN BZPOPMAX key [key …] timeout.
	listPopBlock = &blockSpec{kind: store.TypeList, timeout: lastArgTimeout, keys: keysBeforeTimeout}
	zsetPopBlock = &blockSpec{kind: store.TypeZSet, timeout: lastArgTimeout, keys: keysBeforeTimeout}
	// BLMPOP/BZMPOP timeout numkeys key [key …] ….
	listMPopBlock = &blockSpec{kind: store.TypeList, timeout: argAt(1), keys: numkeysKeys}
	zsetMPopBlock = &blockSpec{kind: store.TypeZSet, timeout: argAt(1), keys: numkeysKeys}
	// XREAD … BLOCK ms … STREAMS key [key …] id [id …]; XREADGROUP also
	// runs again when its group goes away.
	xreadBlock = &blockSpec{kind: store.TypeStream, timeout: xreadTimeoutArg(false), keys: xreadKeys(false),
		timeoutMs: true, prepare: xreadResolveDollar}
	xreadGroupBlock = &blockSpec{kind: store.TypeStream, timeout: xreadTimeoutArg(true), keys: xreadKeys(true),
		timeoutMs:     true,
		unblockOnGone: true}
)

// moveBlock: BLMOVE/BRPOPLPUSH wait on their source; the timeout is
// argument timeoutAt.
func moveBlock(timeoutAt int) *blockSpec {
	return &blockSpec{kind: store.TypeList, timeout: argAt(timeoutAt), keys: firstKey}
}

// argAt is a timeout at a fixed argument index.
func argAt(i int) func([][]byte) int { return func([][]byte) int { return i } }

// blocks makes cmd a blocking command that blocks as spec says.
func (cmd *Command) blocks(spec *blockSpec) *Command {
	cmd.block = spec
	return cmd
}

// xreadKeys: XREAD/XREADGROUP … STREAMS key [key …] id [id …].
func xreadKeys(group bool) func(args [][]byte) [][]byte {
	return func(args [][]byte) [][]byte {
		first, n := xreadStreams(args, group)
		return args[first : first+n]
	}
}

// xreadTimeoutArg: XREAD/XREADGROUP … BLOCK ms ….
func xreadTimeoutArg(group bool) func(args [][]byte) int {
	return func(args [][]byte) int { return xreadBlockArg(args, group) }
}

// xreadResolveDollar replaces each "$" ID of a blocking XREAD by its
// stream's last ID (0-0 if absent) at the moment it blocks, so that when it
// runs again it returns what was added since.
func xreadResolveDollar(c *Ctx, args [][]byte) [][]byte {
	first, n := xreadStreams(args, false)
	out := slices.Clone(args)
	for i := range n {
		if string(args[first+n+i]) != "$" {
			continue
		}
		var last store.StreamID
		if s, err := c.readStream(args[first+i]); err == nil && s != nil {
			last = s.LastID
		}
		out[first+n+i] = last.Append(nil)
	}
	return out
}

func blockSpecOf(name []byte) *blockSpec {
	if cmd := Lookup(name); cmd != nil {
		return cmd.block
	}
	return nil
}

// Blocking reports whether the command may block.
func (cmd *Command) Blocking() bool { return cmd.block != nil }

// BlocksOn reports whether args, a call of cmd with its arity checked, may
// block: a blocking command with its timeout argument (XREAD and
// XREADGROUP block only with BLOCK). XREAD is a read-only command, but with
// BLOCK it must be proposed to the log like a write so that it can wait
// there.
func (cmd *Command) BlocksOn(args [][]byte) bool {
	if cmd.block == nil {
		return false
	}
	ti := cmd.block.timeout(args)
	return ti > 0 && ti < len(args)
}

func isNullReply(v resp.Value) bool { return v.Kind == resp.KindNull || v.Kind == resp.KindNullArray }

// waiter is one blocked command.
type waiter struct {
	id       WaiterID
	term     uint64
	deadline int64
	args     [][]byte // owned copies
	keys     [][]byte // deduplicated, aliasing args
	kind     store.Type
	onGone   bool            // runs again when a key is deleted or changes type
	elems    []*list.Element // its place in each key's queue, in keys order
	removed  bool
}

// blockState holds the waiters: by id, and per key in FIFO order (which is
// also id order, since waiters are only ever appended and removed).
type blockState struct {
	waiters map[WaiterID]*waiter
	queues  map[string]*list.List // of *waiter
	gone    map[string]int        // keys with onGone waiters: how many
}

func newBlockState() blockState {
	return blockState{waiters: map[WaiterID]*waiter{}, queues: map[string]*list.List{}, gone: map[string]int{}}
}

// add queues w on each of its keys.
func (b *blockState) add(w *waiter) {
	b.waiters[w.id] = w
	w.elems = make([]*list.Element, len(w.keys))
	for i, k := range w.keys {
		q := b.queues[string(k)]
		if q == nil {
			q = list.New()
			b.queues[string(k)] = q
		}
		w.elems[i] = q.PushBack(w)
		if w.onGone {
			b.gone[string(k)]++
		}
	}
}

// remove takes w out of every queue.
func (b *blockState) remove(w *waiter) {
	if w.removed {
		return
	}
	w.removed = true
	delete(b.waiters, w.id)
	for i, k := range w.keys {
		q := b.queues[string(k)]
		q.Remove(w.elems[i])
		if q.Len() == 0 {
			delete(b.queues, string(k))
		}
		if w.onGone {
			if b.gone[string(k)]--; b.gone[string(k)] <= 0 {
				delete(b.gone, string(k))
			}
		}
	}
	w.elems = nil
}

// sorted lists the waiters in id order.
func (b *blockState) sorted() []*waiter {
	out := make([]*waiter, 0, len(b.waiters))
	for _, w := range b.waiters {
		out = append(out, w)
	}
	slices.SortFunc(out, func(x, y *waiter) int {
		switch {
		case x.id.less(y.id):
			return -1
		case y.id.less(x.id):
			return 1
		}
		return 0
	})
	return out
}

// newWaiter builds the waiter of args (a blocking command) or returns nil
// when it cannot block (bad timeout or keys: Run has answered with an
// error then, so this is only a safety net).
func newWaiter(spec *blockSpec, args [][]byte, id WaiterID, term uint64, now int64) *waiter {
	ti := spec.timeout(args)
	if ti <= 0 || ti >= len(args) {
		return nil
	}
	var deadline int64
	if spec.timeoutMs {
		t, err := resp.ParseInt(args[ti])
		if err != nil || t < 0 || (t > 0 && t > math.MaxInt64-now) {
			return nil
		}
		if t > 0 {
			deadline = now + t
		}
	} else if t, err := resp.ParseFloat(args[ti]); err != nil || t < 0 || math.IsNaN(t) {
		return nil
	} else if ms := math.Ceil(t * 1000); ms > 0 {
		if ms >= float64(math.MaxInt64-now) {
			return nil
		}
		deadline = now + int64(ms)
	}
	owned := make([][]byte, len(args))
	for i, a := range args {
		owned[i] = clone(a)
	}
	var keys [][]byte
	for _, k := range spec.keys(owned) {
		if !slices.ContainsFunc(keys, func(x []byte) bool { return string(x) == string(k) }) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return &waiter{id: id, term: term, deadline: deadline, args: owned, keys: keys, kind: spec.kind,
		onGone: spec.unblockOnGone}
}

// maybeBlock turns the null reply of a client's blocking command into a
// waiter and the outcome OutcomeBlocked.
func (s *State) maybeBlock(c *Ctx, args [][]byte, pos int, reply resp.Value, term uint64, res *ApplyResult) Outcome {
	if c.NoBlock || !isNullReply(reply) || len(args) == 0 {
		return Replied(reply)
	}
	spec := blockSpecOf(args[0])
	if spec == nil {
		return Replied(reply)
	}
	if spec.prepare != nil {
		args = spec.prepare(c, args)
	}
	w := newWaiter(spec, args, WaiterID{Index: c.Index, Pos: uint32(pos)}, term, c.Now)
	if w == nil {
		return Replied(reply)
	}
	s.blk.add(w)
	res.Blocked = append(res.Blocked, Blocked{ID: w.id, Term: w.term, Deadline: w.deadline})
	return blockedAs(w.id, reply)
}

// serveReady serves the waiters queued on the keys that gained elements
// (c.Ready), in FIFO order per key, until no key is left ready: a served
// BLMOVE may push to a key that has waiters of its own.
func (s *State) serveReady(c *Ctx, term uint64, res *ApplyResult) {
	if len(s.blk.waiters) == 0 {
		c.Ready = c.Ready[:0]
		return
	}
	s.readyGone(c)
	for len(c.Ready) > 0 {
		ready := c.Ready
		c.Ready = nil
		seen := make(map[string]bool, len(ready))
		for _, key := range ready {
			if seen[string(key)] {
				continue
			}
			seen[string(key)] = true
			s.serveKey(c, key, term, res)
		}
	}
}

// serveKey serves the waiters queued on key when it was found ready (not
// those that block again meanwhile), while key holds a value of their type.
func (s *State) serveKey(c *Ctx, key []byte, term uint64, res *ApplyResult) {
	q := s.blk.queues[string(key)]
	if q == nil {
		return
	}
	ws := make([]*waiter, 0, q.Len())
	for e := q.Front(); e != nil; e = e.Next() {
		ws = append(ws, e.Value.(*waiter))
	}
	for _, w := range ws {
		if w.removed {
			continue
		}
		if w.term != term {
			// Blocked under an earlier leader: only its own term may serve it.
			s.blk.remove(w)
			res.Deferred = append(res.Deferred, Deferred{ID: w.id, Outcome: Replied(resp.Err(ErrUnblocked))})
			continue
		}
		if w.deadline != 0 && w.deadline < c.Now {
			// Its timeout passed before this entry: it times out, as it
			// would have in Redis before the push was processed.
			s.blk.remove(w)
			res.Deferred = append(res.Deferred, Deferred{ID: w.id, Outcome: Replied(timeoutReply())})
			continue
		}
		o := c.get(key)
		if !w.onGone {
			if o == nil {
				continue // nothing to serve it with
			}
			if o.Type != w.kind {
				continue // e.g. a BZPOPMIN on a key that now holds a list
			}
		}
		if s.redirectWaiter(c.Now, w, res) {
			continue // its slot is migrating: it may not run here (migrate.go)
		}
		pos := c.pos
		c.pos = noPos // what it changes is not the current command's (tracking.go)
		v := run(c, w.args)
		c.pos = pos
		if isNullReply(v) {
			continue // still nothing for it: it keeps its place
		}
		s.blk.remove(w)
		res.Deferred = append(res.Deferred, Deferred{ID: w.id, Outcome: Replied(v)})
	}
}

// readyGone marks ready the keys of onGone waiters (XREADGROUP) that were
// deleted or no longer hold their type, so that those waiters run again
// and get their error, as Redis's signalDeletedKeyAsReady does.
func (s *State) readyGone(c *Ctx) {
	if len(s.blk.gone) == 0 {
		return
	}
	var keys []string
	for k := range s.blk.gone {
		if o := c.get([]byte(k)); o == nil || o.Type != store.TypeStream {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // map order must not reach the state
	for _, k := range keys {
		c.Ready = append(c.Ready, []byte(k))
	}
}

// unblock ends the waiters named by an EntryUnblock with the timeout reply.
func (s *State) unblock(ids [][]byte, res *ApplyResult) {
	for _, b := range ids {
		id, ok := ParseWaiterID(b)
		if !ok {
			continue
		}
		if w := s.blk.waiters[id]; w != nil {
			s.blk.remove(w)
			res.Deferred = append(res.Deferred, Deferred{ID: id, Outcome: Replied(timeoutReply())})
		}
	}
}

// clearWaiters drops every waiter blocked in a term before term.
func (s *State) clearWaiters(term uint64, res *ApplyResult) {
	for _, w := range s.blk.sorted() {
		if w.term < term {
			s.blk.remove(w)
			res.Deferred = append(res.Deferred, Deferred{ID: w.id, Outcome: Replied(resp.Err(ErrUnblocked))})
		}
	}
}

// Waiters lists the blocked commands, in id order.
func (s *State) Waiters() []Blocked {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return blockedOf(s.blk.sorted())
}

// BlockingStats are INFO's counts of a group's blocked commands: the keys
// some command waits on, those of them some command waits on to be
// deleted too (XREADGROUP's, Redis's unblock_on_nokey), and the waiting
// commands with a timeout.
type BlockingStats struct{ Keys, KeysOnNoKey, WithTimeout int }

// BlockingStats counts the group's blocked commands and their keys.
func (s *State) BlockingStats() BlockingStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := BlockingStats{Keys: len(s.blk.queues), KeysOnNoKey: len(s.blk.gone)}
	for _, w := range s.blk.waiters {
		if w.deadline != 0 {
			st.WithTimeout++
		}
	}
	return st
}

func blockedOf(ws []*waiter) []Blocked {
	out := make([]Blocked, len(ws))
	for i, w := range ws {
		out[i] = Blocked{ID: w.id, Term: w.term, Deadline: w.deadline}
	}
	return out
}

// waiterRecord is a waiter as a snapshot holds it.
type waiterRecord struct {
	id       WaiterID
	term     uint64
	deadline int64
	args     [][]byte
}

func recordsOf(ws []*waiter) []waiterRecord {
	out := make([]waiterRecord, len(ws))
	for i, w := range ws {
		out[i] = waiterRecord{id: w.id, term: w.term, deadline: w.deadline, args: w.args}
	}
	return out
}

// encodeWaiters renders the waiters section of a snapshot: uvarint count,
// then per waiter uvarint index, position and term, the deadline (8 bytes,
// big-endian) and the command as an entry encodes one.
func encodeWaiters(rs []waiterRecord) []byte {
	b := binary.AppendUvarint(nil, uint64(len(rs)))
	for _, r := range rs {
		b = binary.AppendUvarint(b, r.id.Index)
		b = binary.AppendUvarint(b, uint64(r.id.Pos))
		b = binary.AppendUvarint(b, r.term)
		b = binary.BigEndian.AppendUint64(b, uint64(r.deadline))
		b = binary.AppendUvarint(b, uint64(len(r.args)))
		for _, a := range r.args {
			b = binary.AppendUvarint(b, uint64(len(a)))
			b = append(b, a...)
		}
	}
	return b
}

var errBadWaiters = errors.New("fsm: bad waiters in snapshot")

// decodeWaiters parses encodeWaiters' output into a block state, checking
// every count against the input, the ids' order and each command.
func decodeWaiters(b []byte) (blockState, error) {
	bs := newBlockState()
	d := decoder{b: b}
	n, err := d.count("waiters")
	if err != nil {
		return bs, fmt.Errorf("%w: %w", errBadWaiters, err)
	}
	var prev WaiterID
	for i := range n {
		var r waiterRecord
		var pos uint64
		if r.id.Index, err = d.uvarint("index"); err == nil {
			if pos, err = d.uvarint("position"); err == nil && pos > math.MaxUint32 {
				err = errors.New("position out of range")
			}
		}
		if err == nil {
			r.term, err = d.uvarint("term")
		}
		if err == nil && d.remaining() < 8 {
			err = errors.New("truncated deadline")
		}
		if err != nil {
			return bs, fmt.Errorf("%w: waiter %d: %w", errBadWaiters, i, err)
		}
		r.id.Pos = uint32(pos)
		r.deadline = int64(binary.BigEndian.Uint64(d.b[d.off:]))
		d.off += 8
		if r.args, err = d.command(); err != nil {
			return bs, fmt.Errorf("%w: waiter %d: %w", errBadWaiters, i, err)
		}
		if i > 0 && !prev.less(r.id) {
			return bs, fmt.Errorf("%w: waiter %d: ids out of order", errBadWaiters, i)
		}
		prev = r.id
		if len(r.args) == 0 {
			return bs, fmt.Errorf("%w: waiter %d: empty command", errBadWaiters, i)
		}
		spec := blockSpecOf(r.args[0])
		if spec == nil {
			return bs, fmt.Errorf("%w: waiter %d: %q is not a blocking command", errBadWaiters, i, r.args[0])
		}
		w := &waiter{id: r.id, term: r.term, deadline: r.deadline, kind: spec.kind, onGone: spec.unblockOnGone}
		w.args = make([][]byte, len(r.args))
		for j, a := range r.args {
			w.args[j] = clone(a)
		}
		if spec.timeout(w.args) <= 0 || spec.timeout(w.args) >= len(w.args) {
			return bs, fmt.Errorf("%w: waiter %d: bad command", errBadWaiters, i)
		}
		for _, k := range spec.keys(w.args) {
			if !slices.ContainsFunc(w.keys, func(x []byte) bool { return string(x) == string(k) }) {
				w.keys = append(w.keys, k)
			}
		}
		if len(w.keys) == 0 {
			return bs, fmt.Errorf("%w: waiter %d: no keys", errBadWaiters, i)
		}
		bs.add(w)
	}
	if d.off != len(b) {
		return bs, fmt.Errorf("%w: %d trailing bytes", errBadWaiters, len(b)-d.off)
	}
	return bs, nil
}
