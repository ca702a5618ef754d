package fsm

import (
	"fmt"

	"github.com/slotraft/slotraft/store"
)

// decoder reads fsm's uvarint-framed encodings (entries, exec payloads,
// snapshot sections) with store.Decoder, whose errors here wrap
// ErrBadEntry. It keeps the input and the offset itself, so a reader of a
// fixed-size field can take it from b at off.
type decoder struct {
	b   []byte
	off int
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

// uvarint reads a minimal uvarint.
func (d *decoder) uvarint(what string) (uint64, error) {
	return decodeStep(d, (*store.Decoder).Uvarint, what)
}

// count reads a number of items each taking at least one byte, so it can
// not exceed the remaining input.
func (d *decoder) count(what string) (int, error) {
	return decodeStep(d, (*store.Decoder).Count, what)
}

// bytes reads a length-prefixed byte string (sharing the input).
func (d *decoder) bytes(what string) ([]byte, error) {
	return decodeStep(d, (*store.Decoder).Bytes, what)
}

func (d *decoder) end() error { return d.reader().End() }

func (d *decoder) reader() *store.Decoder { return store.NewDecoder(d.b, d.off, ErrBadEntry) }

// decodeStep does one read of a store.Decoder at d's offset and moves d
// past what it read.
func decodeStep[T any](d *decoder, read func(*store.Decoder, string) (T, error), what string) (T, error) {
	s := d.reader()
	v, err := read(s, what)
	d.off = s.Offset()
	return v, err
}

func (d *decoder) command() ([][]byte, error) {
	argc, err := d.count("arguments")
	if err != nil {
		return nil, err
	}
	args := make([][]byte, argc)
	for i := range args {
		if args[i], err = d.bytes("argument bytes"); err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
	}
	return args, nil
}
