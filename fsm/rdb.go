package fsm

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
	"math"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// The DUMP payload in Redis's own format (cluster.c createDumpPayload): the
// RDB object type byte, the RDB encoding of the value, the 2-byte RDB
// version (little-endian) and an 8-byte CRC64 (Jones, Redis's crc64.c) of
// everything before it (little-endian). A payload taken from redis-server
// restores here and the other way round.
//
// DUMP writes the plain encodings every Redis since 4.0 loads (string with
// Redis's integer encodings, RDB_TYPE_LIST, RDB_TYPE_SET, RDB_TYPE_ZSET_2,
// RDB_TYPE_HASH) and labels the payload with RDB version 9, the oldest that
// knows them all, so that Redis 6.x, 7.0 and 7.2 accept it (each refuses a
// version newer than its own). RESTORE reads every encoding Redis up to 7.2
// (RDB version 11) writes for these types: listpacks, ziplists, intsets,
// quicklists and LZF-compressed strings. Streams: rdb_stream.go. Modules
// are refused as "Bad data format".

// RDB object types (rdb.h).
const (
	rdbTypeString         = 0
	rdbTypeList           = 1
	rdbTypeSet            = 2
	rdbTypeZSet           = 3
	rdbTypeHash           = 4
	rdbTypeZSet2          = 5
	rdbTypeListZiplist    = 10
	rdbTypeSetIntset      = 11
	rdbTypeZSetZiplist    = 12
	rdbTypeHashZiplist    = 13
	rdbTypeListQuicklist  = 14
	rdbTypeHashListpack   = 16
	rdbTypeZSetListpack   = 17
	rdbTypeListQuicklist2 = 18
	rdbTypeSetListpack    = 20
)

const (
	// rdbVersionMax is the newest RDB version RESTORE accepts: Redis 7.2's.
	rdbVersionMax = 11
	// rdbVersionDump labels DUMP payloads; see above.
	rdbVersionDump = 9
	// quicklist node containers (quicklist.h).
	quicklistPlain  = 1
	quicklistPacked = 2
	// rdbMaxLZFRatio bounds an LZF string's claimed length by its compressed
	// length: one back reference (3 bytes) expands to at most 264 bytes.
	rdbMaxLZFRatio = 88
	// rdbPrealloc caps slices sized from an untrusted count.
	rdbPrealloc = 1024
)

var (
	errDumpPayload = resp.NewError("ERR DUMP payload version or checksum are wrong")
	errBadData     = resp.NewError("ERR Bad data format")
)

// rdbValue is a value in the neutral form DUMP writes and RESTORE reads.
type rdbValue struct {
	typ    store.Type
	str    []byte    // string
	elems  [][]byte  // list elements in order; set or zset members; hash field, value, field, value…
	scores []float64 // zset: the score of elems[i]
	stream *store.Stream
}

// crcJones is Redis's crc64: the Jones polynomial, reflected, initial value
// 0 and no final xor. Go's crc64 inverts before and after, which the two
// complements in rdbCRC undo.
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

func rdbCRC(p []byte) uint64 { return ^crc64.Update(^uint64(0), crcJones, p) }

// --- writing -------------------------------------------------------------

// rdbDump returns v's DUMP payload.
func rdbDump(v *rdbValue) []byte {
	var b []byte
	switch v.typ {
	case store.TypeString:
		b = append(b, rdbTypeString)
		b = rdbAppendString(b, v.str)
	case store.TypeList, store.TypeSet:
		t := byte(rdbTypeList)
		if v.typ == store.TypeSet {
			t = rdbTypeSet
		}
		b = append(b, t)
		b = rdbAppendLen(b, uint64(len(v.elems)))
		for _, e := range v.elems {
			b = rdbAppendString(b, e)
		}
	case store.TypeHash:
		b = append(b, rdbTypeHash)
		b = rdbAppendLen(b, uint64(len(v.elems)/2))
		for _, e := range v.elems {
			b = rdbAppendString(b, e)
		}
	case store.TypeZSet:
		b = append(b, rdbTypeZSet2)
		b = rdbAppendLen(b, uint64(len(v.elems)))
		for i, e := range v.elems {
			b = rdbAppendString(b, e)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.scores[i]))
		}
	case store.TypeStream:
		b = rdbAppendStream(b, v.stream, rdbTypeStreamListpacks2) // rdb_stream.go
	}
	version := uint16(rdbVersionDump)
	if v.typ == store.TypeStream {
		version = rdbVersionStreamDump
	}
	b = binary.LittleEndian.AppendUint16(b, version)
	return binary.LittleEndian.AppendUint64(b, rdbCRC(b))
}

// rdbAppendLen is rdbSaveLen.
func rdbAppendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0x81), n)
}

// rdbAppendString is rdbSaveRawString without compression: a string that
// is the canonical form of an integer fitting 32 bits is stored as one.
func rdbAppendString(b []byte, s []byte) []byte {
	if len(s) <= 11 {
		if n, err := resp.ParseInt(s); err == nil && strconv.FormatInt(n, 10) == string(s) {
			switch {
			case n >= math.MinInt8 && n <= math.MaxInt8:
				return append(b, 0xC0, byte(n))
			case n >= math.MinInt16 && n <= math.MaxInt16:
				return binary.LittleEndian.AppendUint16(append(b, 0xC1), uint16(n))
			case n >= math.MinInt32 && n <= math.MaxInt32:
				return binary.LittleEndian.AppendUint32(append(b, 0xC2), uint32(n))
			}
		}
	}
	return append(rdbAppendLen(b, uint64(len(s))), s...)
}

// --- reading -------------------------------------------------------------

// rdbParsePayload checks a DUMP payload's footer and decodes its value:
// errDumpPayload for a newer RDB version or a wrong checksum, errBadData for
// anything else that is not a well-formed value.
func rdbParsePayload(p []byte) (*rdbValue, error) {
	if len(p) < 10 {
		return nil, errDumpPayload
	}
	body := p[:len(p)-10]
	if binary.LittleEndian.Uint16(p[len(p)-10:]) > rdbVersionMax ||
		binary.LittleEndian.Uint64(p[len(p)-8:]) != rdbCRC(p[:len(p)-8]) {
		return nil, errDumpPayload
	}
	v, err := rdbDecode(body)
	if err != nil {
		return nil, errBadData
	}
	return v, nil
}

var errRDB = errors.New("rdb: bad data")

// rdbReader reads RDB encodings from a byte slice; every read is bounds
// checked and a failed read leaves err set.
type rdbReader struct {
	p   []byte
	err error
}

func (r *rdbReader) fail() { r.err = errRDB }

func (r *rdbReader) next(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.p)) {
		r.fail()
		return nil
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b
}

func (r *rdbReader) byte() byte {
	if b := r.next(1); b != nil {
		return b[0]
	}
	return 0
}

// length is rdbLoadLen; enc reports an RDB_ENCVAL special encoding, whose
// kind is then returned as the length.
func (r *rdbReader) length() (n uint64, enc bool) {
	b := r.byte()
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false
	case 1:
		return uint64(b&0x3f)<<8 | uint64(r.byte()), false
	case 3:
		return uint64(b & 0x3f), true
	}
	switch b {
	case 0x80:
		if p := r.next(4); p != nil {
			return uint64(binary.BigEndian.Uint32(p)), false
		}
	case 0x81:
		if p := r.next(8); p != nil {
			return binary.BigEndian.Uint64(p), false
		}
	default:
		r.fail()
	}
	return 0, false
}

// count reads a length that counts items of at least min bytes each, so it
// can be checked against what is left.
func (r *rdbReader) count(min uint64) uint64 {
	n, enc := r.length()
	if enc || n > uint64(len(r.p))/min {
		r.fail()
		return 0
	}
	return n
}

// str is rdbGenericLoadStringObject: raw, integer or LZF.
func (r *rdbReader) str() []byte {
	n, enc := r.length()
	if !enc {
		return r.next(n)
	}
	switch n {
	case 0:
		return strconv.AppendInt(nil, int64(int8(r.byte())), 10)
	case 1:
		if p := r.next(2); p != nil {
			return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10)
		}
	case 2:
		if p := r.next(4); p != nil {
			return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10)
		}
	case 3:
		clen, e1 := r.length()
		ulen, e2 := r.length()
		if e1 || e2 || clen == 0 || ulen > clen*rdbMaxLZFRatio || ulen > maxStringLen {
			r.fail()
			return nil
		}
		in := r.next(clen)
		if r.err != nil {
			return nil
		}
		out, ok := lzfDecompress(in, int(ulen))
		if !ok {
			r.fail()
		}
		return out
	default:
		r.fail()
	}
	return nil
}

// maxStringLen is proto-max-bulk-len, the longest string RESTORE creates.
const maxStringLen = 512 << 20

// lzfDecompress is lzf_decompress for an output of exactly n bytes.
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			ctrl++
			if i+ctrl > len(in) || len(out)+ctrl > n {
				return nil, false
			}
			out = append(out, in[i:i+ctrl]...)
			i += ctrl
			continue
		}
		l := ctrl >> 5
		if l == 7 {
			if i >= len(in) {
				return nil, false
			}
			l += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - 1 - int(in[i])
		i++
		l += 2
		if ref < 0 || len(out)+l > n {
			return nil, false
		}
		for k := 0; k < l; k++ { // byte by byte: the source may overlap the output
			out = append(out, out[ref+k])
		}
	}
	return out, len(out) == n
}

// rdbDecode decodes a payload body (type byte and value) that must be
// consumed entirely.
func rdbDecode(p []byte) (*rdbValue, error) {
	r := &rdbReader{p: p}
	v := r.value(r.byte())
	if r.err == nil && len(r.p) != 0 {
		r.fail()
	}
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

func (r *rdbReader) value(t byte) *rdbValue {
	switch t {
	case rdbTypeString:
		return &rdbValue{typ: store.TypeString, str: r.str()}
	case rdbTypeList:
		return r.strings(store.TypeList, 1)
	case rdbTypeSet:
		return r.strings(store.TypeSet, 1)
	case rdbTypeHash:
		return r.strings(store.TypeHash, 2)
	case rdbTypeZSet, rdbTypeZSet2:
		return r.zset(t == rdbTypeZSet2)
	case rdbTypeListQuicklist, rdbTypeListQuicklist2:
		return r.quicklist(t == rdbTypeListQuicklist2)
	case rdbTypeListZiplist, rdbTypeZSetZiplist, rdbTypeHashZiplist,
		rdbTypeHashListpack, rdbTypeZSetListpack, rdbTypeSetListpack, rdbTypeSetIntset:
		return r.packed(t)
	case rdbTypeStreamListpacks, rdbTypeStreamListpacks2, rdbTypeStreamListpacks3:
		return r.stream(t) // rdb_stream.go
	}
	r.fail()
	return nil
}

// strings reads a count of items of per strings each.
func (r *rdbReader) strings(t store.Type, per uint64) *rdbValue {
	n := r.count(per)
	v := &rdbValue{typ: t, elems: make([][]byte, 0, min(n*per, rdbPrealloc))}
	for i := uint64(0); i < n*per && r.err == nil; i++ {
		v.elems = append(v.elems, r.str())
	}
	return v
}

func (r *rdbReader) zset(binaryScores bool) *rdbValue {
	n := r.count(2)
	v := &rdbValue{typ: store.TypeZSet, elems: make([][]byte, 0, min(n, rdbPrealloc))}
	for i := uint64(0); i < n && r.err == nil; i++ {
		v.elems = append(v.elems, r.str())
		v.scores = append(v.scores, r.double(binaryScores))
	}
	return v
}

// double is rdbLoadBinaryDoubleValue or the old rdbLoadDoubleValue.
func (r *rdbReader) double(binaryScores bool) float64 {
	if binaryScores {
		if p := r.next(8); p != nil {
			return math.Float64frombits(binary.LittleEndian.Uint64(p))
		}
		return 0
	}
	switch n := r.byte(); n {
	case 253:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 255:
		return math.Inf(-1)
	default:
		s := r.next(uint64(n))
		f, err := strconv.ParseFloat(string(s), 64)
		if err != nil && r.err == nil {
			r.fail()
		}
		return f
	}
}

// quicklist reads a list of ziplist nodes (v1) or of plain or listpack
// nodes (v2).
func (r *rdbReader) quicklist(v2 bool) *rdbValue {
	n := r.count(2)
	v := &rdbValue{typ: store.TypeList}
	for i := uint64(0); i < n && r.err == nil; i++ {
		container := uint64(quicklistPacked)
		if v2 {
			container, _ = r.length()
		}
		blob := r.str()
		if r.err != nil {
			break
		}
		switch container {
		case quicklistPlain:
			v.elems = append(v.elems, blob)
		case quicklistPacked:
			var es [][]byte
			var ok bool
			if v2 {
				es, ok = listpackEntries(blob)
			} else {
				es, ok = ziplistEntries(blob)
			}
			if !ok || len(es) == 0 {
				r.fail()
			}
			v.elems = append(v.elems, es...)
		default:
			r.fail()
		}
	}
	return v
}

// packed reads a value held in one ziplist, listpack or intset blob.
func (r *rdbReader) packed(t byte) *rdbValue {
	blob := r.str()
	if r.err != nil {
		return nil
	}
	var es [][]byte
	ok := false
	switch t {
	case rdbTypeSetIntset:
		es, ok = intsetEntries(blob)
	case rdbTypeListZiplist, rdbTypeZSetZiplist, rdbTypeHashZiplist:
		es, ok = ziplistEntries(blob)
	default:
		es, ok = listpackEntries(blob)
	}
	if !ok {
		r.fail()
		return nil
	}
	switch t {
	case rdbTypeListZiplist:
		return &rdbValue{typ: store.TypeList, elems: es}
	case rdbTypeSetIntset, rdbTypeSetListpack:
		return &rdbValue{typ: store.TypeSet, elems: es}
	case rdbTypeHashZiplist, rdbTypeHashListpack:
		if len(es)%2 != 0 {
			r.fail()
		}
		return &rdbValue{typ: store.TypeHash, elems: es}
	}
	// Sorted sets: member, score, member, score…
	if len(es)%2 != 0 {
		r.fail()
		return nil
	}
	v := &rdbValue{typ: store.TypeZSet, elems: make([][]byte, 0, len(es)/2), scores: make([]float64, 0, len(es)/2)}
	for i := 0; i < len(es); i += 2 {
		f, err := resp.ParseFloat(es[i+1])
		if err != nil {
			r.fail()
			return nil
		}
		v.elems = append(v.elems, es[i])
		v.scores = append(v.scores, f)
	}
	return v
}

// check rejects what Redis's loader rejects: empty collections, duplicate
// set or zset members and hash fields, NaN scores.
func (v *rdbValue) check() error {
	if v.typ == store.TypeString || v.typ == store.TypeStream { // a stream is checked as it is read
		return nil
	}
	if len(v.elems) == 0 {
		return errBadData
	}
	if v.typ == store.TypeList {
		return nil
	}
	step := 1
	if v.typ == store.TypeHash {
		step = 2
	}
	seen := make(map[string]struct{}, min(len(v.elems), rdbPrealloc))
	for i := 0; i < len(v.elems); i += step {
		if _, dup := seen[string(v.elems[i])]; dup {
			return errBadData
		}
		seen[string(v.elems[i])] = struct{}{}
	}
	for _, s := range v.scores {
		if math.IsNaN(s) {
			return errBadData
		}
	}
	return nil
}

// --- compact encodings -----------------------------------------------------

// intsetEntries decodes an intset: encoding (2, 4 or 8) and length as
// little-endian uint32, then the sorted little-endian integers.
func intsetEntries(b []byte) ([][]byte, bool) {
	if len(b) < 8 {
		return nil, false
	}
	width := binary.LittleEndian.Uint32(b)
	n := binary.LittleEndian.Uint32(b[4:])
	b = b[8:]
	if (width != 2 && width != 4 && width != 8) || uint64(n)*uint64(width) != uint64(len(b)) {
		return nil, false
	}
	out := make([][]byte, 0, n)
	for i := 0; i < len(b); i += int(width) {
		var x int64
		switch width {
		case 2:
			x = int64(int16(binary.LittleEndian.Uint16(b[i:])))
		case 4:
			x = int64(int32(binary.LittleEndian.Uint32(b[i:])))
		default:
			x = int64(binary.LittleEndian.Uint64(b[i:]))
		}
		out = append(out, strconv.AppendInt(nil, x, 10))
	}
	return out, true
}

// listpackEntries decodes a listpack (listpack.md): total bytes (uint32 LE),
// element count (uint16 LE, 65535 = unknown), entries each followed by
// its backlen, 0xFF.
func listpackEntries(b []byte) ([][]byte, bool) {
	if len(b) < 7 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xFF {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(b[4:]))
	p := b[6 : len(b)-1]
	var out [][]byte
	for len(p) > 0 {
		e, size, ok := listpackEntry(p)
		if !ok {
			return nil, false
		}
		bl := store.ListpackBacklen(size)
		if size+bl > len(p) || !listpackBacklenOK(p[size:size+bl], size) {
			return nil, false
		}
		out = append(out, e)
		p = p[size+bl:]
	}
	if count != 65535 && count != len(out) {
		return nil, false
	}
	return out, true
}

// listpackEntry decodes the entry at the start of p: its value and the
// size of its encoding and data (without backlen).
func listpackEntry(p []byte) ([]byte, int, bool) {
	c := p[0]
	var n, hdr int
	switch {
	case c&0x80 == 0: // 7-bit uint
		return strconv.AppendInt(nil, int64(c&0x7f), 10), 1, true
	case c&0xC0 == 0x80: // 6-bit string length
		n, hdr = int(c&0x3f), 1
	case c&0xE0 == 0xC0: // 13-bit int
		if len(p) < 2 {
			return nil, 0, false
		}
		x := int64(c&0x1f)<<8 | int64(p[1])
		if x >= 1<<12 {
			x -= 1 << 13
		}
		return strconv.AppendInt(nil, x, 10), 2, true
	case c&0xF0 == 0xE0: // 12-bit string length
		if len(p) < 2 {
			return nil, 0, false
		}
		n, hdr = int(c&0x0f)<<8|int(p[1]), 2
	case c == 0xF0: // 32-bit string length
		if len(p) < 5 {
			return nil, 0, false
		}
		l := binary.LittleEndian.Uint32(p[1:])
		if uint64(l) > uint64(len(p)) {
			return nil, 0, false
		}
		n, hdr = int(l), 5
	case c >= 0xF1 && c <= 0xF4: // 16, 24, 32, 64-bit ints
		w := [...]int{2, 3, 4, 8}[c-0xF1]
		if len(p) < 1+w {
			return nil, 0, false
		}
		var u uint64
		for i := w - 1; i >= 0; i-- {
			u = u<<8 | uint64(p[1+i])
		}
		x := int64(u<<(64-8*w)) >> (64 - 8*w) // sign extension
		return strconv.AppendInt(nil, x, 10), 1 + w, true
	default:
		return nil, 0, false
	}
	if hdr+n > len(p) {
		return nil, 0, false
	}
	return p[hdr : hdr+n : hdr+n], hdr + n, true
}

// listpackBacklenOK checks a backlen (stored big-endian-last, 7 bits per
// byte, the high bit marking all but the first-read byte) against l.
func listpackBacklenOK(b []byte, l int) bool {
	var v uint64
	for i := 0; i < len(b); i++ {
		v |= uint64(b[len(b)-1-i]&0x7f) << (7 * i)
	}
	return v == uint64(l)
}

// ziplistEntries decodes a ziplist (ziplist.c): zlbytes and zltail (uint32
// LE), zllen (uint16 LE, 65535 = unknown), entries, 0xFF.
func ziplistEntries(b []byte) ([][]byte, bool) {
	if len(b) < 11 || binary.LittleEndian.Uint32(b) != uint32(len(b)) || b[len(b)-1] != 0xFF {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(b[8:]))
	p := b[10 : len(b)-1]
	var out [][]byte
	for len(p) > 0 {
		// prevlen: 1 byte, or 0xFE and 4 bytes.
		if p[0] == 0xFE {
			if len(p) < 5 {
				return nil, false
			}
			p = p[5:]
		} else {
			p = p[1:]
		}
		if len(p) == 0 {
			return nil, false
		}
		e, size, ok := ziplistEntry(p)
		if !ok {
			return nil, false
		}
		out = append(out, e)
		p = p[size:]
	}
	if count != 65535 && count != len(out) {
		return nil, false
	}
	return out, true
}

func ziplistEntry(p []byte) ([]byte, int, bool) {
	c := p[0]
	var n, hdr int
	switch c >> 6 {
	case 0:
		n, hdr = int(c&0x3f), 1
	case 1:
		if len(p) < 2 {
			return nil, 0, false
		}
		n, hdr = int(c&0x3f)<<8|int(p[1]), 2
	case 2:
		if c != 0x80 || len(p) < 5 {
			return nil, 0, false
		}
		l := binary.BigEndian.Uint32(p[1:])
		if uint64(l) > uint64(len(p)) {
			return nil, 0, false
		}
		n, hdr = int(l), 5
	default:
		var w int
		switch c {
		case 0xC0:
			w = 2
		case 0xD0:
			w = 4
		case 0xE0:
			w = 8
		case 0xF0:
			w = 3
		case 0xFE:
			w = 1
		default:
			if c >= 0xF1 && c <= 0xFD {
				return strconv.AppendInt(nil, int64(c&0x0f)-1, 10), 1, true
			}
			return nil, 0, false
		}
		if len(p) < 1+w {
			return nil, 0, false
		}
		var u uint64
		for i := w - 1; i >= 0; i-- {
			u = u<<8 | uint64(p[1+i])
		}
		x := int64(u<<(64-8*w)) >> (64 - 8*w)
		return strconv.AppendInt(nil, x, 10), 1 + w, true
	}
	if hdr+n > len(p) {
		return nil, 0, false
	}
	return p[hdr : hdr+n : hdr+n], hdr + n, true
}
