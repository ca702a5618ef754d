package fsm

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Snapshot sections before the store (scripts, functions, settings,
// migration) share one framing: a 4-byte length, the bytes, and their
// CRC-32C.

// appendChecked appends enc as a section.
func appendChecked(b, enc []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(enc)))
	b = append(b, enc...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(enc, crc32c))
}

// readChecked reads a snapshot section: a 4-byte length, the bytes (in
// chunks, so a corrupt length fails at the end of the input rather than
// in an allocation), and their CRC-32C.
func readChecked(r io.Reader, what string, maxLen int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("%w: %s length: %w", ErrBadSnapshot, what, err)
	}
	size := int(binary.BigEndian.Uint32(n[:]))
	if size > maxLen {
		return nil, fmt.Errorf("%w: %s section of %d bytes", ErrBadSnapshot, what, size)
	}
	var b []byte
	for len(b) < size {
		chunk := min(size-len(b), 64<<10)
		b = slices.Grow(b, chunk)
		if _, err := io.ReadFull(r, b[len(b):len(b)+chunk]); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadSnapshot, what, err)
		}
		b = b[:len(b)+chunk]
	}
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, fmt.Errorf("%w: %s checksum: %w", ErrBadSnapshot, what, err)
	}
	if crc32.Checksum(b, crc32c) != binary.BigEndian.Uint32(n[:]) {
		return nil, fmt.Errorf("%w: %s checksum mismatch", ErrBadSnapshot, what)
	}
	return b, nil
}
