// Package store holds the keyspace of one slot group: every key with its
// value Object, ordered by (slot, 48-bit hash of the key, key), with a
// per-slot key count, an expiry index ordered by (ExpireAt, key), SCAN
// cursors, cheap point-in-time Views, writable copy-on-write copies (Fork,
// for Lua debugging sessions) and the streaming snapshot format
// (View.WriteTo, Store.Restore). Decoder (decoder.go) is the one
// bounds-checked reader of in-memory uvarint-framed encodings, used by fsm's
// log entries and snapshot sections and by the cluster's bus payloads;
// Object.ExpiredAt is the one definition of an expired key.
//
// Concurrency. A Store is not safe for concurrent use: the state machine
// (package fsm) is its only writer and serialises every access with its own
// RWMutex; everyone else reads a Store through Reader (reader.go), its
// read-only face, under fsm's read lock. Snapshot must be called under the write lock: it is O(1), but it
// marks the live tree so that later writes copy the nodes they touch.
//
// Layout (entry.go). The key tree holds a cursor and a pointer to a record
// per key. A small string (up to 256 bytes) is stored inline: key, value
// and deadline in one allocation, its Version and Touched in the record, no
// Object; Get returns a new Object for it on every call. Every other value
// keeps its *Object. The expiry index points at the same records.
//
// Immutability and copy-on-write. A record, an Object and a key, once
// stored, are never modified: a mutation builds a new *Object and Puts it,
// which stores a new record. Snapshot shares the key tree with the live
// Store (tidwall/btree copy-on-write: after Copy both trees clone a shared
// node before their first write to it), so a View can be read — for example
// streamed to disk by View.WriteTo — from another goroutine while the state
// machine keeps mutating the Store. Slices returned by the Store (keys,
// Object.Str) are shared and must not be modified.
//
// Time. Nothing here reads the clock: operations that depend on expiry take
// the time (unix milliseconds) as an argument, so every replica computes the
// same result from the same log.
package store
