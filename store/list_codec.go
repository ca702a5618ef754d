package store

import "fmt"

// List snapshot record: encoding byte (0 listpack, 1 quicklist), uvarint
// element count, then each element as length-prefixed bytes, head first.
func init() {
	registerCodec(TypeList, codec{encode: encodeList, decode: decodeList})
}

func encodeList(e *encoder, c Collection) {
	l, ok := c.(*List)
	if !ok {
		if e.err == nil {
			e.err = fmt.Errorf("list value of type %T", c)
		}
		return
	}
	var enc byte
	if l.quick {
		enc = 1
	}
	e.tag(enc)
	e.uvarint(uint64(l.n))
	l.walk(0, false, func(_ int, v []byte) bool {
		e.bytes(v)
		return e.err == nil
	})
}

func decodeList(d *decoder) (Collection, error) {
	enc, err := d.byte()
	if err != nil {
		return nil, err
	}
	if enc > 1 {
		return nil, fmt.Errorf("%w: list encoding %d", ErrCorrupt, enc)
	}
	n, err := d.uvarint()
	if err != nil {
		return nil, fmt.Errorf("list length: %w", err)
	}
	l := NewList()
	for i := uint64(0); i < n; i++ { // each element reads input: no trust in n
		v, err := d.bytes("list element")
		if err != nil {
			return nil, err
		}
		l.pushBack(v)
	}
	l.quick = enc == 1
	return l, nil
}
