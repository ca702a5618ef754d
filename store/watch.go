package store

import (
	"fmt"
	"slices"
)

// Support for WATCH. A watched key that exists is checked by its Object's
// Version (the log index of its last change). A watched key that does not
// exist leaves no object to compare, and a key created and deleted between
// WATCH and EXEC must still abort the transaction (Redis touches watched keys
// on every change). So the store counts, per slot, the deletions it has seen:
// WATCH records the count of an absent key's slot, and EXEC aborts if the
// count moved. It is conservative: a deletion of any other key of the slot
// (or of an already expired leftover) aborts too.
//
// The counts are replicated state: they change only in Apply (Delete, Flush),
// they are part of every snapshot (a record with tag delsTag, written only
// when some count is not zero) and Restore brings them back, so every replica
// decides a WATCH the same way, even one restored from a snapshot.

// delsTag is the record tag of the deletion counts in a snapshot. A binary
// that predates it stops with "unknown value type" (ErrUnsupported).
const delsTag = 0xFE

// delCounts holds the deletion counts. The array is shared with the Views
// taken since it was last copied (copy on the first write after a Snapshot).
type delCounts struct {
	n   *[slotCount]uint64 // nil: no deletion yet
	gen uint64             // Store generation the array belongs to
}

// noteDelete counts a deletion in slot.
func (s *Store) noteDelete(slot uint16) {
	d := &s.dels
	switch {
	case d.n == nil:
		d.n = new([slotCount]uint64)
	case d.gen != s.gen:
		cp := *d.n
		d.n = &cp
	}
	d.gen = s.gen
	d.n[slot]++
}

// noteFlush counts one deletion in every slot that held keys (before the
// flush): FLUSHALL touches every watched key.
func (s *Store) noteFlush(counts *[slotCount]int32) {
	for slot, n := range counts {
		if n > 0 {
			s.noteDelete(uint16(slot))
		}
	}
}

// SlotDeletions returns how many deletions slot has seen (for WATCH on a key
// that does not exist).
func (s *Store) SlotDeletions(slot uint16) uint64 {
	if s.dels.n == nil || int(slot) >= slotCount {
		return 0
	}
	return s.dels.n[slot]
}

// snapshotDels is the counts for a View (shared, copied on the next write).
func (s *Store) snapshotDels() *[slotCount]uint64 { return s.dels.n }

// writeDels writes the deletion-count record (nothing if every count is 0):
// tag, uvarint number of slots, then per slot in increasing order uvarint
// slot and uvarint count.
func (e *encoder) writeDels(n *[slotCount]uint64) {
	if n == nil {
		return
	}
	var nz []uint16
	for slot, v := range n {
		if v != 0 {
			nz = append(nz, uint16(slot))
		}
	}
	if len(nz) == 0 {
		return
	}
	e.tag(delsTag)
	e.uvarint(uint64(len(nz)))
	for _, slot := range nz {
		e.uvarint(uint64(slot))
		e.uvarint(n[slot])
	}
}

// readDels reads the deletion-count record into st (after its tag): every
// slot in range, increasing, with a count above zero; at most one record.
func (d *decoder) readDels(st *Store) error {
	if st.dels.n != nil {
		return fmt.Errorf("%w: two deletion-count records", ErrCorrupt)
	}
	count, err := d.uvarint()
	if err != nil {
		return fmt.Errorf("deletion counts: %w", err)
	}
	if count == 0 || count > slotCount {
		return fmt.Errorf("%w: %d slots in the deletion counts", ErrCorrupt, count)
	}
	n := new([slotCount]uint64)
	prev := -1
	for range count {
		slot, err := d.uvarint()
		if err != nil {
			return fmt.Errorf("deletion counts: %w", err)
		}
		if slot >= slotCount || int(slot) <= prev {
			return fmt.Errorf("%w: deletion counts: slot %d out of order or range", ErrCorrupt, slot)
		}
		v, err := d.uvarint()
		if err != nil {
			return fmt.Errorf("deletion counts: %w", err)
		}
		if v == 0 {
			return fmt.Errorf("%w: deletion counts: zero count for slot %d", ErrCorrupt, slot)
		}
		n[slot] = v
		prev = int(slot)
	}
	st.dels = delCounts{n: n, gen: st.gen}
	return nil
}

// deletionSlots lists the slots with a non-zero count (tests).
func (s *Store) deletionSlots() []uint16 {
	var out []uint16
	if s.dels.n == nil {
		return out
	}
	for slot, v := range s.dels.n {
		if v != 0 {
			out = append(out, uint16(slot))
		}
	}
	return slices.Clip(out)
}
