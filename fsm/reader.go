package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Reader is the read-only face of a group's State. Everything outside fsm
// reads a group through it — linearizable and READONLY reads, WATCH, the
// node commands, the slot mover — while only fsm holds the mutable State
// (FSM.State returns a Reader). Every method takes the state's read lock.
type Reader interface {
	// Read runs a read-only command at time now.
	Read(now int64, cmd *Command, args [][]byte) Outcome
	// WatchesHold reports whether this group's watches of ws still see
	// what they saw (CLIENT LIST's flag d when not).
	WatchesHold(now int64, ws []Watch) bool
	// ReadWith is Read with options (a NO-TOUCH client's reads).
	ReadWith(now int64, cmd *Command, args [][]byte, opts ReadOpts) Outcome
	// DataBytes is the dataset's estimated size, without the lock.
	DataBytes() int64
	// Observe is what WATCH records of keys at time now.
	Observe(now int64, keys [][]byte) []Watch
	// View runs fn with the store, read-only, under the read lock.
	View(fn func(st store.Reader))
	// Cut takes a point-in-time copy of the keys (cut.go).
	Cut() *Cut
	// DebugCopy takes a private copy of the state for a Lua debugging
	// session (ldb_copy.go).
	DebugCopy() *DebugCopy
	// LastNow is the time of the last applied entry (unix ms).
	LastNow() int64
	// Setting is a group setting ("" if unset).
	Setting(key string) string
	// Waiters lists the blocked commands in id order.
	Waiters() []Blocked
	// BlockingStats counts the blocked commands and their keys.
	BlockingStats() BlockingStats

	ScriptCount() int
	HasScript(sha string) bool
	ScriptBody(sha string) ([]byte, bool)
	LibraryCount() int
	FunctionCount() int
	FunctionRead(op [][]byte) resp.Value
	FunctionStats() resp.Value
	FunctionDump() []byte
	FunctionApplied(op [][]byte) bool

	MigratingOut(slot uint16) (gid uint32, ok bool)
	OutSlots() map[uint16]uint32
	Frozen(slot uint16) [][]byte
	FrozenIn(keys [][]byte) bool
	FrozenChanged() <-chan struct{}
	LiveKeysInSlot(now int64, slot uint16, limit int) [][]byte
	ExportRecords(now int64, keys [][]byte) [][]byte
	MigratedKeys() uint64
}

var _ Reader = (*State)(nil)
