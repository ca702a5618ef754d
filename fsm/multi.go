package fsm

import (
	"encoding/binary"
	"fmt"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Transactions. The commands a client queued between MULTI and EXEC, and the
// keys it watched, travel as ONE internal command, "exec", of one log entry:
//
//	exec <payload>
//
// Apply runs it under the state lock like any command, so the transaction is
// atomic on every replica. It first checks the watched keys against what the
// client saw at WATCH time (a Watch each); if any changed, nothing runs and
// the reply is a null array. Otherwise every queued command runs in order
// with Ctx.NoBlock (blocking commands answer as their non-blocking form),
// a command's run-time error is its element of the reply array, and the
// others still run. Clients blocked on keys the transaction pushed to are
// served after it, as after any command.
//
// The "exec" data command is registered under Redis's name so that COMMAND
// shows the node command EXEC (the cluster's table prefers node commands);
// it is flagged noscript, and it refuses to run "exec" inside itself.

// Watch is one watched key as WATCH saw it on the leader's applied state.
type Watch struct {
	Key []byte
	// Present: the key existed (live) and Seq is its Object.Version.
	// Absent: Seq is the number of deletions its slot had seen
	// (store.SlotDeletions), so a key created and deleted since aborts.
	Present bool
	Seq     uint64
	// Group is the slot group whose state was read. Seq counts in that
	// group's log only, so the front end aborts EXEC in any other group
	// (the key's slot moved since). Not part of the exec payload: the log
	// format stays the same.
	Group uint32
}

// observe returns what a watch of key sees in st at time now.
func observe(st *store.Store, key []byte, now int64) Watch {
	w := Watch{Key: clone(key)}
	if o := st.Get(key, now); o != nil {
		w.Present, w.Seq = true, o.Version
	} else {
		w.Seq = st.SlotDeletions(slots.Of(key))
	}
	return w
}

// Observe is WATCH: what each key is now (time now, the leader's clock as
// for reads), under the read lock. Call it on a leader after a
// linearizable-read barrier.
func (s *State) Observe(now int64, keys [][]byte) []Watch {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now = max(now, s.lastNow)
	out := make([]Watch, len(keys))
	for i, k := range keys {
		out[i] = observe(s.store, k, now)
		out[i].Group = s.group
	}
	return out
}

// WatchesHold reports whether the watches of ws taken in this group still
// see what they saw (EXEC would run), at time now under the read lock; the
// watches of other groups are not looked at.
func (s *State) WatchesHold(now int64, ws []Watch) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now = max(now, s.lastNow)
	for _, w := range ws {
		if w.Group == s.group && !w.same(observe(s.store, w.Key, now)) {
			return false
		}
	}
	return true
}

// same reports whether a watch still sees what it saw: same presence and
// version (present) or deletion count (absent). A key that expired since
// WATCH is absent now, so it counts as changed, as in Redis 7.
func (w Watch) same(o Watch) bool { return w.Present == o.Present && w.Seq == o.Seq }

// execVersion is the first byte of an exec payload.
const execVersion = 1

// ExecName is the internal command that carries a transaction.
const ExecName = "exec"

// ExecCommand builds the "exec" command of a transaction: the watches and
// the queued commands (each name and arguments).
func ExecCommand(watches []Watch, cmds [][][]byte) [][]byte {
	return [][]byte{[]byte(ExecName), EncodeExec(watches, cmds)}
}

// EncodeExec renders an exec payload: version byte; uvarint number of
// watches, per watch uvarint key length and key, one byte (1 present, 0
// absent) and uvarint Seq; uvarint number of commands, per command uvarint
// number of arguments and per argument uvarint length and bytes.
func EncodeExec(watches []Watch, cmds [][][]byte) []byte {
	size := 1 + 2*binary.MaxVarintLen64
	for _, w := range watches {
		size += 1 + 2*binary.MaxVarintLen64 + len(w.Key)
	}
	for _, c := range cmds {
		size += binary.MaxVarintLen64
		for _, a := range c {
			size += binary.MaxVarintLen64 + len(a)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, execVersion)
	b = binary.AppendUvarint(b, uint64(len(watches)))
	for _, w := range watches {
		b = binary.AppendUvarint(b, uint64(len(w.Key)))
		b = append(b, w.Key...)
		if w.Present {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, w.Seq)
	}
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, c := range cmds {
		b = binary.AppendUvarint(b, uint64(len(c)))
		for _, a := range c {
			b = binary.AppendUvarint(b, uint64(len(a)))
			b = append(b, a...)
		}
	}
	return b
}

// DecodeExec parses EncodeExec's output, checking every count and length
// against the input (nothing is allocated from an unchecked count); a
// command with no arguments, non-minimal varints and trailing bytes are
// refused, so a decoded payload encodes back to the same bytes. Keys and
// arguments alias b.
func DecodeExec(b []byte) ([]Watch, [][][]byte, error) {
	if len(b) == 0 || b[0] != execVersion {
		return nil, nil, fmt.Errorf("%w: exec payload: bad version", ErrBadEntry)
	}
	d := decoder{b: b, off: 1}
	nw, err := d.count("watches")
	if err != nil {
		return nil, nil, fmt.Errorf("exec payload: %w", err)
	}
	watches := make([]Watch, nw)
	for i := range watches {
		key, err := d.bytes("key bytes")
		if err != nil {
			return nil, nil, fmt.Errorf("exec payload: watch %d: %w", i, err)
		}
		if d.remaining() < 1 || d.b[d.off] > 1 {
			return nil, nil, fmt.Errorf("%w: exec payload: watch %d: bad presence byte", ErrBadEntry, i)
		}
		present := d.b[d.off] == 1
		d.off++
		seq, err := d.uvarint("watch sequence")
		if err != nil {
			return nil, nil, fmt.Errorf("exec payload: watch %d: %w", i, err)
		}
		watches[i] = Watch{Key: key, Present: present, Seq: seq}
	}
	nc, err := d.count("commands")
	if err != nil {
		return nil, nil, fmt.Errorf("exec payload: %w", err)
	}
	cmds := make([][][]byte, nc)
	for i := range cmds {
		if cmds[i], err = d.command(); err != nil {
			return nil, nil, fmt.Errorf("exec payload: command %d: %w", i, err)
		}
		if len(cmds[i]) == 0 {
			return nil, nil, fmt.Errorf("%w: exec payload: command %d is empty", ErrBadEntry, i)
		}
	}
	if d.off != len(b) {
		return nil, nil, fmt.Errorf("%w: exec payload: %d trailing bytes", ErrBadEntry, len(b)-d.off)
	}
	return watches, cmds, nil
}

var errExecNested = resp.NewError("ERR EXEC is not allowed inside a transaction")

// runExec is the "exec" command (see the top of this file).
func runExec(c *Ctx, args [][]byte) resp.Value {
	watches, cmds, err := DecodeExec(args[1])
	if err != nil {
		return errf("ERR %v", err)
	}
	for _, w := range watches {
		if !w.same(observe(c.Store, w.Key, c.Now)) {
			return resp.NullArray()
		}
	}
	noBlock := c.NoBlock
	c.NoBlock = true
	defer func() { c.NoBlock = noBlock }()
	replies := make([]resp.Value, len(cmds))
	for i, cmd := range cmds {
		if eq(cmd[0], ExecName) {
			replies[i] = resp.Err(errExecNested)
			continue
		}
		replies[i] = run(c, cmd)
	}
	return resp.Array(replies...)
}

func init() {
	register(commandsOf("transactions")("exec", 2, fW|resp.FlagNoScript|resp.FlagLoading|resp.FlagStale|resp.FlagSkipSlowlog,
		0, 0, 0, []string{"slow", "transaction"}, "1.2.0",
		"Executes all commands in a transaction.", "Depends on commands in the transaction", runExec))
}
