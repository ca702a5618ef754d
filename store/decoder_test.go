package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

var errTestBad = errors.New("test: bad payload")

func TestDecoderRoundTrip(t *testing.T) {
	b := []byte{9} // a header the caller reads itself
	b = binary.AppendUvarint(b, 300)
	b = binary.AppendUvarint(b, 2)
	for _, s := range []string{"", "abc"} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, 7)

	d := NewDecoder(b, 1, errTestBad)
	if v, err := d.Uvarint("value"); err != nil || v != 300 {
		t.Fatalf("Uvarint = %d, %v; want 300", v, err)
	}
	n, err := d.Count("strings")
	if err != nil || n != 2 {
		t.Fatalf("Count = %d, %v; want 2", n, err)
	}
	for _, want := range []string{"", "abc"} {
		s, err := d.Bytes("string")
		if err != nil || string(s) != want {
			t.Fatalf("Bytes = %q, %v; want %q", s, err, want)
		}
		if cap(s) != len(s) {
			t.Fatalf("Bytes %q has capacity %d: an append would overwrite the input", s, cap(s))
		}
	}
	if c, err := d.Byte("flag"); err != nil || c != 7 {
		t.Fatalf("Byte = %d, %v; want 7", c, err)
	}
	if err := d.End(); err != nil || d.Offset() != len(b) || d.Remaining() != 0 {
		t.Fatalf("End = %v at offset %d of %d", err, d.Offset(), len(b))
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		read func(*Decoder) error
		want string
	}{
		{"no varint", nil, uvarintOf, "bad value varint at offset 0"},
		{"varint overflow", bytes.Repeat([]byte{0xff}, 11), uvarintOf, "bad value varint"},
		{"non-minimal varint", []byte{0x80, 0x00}, uvarintOf, "non-minimal value varint at offset 0"},
		{"count over the input", []byte{3, 1, 2}, countOf, "3 items but 2 bytes left"},
		{"length over the input", []byte{4, 'a', 'b'}, bytesOf, "4 string but 2 bytes left"},
		{"no byte", nil, byteOf, "no flag byte at offset 0"},
		{"trailing bytes", []byte{1, 2}, (*Decoder).End, "2 trailing bytes"},
	}
	for _, tt := range tests {
		err := tt.read(NewDecoder(tt.in, 0, errTestBad))
		if !errors.Is(err, errTestBad) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q wrapping the sentinel", tt.name, err, tt.want)
		}
	}
}

func uvarintOf(d *Decoder) error { _, err := d.Uvarint("value"); return err }
func countOf(d *Decoder) error   { _, err := d.Count("items"); return err }
func bytesOf(d *Decoder) error   { _, err := d.Bytes("string"); return err }
func byteOf(d *Decoder) error    { _, err := d.Byte("flag"); return err }

// FuzzDecoder reads b with the reads ops picks and checks that a read never
// panics, never leaves the input, and consumes exactly the minimal encoding
// of what it returns.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, []byte{2, 0x80, 0x01, 3, 'a', 'b', 'c', 5})
	f.Add([]byte{1, 2}, []byte{0x80, 0x00, 0xff})
	f.Fuzz(func(t *testing.T, ops, b []byte) {
		d := NewDecoder(b, 0, errTestBad)
		for _, op := range ops {
			start := d.Offset()
			var want []byte // the encoding the read consumed, if it succeeded
			var err error
			switch op % 4 {
			case 0:
				var v uint64
				v, err = d.Uvarint("value")
				want = binary.AppendUvarint(nil, v)
			case 1:
				var n int
				if n, err = d.Count("items"); err == nil && n > d.Remaining() {
					t.Fatalf("count %d over the %d bytes left", n, d.Remaining())
				}
				want = binary.AppendUvarint(nil, uint64(n))
			case 2:
				var s []byte
				s, err = d.Bytes("string")
				want = append(binary.AppendUvarint(nil, uint64(len(s))), s...)
			case 3:
				var c byte
				c, err = d.Byte("flag")
				want = []byte{c}
			}
			switch {
			case err != nil && !errors.Is(err, errTestBad):
				t.Fatalf("error %v does not wrap the sentinel", err)
			case err != nil && d.Offset() != start:
				t.Fatalf("a failed read moved from %d to %d", start, d.Offset())
			case err == nil && !bytes.Equal(b[start:d.Offset()], want):
				t.Fatalf("read %x, want the minimal encoding %x", b[start:d.Offset()], want)
			}
		}
		if err := d.End(); (err == nil) != (d.Remaining() == 0) {
			t.Fatalf("End = %v with %d bytes left", err, d.Remaining())
		}
	})
}
