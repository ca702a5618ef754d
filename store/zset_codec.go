package store

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Sorted-set snapshot record value:
//
//	flags    byte: bit 0 = skiplist encoding (Redis never converts back)
//	count    uvarint
//	member*  uvarint length + bytes, then the score as 8 bytes big-endian
//	         IEEE 754 bits; in ascending (score, member) order
func init() {
	registerCodec(TypeZSet, codec{encode: encodeZSet, decode: decodeZSet})
}

func encodeZSet(e *encoder, c Collection) {
	z := c.(*ZSet)
	var flags byte
	if z.big {
		flags |= 1
	}
	e.tag(flags)
	e.uvarint(uint64(z.Len()))
	var sb [8]byte
	z.tree.ascend(0, func(it zitem) bool {
		e.uvarint(uint64(len(it.member)))
		e.raw([]byte(it.member))
		binary.BigEndian.PutUint64(sb[:], math.Float64bits(it.score))
		e.raw(sb[:])
		return e.err == nil
	})
}

func decodeZSet(d *decoder) (Collection, error) {
	flags, err := d.byte()
	if err != nil {
		return nil, fmt.Errorf("zset flags: %w", err)
	}
	if flags&^1 != 0 {
		return nil, fmt.Errorf("%w: zset flags %#x", ErrCorrupt, flags)
	}
	n, err := d.uvarint()
	if err != nil {
		return nil, fmt.Errorf("zset count: %w", err)
	}
	z := NewZSet(nil)
	z.big = flags&1 != 0
	var sb [8]byte
	for i := uint64(0); i < n; i++ {
		m, err := d.bytes("zset member")
		if err != nil {
			return nil, err
		}
		if err := d.full(sb[:]); err != nil {
			return nil, fmt.Errorf("zset score: %w", err)
		}
		score := math.Float64frombits(binary.BigEndian.Uint64(sb[:]))
		if math.IsNaN(score) {
			return nil, fmt.Errorf("%w: zset score is NaN", ErrCorrupt)
		}
		if !z.Add(m, score) {
			return nil, fmt.Errorf("%w: duplicate zset member %q", ErrCorrupt, short(m))
		}
	}
	return z, nil
}
