// Package fsm is the deterministic state machine of one slot group: the data
// commands (metadata and implementation, reads and writes alike), the
// log-entry codec, the processor that applies entries to a store (State, no
// Raft in it; it also owns the snapshot format, state_snapshot.go:
// State.Snapshot, Snapshot.WriteTo, State.ReadSnapshot) and the thin
// raft.FSM around it (FSM: Apply, Snapshot, Restore; raft.go and
// snapshot.go). It also holds the state machine's half of online slot
// migration: out-marks, frozen keys, the ASK/TRYAGAIN routing check and the
// freeze/import/drop ops (migrate.go), and Redis's Lua debugger (ldb*.go):
// a session runs an EVAL against a private copy of the state (DebugCopy),
// outside the log, talking to its client over a byte stream.
//
// What a command came to is a typed Outcome (outcome.go): a reply, "ask
// group G for slot S", "try again", or "blocked as waiter W"; Apply and
// reads return one per command, and nothing downstream decodes a reply to
// learn what happened.
//
// The command table (table.go) is the one source of what a command is:
// its metadata, its Run, a container's subcommands (resolved through
// resp.Command.SubcommandIndex), how a blocking command blocks
// (blocking.go), how a script command routes (Command.Script). Everything
// that needs such a fact reads it there.
//
// Outside fsm a group's state is read through Reader (reader.go), and the
// store through store.Reader: FSM.State hands out the read-only face, so
// only fsm holds a mutable State and Store.
//
// Rules every command follows, so that every replica computes the same state
// from the same log:
//   - time comes only from Ctx.Now (the entry's time, never decreasing) and
//     randomness only from Ctx.rand (seeded from the entry);
//   - no map iteration affects output, no goroutines, no clock;
//   - a command that fails (wrong type, bad argument) changes nothing;
//   - every change sets Object.Version to the log index and Object.Touched to
//     the entry's time;
//   - reads hide keys expired at Ctx.Now and never mutate.
//
// fsm is the only code that mutates a store.Store.
package fsm
