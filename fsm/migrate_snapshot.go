package fsm

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/slotraft/slotraft/slots"
)

// The migration section of a snapshot (see migrate.go and state_snapshot.go).

// maxMigrationLen bounds the migration section of a snapshot.
const maxMigrationLen = 1 << 30

// migrationSection is the migration state's section, under the read lock.
func (s *State) migrationSection() []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mig.section()
}

// section encodes the migration state for a snapshot (it is small: the
// out-marks, one batch of frozen keys, the fences): uvarint number of
// out-marks, then per mark in slot order uvarint slot and uvarint group;
// uvarint number of frozen keys, then each (in slot, then byte order) as
// uvarint length and bytes; uvarint number of fences, then per fence in
// (slot, group) order uvarint slot, group, term and sequence; uvarint
// migrated.
func (m *migration) section() []byte {
	b := m.appendOutMarks(nil)
	b = m.appendFrozen(b)
	b = m.appendFences(b)
	return binary.AppendUvarint(b, m.migrated)
}

func (m *migration) appendOutMarks(b []byte) []byte {
	outs := slices.Sorted(maps.Keys(m.out))
	b = binary.AppendUvarint(b, uint64(len(outs)))
	for _, slot := range outs {
		b = binary.AppendUvarint(b, uint64(slot))
		b = binary.AppendUvarint(b, uint64(m.out[slot]))
	}
	return b
}

func (m *migration) appendFrozen(b []byte) []byte {
	var keys [][]byte
	for _, slot := range slices.Sorted(maps.Keys(m.frozen)) {
		keys = append(keys, m.sortedFrozen(slot)...)
	}
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
	}
	return b
}

func (m *migration) appendFences(b []byte) []byte {
	keys := slices.SortedFunc(maps.Keys(m.fences), compareFenceKeys)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		f := m.fences[k]
		for _, v := range []uint64{uint64(k.slot), uint64(k.from), f.term, f.seq} {
			b = binary.AppendUvarint(b, v)
		}
	}
	return b
}

// readMigrationSection reads the migration section of a snapshot.
func readMigrationSection(r io.Reader) (migration, error) {
	b, err := readChecked(r, "migration", maxMigrationLen)
	if err != nil {
		return migration{}, err
	}
	m, err := decodeMigration(b)
	if err != nil {
		return migration{}, fmt.Errorf("%w: migration: %w", ErrBadSnapshot, err)
	}
	return m, nil
}

// decodeMigration parses migrationSection's encoding, refusing what it
// never writes: slots out of range or order, group ids over 32 bits,
// frozen keys out of order or of a slot without out-mark, fences out of
// order, trailing bytes.
func decodeMigration(b []byte) (migration, error) {
	d := decoder{b: b}
	m := migration{out: map[uint16]uint32{}, frozen: map[uint16]map[string]struct{}{}, fences: map[fenceKey]fence{}}
	n, err := d.count("out-marks")
	if err != nil {
		return m, err
	}
	prev := -1
	for i := range n {
		slot, gid, err := d.outMark()
		if err == nil && int(slot) <= prev {
			err = fmt.Errorf("%w: slot %d out of order", ErrBadEntry, slot)
		}
		if err != nil {
			return m, fmt.Errorf("out-mark %d: %w", i, err)
		}
		m.out[slot], prev = gid, int(slot)
	}
	if err := d.frozenKeys(&m); err != nil {
		return m, err
	}
	if err := d.fences(&m); err != nil {
		return m, err
	}
	if m.migrated, err = d.uvarint("migrated"); err != nil {
		return m, err
	}
	if d.remaining() != 0 {
		return m, fmt.Errorf("%w: %d trailing bytes", ErrBadEntry, d.remaining())
	}
	return m, nil
}

// outMark reads a slot and a group id (of an out-mark or a fence).
func (d *decoder) outMark() (uint16, uint32, error) {
	slot, err := d.uvarint("slot")
	if err != nil {
		return 0, 0, err
	}
	gid, err := d.uvarint("group")
	if err != nil {
		return 0, 0, err
	}
	if slot >= slots.Count || gid > math.MaxUint32 {
		return 0, 0, fmt.Errorf("%w: slot %d or group %d out of range", ErrBadEntry, slot, gid)
	}
	return uint16(slot), uint32(gid), nil
}

// frozenKeys reads the frozen keys into m: each of an out-marked slot, in
// (slot, key) order, none twice.
func (d *decoder) frozenKeys(m *migration) error {
	n, err := d.count("frozen keys")
	if err != nil {
		return err
	}
	var prevSlot uint16
	var prevKey []byte
	for i := range n {
		k, err := d.bytes("frozen key")
		if err != nil {
			return fmt.Errorf("frozen key %d: %w", i, err)
		}
		slot := slots.Of(k)
		if _, out := m.out[slot]; !out {
			return fmt.Errorf("%w: frozen key %d: slot %d is not migrating out", ErrBadEntry, i, slot)
		}
		if i > 0 && (slot < prevSlot || (slot == prevSlot && bytes.Compare(k, prevKey) <= 0)) {
			return fmt.Errorf("%w: frozen key %d out of order", ErrBadEntry, i)
		}
		if m.frozen[slot] == nil {
			m.frozen[slot] = map[string]struct{}{}
		}
		m.frozen[slot][string(k)] = struct{}{}
		prevSlot, prevKey = slot, k
	}
	return nil
}

// fences reads the import fences into m, in (slot, group) order.
func (d *decoder) fences(m *migration) error {
	n, err := d.count("fences")
	if err != nil {
		return err
	}
	var prev fenceKey
	for i := range n {
		slot, from, err := d.outMark()
		if err != nil {
			return fmt.Errorf("fence %d: %w", i, err)
		}
		var f fence
		if f.term, err = d.uvarint("term"); err == nil {
			f.seq, err = d.uvarint("sequence")
		}
		if err != nil {
			return fmt.Errorf("fence %d: %w", i, err)
		}
		k := fenceKey{slot: slot, from: from}
		if i > 0 && compareFenceKeys(prev, k) >= 0 {
			return fmt.Errorf("%w: fence %d out of order", ErrBadEntry, i)
		}
		m.fences[k], prev = f, k
	}
	return nil
}

func compareFenceKeys(a, b fenceKey) int {
	if c := cmp.Compare(a.slot, b.slot); c != 0 {
		return c
	}
	return cmp.Compare(a.from, b.from)
}

// installMigration installs a restored migration state (under the write
// lock).
func (s *State) installMigration(m migration) {
	m.changed = s.mig.changed
	s.mig = m
	s.outMarks.Store(int32(len(m.out)))
	s.mig.frozenChanged() // the frozen keys may differ: let waiters look again
}
