package store

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A migration record carries one key from the group a slot leaves to the
// group it joins (package fsm's slot migration):
//
//	version  byte (1)
//	record   the key's snapshot record (persist.go): type byte, key,
//	         ExpireAt, Version, Touched, value
//
// Sharing the snapshot's record means one codec per type serves both, so a
// type that can be snapshotted can be migrated. Version and Touched travel
// too; the importing group stamps its own.
const recordVersion = 1

// recordBufSize is the bufio size of a record's encoder and decoder: small,
// since a record is usually small and larger writes and reads bypass it.
const recordBufSize = 512

// ErrBadRecord is wrapped by every DecodeRecord error.
var ErrBadRecord = errors.New("store: bad migration record")

// EncodeRecord encodes key and o as a migration record. It returns nil if o
// cannot be encoded (nil, or of a type without a codec: never a stored
// Object), which DecodeRecord refuses, so a bad record fails the import
// rather than losing the key.
func EncodeRecord(key []byte, o *Object) []byte {
	if o == nil {
		return nil
	}
	var buf bytes.Buffer
	buf.WriteByte(recordVersion)
	e := &encoder{bw: bufio.NewWriterSize(&buf, recordBufSize)}
	e.object(key, o, o.Touched)
	if e.err == nil {
		e.err = e.bw.Flush()
	}
	if e.err != nil {
		return nil
	}
	return buf.Bytes()
}

// DecodeRecord decodes a migration record into a fresh key and Object
// (nothing aliases b; Version and Touched are the source's). It never
// panics, and whatever lengths b claims it allocates in proportion to
// len(b), plus at most one read chunk (persist.go's growStep).
func DecodeRecord(b []byte) (key []byte, o *Object, err error) {
	if len(b) == 0 {
		return nil, nil, fmt.Errorf("%w: empty", ErrBadRecord)
	}
	if b[0] != recordVersion {
		return nil, nil, fmt.Errorf("%w: version %d, want %d", ErrBadRecord, b[0], recordVersion)
	}
	r := bytes.NewReader(b[1:])
	d := &decoder{br: bufio.NewReaderSize(r, recordBufSize)}
	tag, err := d.byte()
	if err == nil {
		key, o, err = d.object(Type(tag))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	if _, err := d.br.ReadByte(); err != io.EOF {
		return nil, nil, fmt.Errorf("%w: trailing bytes after key %q", ErrBadRecord, short(key))
	}
	return key, o, nil
}
