package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"slices"
)

// Snapshot format, version 1 (all of it streamed, never held in memory):
//
//	magic    "SLOTRAFT" (8 bytes)
//	version  uint16 big-endian (1)
//	count    uvarint: number of records
//	record*  type byte (a Type), key (uvarint length + bytes),
//	         ExpireAt (zigzag varint), Version (uvarint), Touched (the
//	         access time, zigzag varint), value: string = uvarint length + bytes, other types
//	         as their codec writes them (list_codec.go, hash.go, set.go,
//	         zset_codec.go, stream_codec.go)
//	dels     optional: 0xFE, WATCH's per-slot deletion counts (store/watch.go)
//	end      0xFF
//	crc      uint64 big-endian: CRC-64/ECMA of every byte before it
//
// Records come in cursor order, but Restore does not depend on it (so the
// key hash may change without a new format version). A migration record
// (record.go) is one such record behind a version byte.

const (
	snapshotMagic   = "SLOTRAFT"
	snapshotVersion = 1
	endMarker       = 0xFF
	// maxLen caps any length read from a snapshot (Redis's proto-max-bulk-len).
	maxLen   = 512 << 20
	bufSize  = 64 << 10
	growStep = 1 << 20 // bytes read from a stream before trusting a length further
)

var crcTable = crc64.MakeTable(crc64.ECMA)

var (
	// ErrCorrupt is wrapped by Restore's errors for input that is damaged:
	// bad magic, truncated, bad checksum, impossible lengths.
	ErrCorrupt = errors.New("corrupt snapshot")
	// ErrUnsupported is wrapped by Restore's errors for input written by a
	// newer version: unknown format version or value type.
	ErrUnsupported = errors.New("unsupported snapshot")
)

// WriteTo streams the View in the snapshot format to w through a buffer; it
// returns the number of bytes written.
func (v *View) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	crc := crc64.New(crcTable)
	e := &encoder{bw: bufio.NewWriterSize(io.MultiWriter(cw, crc), bufSize)}
	e.raw([]byte(snapshotMagic))
	e.raw(binary.BigEndian.AppendUint16(nil, snapshotVersion))
	e.uvarint(uint64(v.keys.Len()))
	var scratch Object // an inline string's Object, one per key in turn
	v.keys.Scan(func(en entry) bool {
		e.object(en.r.keyBytes(), en.r.visit(&scratch), en.r.accessOf().Last)
		return e.err == nil
	})
	e.writeDels(v.dels) // WATCH's deletion counts (watch.go)
	e.tag(endMarker)
	if e.err == nil {
		e.err = e.bw.Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("snapshot: write: %w", e.err)
	}
	if _, err := cw.Write(crc.Sum(nil)); err != nil {
		return cw.n, fmt.Errorf("snapshot: write: %w", err)
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type encoder struct {
	bw  *bufio.Writer
	buf [binary.MaxVarintLen64]byte
	err error
}

func (e *encoder) raw(p []byte) {
	if e.err == nil {
		_, e.err = e.bw.Write(p)
	}
}

func (e *encoder) tag(b byte) {
	if e.err == nil {
		e.err = e.bw.WriteByte(b)
	}
}

func (e *encoder) uvarint(x uint64) { e.raw(binary.AppendUvarint(e.buf[:0], x)) }
func (e *encoder) varint(x int64)   { e.raw(binary.AppendVarint(e.buf[:0], x)) }

func (e *encoder) bytes(p []byte) {
	e.uvarint(uint64(len(p)))
	e.raw(p)
}

// object writes one key and its Object with the access time touched: the
// snapshot record, which is also the body of a migration record
// (record.go). A snapshot saves the node's access time, as an RDB file
// saves a key's LRU idle time.
func (e *encoder) object(key []byte, o *Object, touched int64) {
	c, ok := codecs[o.Type]
	if o.Type != TypeString && !ok {
		e.err = fmt.Errorf("key %q: value type %v has no encoding yet", short(key), o.Type)
		return
	}
	e.tag(byte(o.Type))
	e.bytes(key)
	e.varint(o.ExpireAt)
	e.uvarint(o.Version)
	e.varint(touched)
	if o.Type == TypeString {
		e.bytes(o.Str)
		return
	}
	c.encode(e, o.Coll)
}

// codec persists one collection type. decode must check every count and
// length against what the stream really holds: never allocate from an
// unchecked number.
type codec struct {
	encode func(e *encoder, c Collection)
	decode func(d *decoder) (Collection, error)
}

// codecs holds the collection types' codecs, registered by their files.
var codecs = map[Type]codec{}

func registerCodec(t Type, c codec) {
	if _, dup := codecs[t]; dup {
		panic(fmt.Sprintf("store: codec for %v registered twice", t))
	}
	codecs[t] = c
}

// Restore replaces the Store's contents with the snapshot read from r,
// decoding as it streams. Damaged input gives an error wrapping ErrCorrupt,
// input from a newer version one wrapping ErrUnsupported; on any error the
// Store is left unchanged. If r is a *bufio.Reader, Restore reads exactly up
// to the end of the snapshot (so a caller can frame more data after it);
// otherwise it may read ahead.
func (s *Store) Restore(r io.Reader) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, bufSize)
	}
	d := &decoder{br: br}
	count, err := d.header()
	if err != nil {
		return fmt.Errorf("restore: header: %w", err)
	}
	fresh := New()
	n, err := d.records(fresh, count)
	if err != nil {
		return fmt.Errorf("restore: record %d: %w", n, err)
	}
	if err := d.trailer(); err != nil {
		return fmt.Errorf("restore: trailer: %w", err)
	}
	*s = *fresh
	return nil
}

type decoder struct {
	br  *bufio.Reader
	crc uint64
}

func (d *decoder) hash(p []byte) { d.crc = crc64.Update(d.crc, crcTable, p) }

// eof turns an end of input into a corruption error; other read errors pass.
func eof(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated: %w", ErrCorrupt, io.ErrUnexpectedEOF)
	}
	return err
}

func (d *decoder) full(p []byte) error {
	if _, err := io.ReadFull(d.br, p); err != nil {
		return eof(err)
	}
	d.hash(p)
	return nil
}

func (d *decoder) byte() (byte, error) {
	b, err := d.br.ReadByte()
	if err != nil {
		return 0, eof(err)
	}
	d.hash([]byte{b})
	return b, nil
}

// varint reads one (signed or unsigned) varint without reading past it.
func (d *decoder) varint(signed bool) (uint64, error) {
	p, err := d.br.Peek(binary.MaxVarintLen64)
	var x uint64
	var n int
	if signed {
		var v int64
		v, n = binary.Varint(p)
		x = uint64(v)
	} else {
		x, n = binary.Uvarint(p)
	}
	switch {
	case n < 0, n == 0 && len(p) == binary.MaxVarintLen64:
		return 0, fmt.Errorf("%w: varint overflows 64 bits", ErrCorrupt)
	case n == 0 && err == nil: // unreachable: Peek is short only with an error
		return 0, fmt.Errorf("%w: bad varint", ErrCorrupt)
	case n == 0:
		return 0, eof(err)
	}
	d.hash(p[:n])
	_, _ = d.br.Discard(n) // n bytes are buffered
	return x, nil
}

func (d *decoder) uvarint() (uint64, error) { return d.varint(false) }

func (d *decoder) svarint() (int64, error) {
	x, err := d.varint(true)
	return int64(x), err
}

// bytes reads a length-prefixed byte string. Memory grows with the bytes
// actually read, so a lying length on a short input allocates little.
func (d *decoder) bytes(what string) ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, fmt.Errorf("%s length: %w", what, err)
	}
	if n > maxLen {
		return nil, fmt.Errorf("%w: %s length %d exceeds %d", ErrCorrupt, what, n, maxLen)
	}
	out := make([]byte, 0, min(int(n), growStep))
	for len(out) < int(n) {
		chunk := min(int(n)-len(out), growStep)
		out = slices.Grow(out, chunk)
		start := len(out)
		out = out[:start+chunk]
		if err := d.full(out[start:]); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return out, nil
}

func (d *decoder) header() (count uint64, err error) {
	var magic [len(snapshotMagic)]byte
	if err := d.full(magic[:]); err != nil {
		return 0, err
	}
	if string(magic[:]) != snapshotMagic {
		return 0, fmt.Errorf("%w: bad magic %q", ErrCorrupt, magic[:])
	}
	var ver [2]byte
	if err := d.full(ver[:]); err != nil {
		return 0, err
	}
	switch v := binary.BigEndian.Uint16(ver[:]); {
	case v == 0:
		return 0, fmt.Errorf("%w: format version 0", ErrCorrupt)
	case v > snapshotVersion:
		return 0, fmt.Errorf("%w: format version %d (this binary reads up to %d)",
			ErrUnsupported, v, snapshotVersion)
	}
	if count, err = d.uvarint(); err != nil {
		return 0, fmt.Errorf("record count: %w", err)
	}
	return count, nil
}

// records decodes records into st until the end marker; it returns the
// number of records read (the index of the failing one on error).
func (d *decoder) records(st *Store, count uint64) (uint64, error) {
	var n uint64
	for ; ; n++ {
		tag, err := d.byte()
		if err != nil {
			return n, err
		}
		if tag == endMarker {
			break
		}
		if tag == delsTag { // WATCH's deletion counts (watch.go): the last record
			if err := d.readDels(st); err != nil {
				return n, err
			}
			if tag, err = d.byte(); err != nil {
				return n, err
			}
			if tag != endMarker {
				return n, fmt.Errorf("%w: record after the deletion counts", ErrCorrupt)
			}
			break
		}
		if n >= count {
			return n, fmt.Errorf("%w: more records than the %d announced", ErrCorrupt, count)
		}
		if err := d.record(st, Type(tag)); err != nil {
			return n, err
		}
	}
	if n != count {
		return n, fmt.Errorf("%w: %d records, %d announced", ErrCorrupt, n, count)
	}
	return n, nil
}

func (d *decoder) record(st *Store, t Type) error {
	key, o, err := d.object(t)
	if err != nil {
		return err
	}
	return st.load(key, o)
}

// object reads what encoder.object wrote after the type tag t: a fresh key
// and Object (nothing aliases the input).
func (d *decoder) object(t Type) ([]byte, *Object, error) {
	switch {
	case t == TypeNone:
		return nil, nil, fmt.Errorf("%w: value type none", ErrCorrupt)
	case t > TypeStream:
		return nil, nil, fmt.Errorf("%w: unknown value type %d (written by a newer version?)", ErrUnsupported, t)
	}
	c, ok := codecs[t]
	if t != TypeString && !ok {
		return nil, nil, fmt.Errorf("%w: value type %v has no encoding in format %d", ErrUnsupported, t, snapshotVersion)
	}
	key, err := d.bytes("key")
	if err != nil {
		return nil, nil, err
	}
	o := &Object{Type: t}
	if o.ExpireAt, err = d.svarint(); err != nil {
		return nil, nil, fmt.Errorf("key %q: expire: %w", short(key), err)
	}
	if o.Version, err = d.uvarint(); err != nil {
		return nil, nil, fmt.Errorf("key %q: version: %w", short(key), err)
	}
	if o.Touched, err = d.svarint(); err != nil {
		return nil, nil, fmt.Errorf("key %q: touched: %w", short(key), err)
	}
	if t == TypeString {
		o.Str, err = d.bytes("value")
	} else {
		o.Coll, err = c.decode(d)
		if err == nil && o.Coll.Len() == 0 {
			err = fmt.Errorf("%w: empty collection", ErrCorrupt)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("key %q: %w", short(key), err)
	}
	return key, o, nil
}

func (d *decoder) trailer() error {
	want := d.crc
	var sum [8]byte
	if _, err := io.ReadFull(d.br, sum[:]); err != nil {
		return eof(err)
	}
	if got := binary.BigEndian.Uint64(sum[:]); got != want {
		return fmt.Errorf("%w: checksum %016x, computed %016x", ErrCorrupt, got, want)
	}
	return nil
}

// load adds a decoded key to a Store being restored; keys usually arrive in
// tree order, which btree's Load appends fast.
func (s *Store) load(key []byte, o *Object) error {
	o.gen = s.gen
	estimate(o)
	e := entry{cur: cursorOf(key), r: newRecord(key, o)}
	if _, dup := s.keys.Load(e); dup {
		return fmt.Errorf("%w: duplicate key %q", ErrCorrupt, short(key))
	}
	s.bytes += e.r.memBytes()
	s.counts[CursorSlot(e.cur)]++
	s.indexExpiry(e.r)
	return nil
}

// short cuts a key for an error message.
func short(key []byte) []byte {
	const n = 64
	if len(key) > n {
		return key[:n]
	}
	return key
}
