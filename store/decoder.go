package store

import (
	"encoding/binary"
	"fmt"
)

// Decoder reads a uvarint-framed encoding held in memory: fsm's log entries
// and snapshot sections, and any payload made of uvarints, counts,
// length-prefixed byte strings and single bytes. It is the in-memory
// counterpart of the snapshot stream's reader (persist.go), which cannot
// know how many bytes remain.
//
// A count or length is checked against the bytes that remain before the
// caller can allocate from it, and non-minimal varints are refused, so
// whatever decodes encodes back to the same bytes. Every error wraps the
// sentinel given to NewDecoder, and a read that fails consumes nothing.
// Byte strings alias the input.
type Decoder struct {
	b   []byte
	off int
	bad error
}

// NewDecoder returns a Decoder of b starting at off (0 <= off <= len(b):
// the bytes before it are a header the caller has read). Its errors wrap
// bad and give offsets into b.
func NewDecoder(b []byte, off int, bad error) *Decoder {
	return &Decoder{b: b, off: off, bad: bad}
}

// Offset is where the next read starts.
func (d *Decoder) Offset() int { return d.off }

// Remaining is the number of bytes not read yet.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Uvarint reads a minimal uvarint; what names it in errors.
func (d *Decoder) Uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad %s varint at offset %d", d.bad, what, d.off)
	}
	if n != uvarintLen(v) {
		return 0, fmt.Errorf("%w: non-minimal %s varint at offset %d", d.bad, what, d.off)
	}
	d.off += n
	return v, nil
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}

// Count reads a number of items that take at least one byte each, so it
// cannot exceed the bytes that remain: a lying count fails here rather
// than in the caller's make.
func (d *Decoder) Count(what string) (int, error) {
	start := d.off
	n, err := d.Uvarint(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(d.Remaining()) {
		err = fmt.Errorf("%w: %d %s but %d bytes left", d.bad, n, what, d.Remaining())
		d.off = start
		return 0, err
	}
	return int(n), nil
}

// Bytes reads a byte string behind its uvarint length. The result aliases
// the input, with its capacity cut to its length so an append cannot
// overwrite what follows.
func (d *Decoder) Bytes(what string) ([]byte, error) {
	n, err := d.Count(what)
	if err != nil {
		return nil, err
	}
	b := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return b, nil
}

// Byte reads one byte.
func (d *Decoder) Byte(what string) (byte, error) {
	if d.Remaining() < 1 {
		return 0, fmt.Errorf("%w: no %s byte at offset %d", d.bad, what, d.off)
	}
	c := d.b[d.off]
	d.off++
	return c, nil
}

// End reports bytes left after the last read as an error.
func (d *Decoder) End() error {
	if n := d.Remaining(); n != 0 {
		return fmt.Errorf("%w: %d trailing bytes", d.bad, n)
	}
	return nil
}
