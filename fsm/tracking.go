package fsm

import (
	"bytes"

	"github.com/slotraft/slotraft/resp"
)

// Client-side caching (Redis's tracking.c) needs two things from the state
// machine, which knows nothing of clients:
//
//   - the keys each entry changed, at Redis's signalModifiedKey points (a
//     write's keys, active and lazy expiry, eviction, slot migration's
//     drops and imports) and its flushes (FLUSHALL, FLUSHDB, a restore from
//     a snapshot);
//   - the keys read by the read-only commands that ran inside an entry (a
//     transaction's, a script's redis.call, a blocking read's), which Redis
//     remembers for the client that ran them (trackingRememberKeys).
//
// Both are TouchedKeys, in the order they happened, each with the position
// of the entry's command it came from (so that the node can tell which of
// its clients proposed it: NOLOOP, and whose reads they were). They are
// collected only when the node says some client tracks keys
// (FSM.SetTrackHook), asked once per entry: otherwise c.modified is one
// test of a bool and writes pay nothing more. Reads served outside the log
// collect their read keys the same way when ReadOpts.Tracked is set.

// TouchKind is what happened to a TouchedKey.
type TouchKind uint8

// The kinds.
const (
	KeyModified TouchKind = iota // the key changed or was deleted
	KeyRead                      // a read-only command read it
	KeysFlushed                  // every key of the group was deleted (Key is nil)
)

// TouchedKey is one key an entry changed or read.
type TouchedKey struct {
	Kind TouchKind
	Key  []byte // a copy owned by the report; nil for KeysFlushed
	// Pos is the position in the entry of the command it came from, -1
	// when no command did it (active or lazy expiry, eviction, migration,
	// a restore).
	Pos int32
}

// noPos is Pos for what no client's command did.
const noPos = -1

// modified records that key changed (Redis's signalModifiedKey), and
// counts the change when a command made it and the entry counts (only a
// group's leader asks: followers skip the key copy).
func (c *Ctx) modified(key []byte) {
	if c.notifyOn&NotifyCount != 0 && c.pos != noPos &&
		(c.dirtyPos != c.pos || c.dirtyKey == nil || !bytes.Equal(c.dirtyKey, key)) {
		c.dirty++
		c.dirtyPos, c.dirtyKey = c.pos, append(c.dirtyKey[:0], key...)
	}
	if c.trackOn {
		c.Touched = append(c.Touched, TouchedKey{Kind: KeyModified, Key: clone(key), Pos: c.pos})
	}
}

// expiredGone records that an expired leftover of key was deleted on its
// way (Redis's deleteExpiredKeyAndPropagate: no client did it).
func (c *Ctx) expiredGone(key []byte) {
	if c.trackOn {
		c.Touched = append(c.Touched, TouchedKey{Kind: KeyModified, Key: clone(key), Pos: noPos})
	}
}

// flushed records that the whole keyspace of the group was deleted.
func (c *Ctx) flushed() {
	c.dirty++
	if c.trackOn {
		c.Touched = append(c.Touched, TouchedKey{Kind: KeysFlushed, Pos: c.pos})
	}
}

// remove deletes key, recording the change if there was one.
func (c *Ctx) remove(key []byte) {
	if c.Store.Delete(key) {
		c.modified(key)
	}
}

// readBy records, after cmd ran with args, the keys Redis remembers for
// a tracking client: those of a read-only command, but not of the
// read-only script commands (only the commands their scripts call) nor of
// pub/sub commands (shard channels are not keys to cache).
func (c *Ctx) readBy(cmd *Command, args [][]byte) {
	if !c.trackOn {
		return
	}
	m := cmd.Meta
	if m.Flags&resp.FlagReadOnly == 0 || m.Flags&resp.FlagPubSub != 0 || cmd.Script != nil {
		return
	}
	for _, k := range m.KeysOf(args) {
		c.Touched = append(c.Touched, TouchedKey{Kind: KeyRead, Key: clone(k), Pos: c.pos})
	}
}

// readKeys are the KeyRead keys of touched.
func readKeys(touched []TouchedKey) [][]byte {
	var out [][]byte
	for _, t := range touched {
		if t.Kind == KeyRead {
			out = append(out, t.Key)
		}
	}
	return out
}

// SetTrackHook makes Apply report the keys each entry touched: on is asked
// once per entry whether to collect them (false, with no client tracking
// keys on the node, collects nothing at no cost), and fn receives, in
// Apply, the entry's seed (which identifies the proposal on its leader)
// and what it touched, when it touched something. A restore from a
// snapshot reports a flush. Call it before Raft starts.
func (f *FSM) SetTrackHook(on func() bool, fn func(seed uint64, touched []TouchedKey)) {
	f.state.trackOn = on
	f.track = fn
}

// tracking reports whether the next entry collects touched keys.
func (s *State) tracking() bool { return s.trackOn != nil && s.trackOn() }
