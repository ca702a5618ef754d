// Package fsm is the deterministic state machine of one slot group: the data
// commands (metadata and implementation, reads and writes alike), the
// log-entry codec, the processor that applies entries to a store (State, no
// Raft in it; it also owns the snapshot format, state_snapshot.go:
// State.Snapshot, Snapshot.WriteTo, State.ReadSnapshot) and the thin
// raft.FSM around it (FSM: Apply, Snapshot, Restore; raft.go and
// snapshot.go). It also holds the state machine's half of online slot
// migration: out-marks, frozen keys, the ASK/TRYAGAIN routing check and the
// freeze/import/drop ops (migrate.go).
//
// Rules every command follows, so that every replica computes the same state
// from the same log:
//   - time comes only from Ctx.Now (the entry's time, never decreasing) and
//     randomness only from Ctx.Rand (seeded from the entry);
//   - no map iteration affects output, no goroutines, no clock;
//   - a command that fails (wrong type, bad argument) changes nothing;
//   - every change sets Object.Version to the log index and Object.Touched to
//     the entry's time;
//   - reads hide keys expired at Ctx.Now and never mutate.
//
// fsm is the only code that mutates a store.Store.
package fsm
