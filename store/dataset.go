package store

import "unsafe"

// The dataset's bytes: what maxmemory is compared with (INFO's
// used_memory_dataset). Every record contributes its own estimate, the
// same one MEMORY USAGE gives, and the store keeps their sum, so a key's
// deletion takes away exactly what its storing added and the sum never
// drifts. A collection changed in place is estimated again when its
// change is recorded (Account), by sampling as MEMORY USAGE does.

// expiryBytes is what the expiry index pays per key with a deadline.
const expiryBytes = int64(unsafe.Sizeof(expiry{})) + treeSlot

// memBytes is r's contribution to the dataset.
func (r *record) memBytes() int64 {
	n := entryBytes + recordBytes + int64(cap(r.key))
	if r.expireAt() != 0 {
		n += expiryBytes
	}
	if !r.inline() {
		n += objectBytes + r.obj.mem
	}
	return n
}

// DataBytes is the estimated size of the stored keys and values.
func (s *Store) DataBytes() int64 { return s.bytes }

// Account estimates again the value of o, key's stored Object changed in
// place (one returned by Mutable), and moves the dataset's size by the
// difference. An o that is not key's stored Object changes nothing.
func (s *Store) Account(key []byte, o *Object) {
	if e, ok := s.find(key); !ok || e.r.obj != o {
		return
	}
	v := valueBytes(o, DefaultUsageSamples)
	s.bytes += v - o.mem
	o.mem = v
}

// estimate sets a new Object's value estimate before it is stored.
func estimate(o *Object) {
	if !inlinable(o) {
		o.mem = valueBytes(o, DefaultUsageSamples)
	}
}
