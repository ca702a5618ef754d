package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// EntryType says what a log entry asks the state machine to do.
type EntryType uint8

// IgnoreUnknown marks an entry type that an older node which does not know it
// may skip; an unknown type without it stops the node.
const IgnoreUnknown EntryType = 0x80

// Entry types.
const (
	EntryCommands EntryType = 1 // Cmds are commands (name and arguments) run in order, atomically
	EntryExpire   EntryType = 2 // Cmds[0] are keys to delete if expired at Now (active expiry)

	// Blocking commands (blocking.go). Both may be skipped by a node that
	// does not know them: such a node never blocks, so it has no waiters.

	// EntryUnblock: Cmds[0] are encoded WaiterIDs (AppendWaiterID) whose
	// deadline passed or whose client went away; each still waiting gets
	// the timeout reply.
	EntryUnblock EntryType = 3 | IgnoreUnknown
	// EntryClearWaiters drops every waiter blocked in an earlier Raft term
	// than the entry's own: a new leader proposes it, since those waiters'
	// clients were connected to an earlier leader.
	EntryClearWaiters EntryType = 4 | IgnoreUnknown

	// EntryFunctions: Cmds are FUNCTION write subcommands, each as the
	// client sent it without the container name ("load" [REPLACE] code,
	// "delete" name, "flush" [ASYNC|SYNC], "restore" payload [policy]), one
	// reply each (function.go). A node that does not know it must stop:
	// skipping it would leave that replica without the libraries. Another
	// format would be another entry type.
	EntryFunctions EntryType = 5

	// EntrySettings: Cmds are [key, value] pairs of group settings
	// (settings.go). A node that does not know it may skip it: settings
	// steer the cluster (the preferred leader), not the data.
	EntrySettings EntryType = 6 | IgnoreUnknown

	// EntryMigrate: Cmds are slot-migration ops ("out", "in", "freeze",
	// "drop", "import"), one reply each (migrate.go). A node that does not
	// know it must stop: skipping it would leave that replica with other
	// keys and other routing.
	EntryMigrate EntryType = 7

	// EntryEvict: Cmds are [key, version] pairs (EvictOp) that the leader
	// chose to evict under maxmemory; each is deleted if it still has that
	// version, one reply each (1 evicted, 0 not). A node that does not
	// know it must stop: skipping it would leave that replica with keys
	// the others deleted.
	EntryEvict EntryType = 8

	// EntryCommandsAs is EntryCommands whose scripts call commands as a
	// user with restricted permissions: Cmds[0] is [Entry.User], the rest
	// the commands. It is only the encoding: a decoded entry has Type
	// EntryCommands and User set. A node that does not know it must stop:
	// skipping it would leave that replica without the writes.
	EntryCommandsAs EntryType = 9
)

// Entry is one Raft log entry of a slot group.
type Entry struct {
	Type EntryType
	Now  int64  // unix ms chosen by the leader
	Seed uint64 // seed of the entry's randomness
	Cmds [][][]byte
	// User, for EntryCommands, is the permissions (acl.User.Perms) that
	// the scripts the commands run call commands with; nil for a user
	// allowed everything, whose calls are not checked.
	User []byte
	// Term is the Raft term the entry was proposed in. It is not encoded:
	// FSM.Apply sets it from the log, so it is the same on every replica.
	Term uint64
}

// entryVersion is the first byte of every encoded entry.
const entryVersion = 1

// headerLen: version, type, Now, Seed.
const headerLen = 1 + 1 + 8 + 8

// ErrBadEntry is wrapped by every DecodeEntry error.
var ErrBadEntry = errors.New("fsm: bad log entry")

// Encode renders e as: version byte, type byte, Now and Seed (8 bytes each,
// big-endian), uvarint number of commands, then per command a uvarint number
// of arguments and per argument a uvarint length and the bytes.
//
// An EntryCommands entry with a User is encoded as EntryCommandsAs, the
// user as a first command of one argument.
func (e *Entry) Encode() []byte {
	typ, cmds := e.Type, e.Cmds
	if e.Type == EntryCommands && e.User != nil {
		typ, cmds = EntryCommandsAs, append([][][]byte{{e.User}}, e.Cmds...)
	}
	size := headerLen + binary.MaxVarintLen64
	for _, cmd := range cmds {
		size += binary.MaxVarintLen64
		for _, a := range cmd {
			size += binary.MaxVarintLen64 + len(a)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, entryVersion, byte(typ))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Now))
	b = binary.BigEndian.AppendUint64(b, e.Seed)
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	for _, cmd := range cmds {
		b = binary.AppendUvarint(b, uint64(len(cmd)))
		for _, a := range cmd {
			b = binary.AppendUvarint(b, uint64(len(a)))
			b = append(b, a...)
		}
	}
	return b
}

// DecodeEntry parses an encoded entry. Every count and length is checked
// against the bytes that remain before anything is allocated from it;
// non-minimal varints and trailing bytes are refused, so a decoded entry
// encodes back to the same bytes. Arguments alias b.
func DecodeEntry(b []byte) (*Entry, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrBadEntry, len(b), headerLen)
	}
	if b[0] != entryVersion {
		return nil, fmt.Errorf("%w: format version %d, want %d", ErrBadEntry, b[0], entryVersion)
	}
	e := &Entry{
		Type: EntryType(b[1]),
		Now:  int64(binary.BigEndian.Uint64(b[2:])),
		Seed: binary.BigEndian.Uint64(b[10:]),
	}
	d := decoder{b: b, off: headerLen}
	ncmd, err := d.count("commands")
	if err != nil {
		return nil, err
	}
	e.Cmds = make([][][]byte, ncmd)
	for i := range e.Cmds {
		if e.Cmds[i], err = d.command(); err != nil {
			return nil, fmt.Errorf("command %d: %w", i, err)
		}
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	if e.Type == EntryCommandsAs {
		if len(e.Cmds) == 0 || len(e.Cmds[0]) != 1 || e.Cmds[0][0] == nil {
			return nil, fmt.Errorf("%w: a commands-as entry without its user", ErrBadEntry)
		}
		e.Type, e.User, e.Cmds = EntryCommands, e.Cmds[0][0], e.Cmds[1:]
	}
	return e, nil
}
