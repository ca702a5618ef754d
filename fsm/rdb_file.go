package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"strconv"
)

// Whole RDB files (rdb.c rdbLoadRio / rdbSaveRio), for moving data between
// redis-server and slotraft: ReadRDB turns a file redis-server saved
// (RDB versions 1 to 11, Redis up to 7.2) into keys with DUMP payloads that
// RESTORE takes; RDBWriter writes DUMP payloads as a file redis-server 7.0
// and later loads. The values are decoded and checked by the same code as
// RESTORE (rdb.go), so a file is refused where RESTORE would refuse the
// value.

// RDB file opcodes (rdb.h).
const (
	rdbOpFunction2    = 0xF5
	rdbOpFunctionPre  = 0xF6
	rdbOpModuleAux    = 0xF7
	rdbOpIdle         = 0xF8
	rdbOpFreq         = 0xF9
	rdbOpAux          = 0xFA
	rdbOpResizeDB     = 0xFB
	rdbOpExpireTimeMs = 0xFC
	rdbOpExpireTime   = 0xFD
	rdbOpSelectDB     = 0xFE
	rdbOpEOF          = 0xFF
)

// rdbFileVersion is the version RDBWriter writes: Redis 7.0's, which 7.0
// and 7.2 load (the stream encoding DUMP writes needs it).
const rdbFileVersion = 10

// RDBRecord is one key of an RDB file.
type RDBRecord struct {
	DB  int
	Key []byte
	// ExpireAt is the key's deadline in Unix milliseconds, 0 for none.
	ExpireAt int64
	// Payload is the value as a DUMP payload this server's RESTORE takes.
	Payload []byte
}

// RDBFile is what ReadRDB found besides the keys.
type RDBFile struct {
	Version int
	// Functions are the function libraries' source code (FUNCTION LOAD
	// takes each), in file order.
	Functions [][]byte
	Aux       map[string]string
}

// ErrRDBFile is the error of a file that is not a well-formed RDB file.
var ErrRDBFile = errors.New("not a valid RDB file")

// ReadRDB reads an RDB file and calls fn for each key in file order; fn's
// error stops the reading and is returned. The checksum at the end is
// verified (when the file has one) before any key is handed to fn.
func ReadRDB(data []byte, fn func(RDBRecord) error) (*RDBFile, error) {
	if len(data) < 9 || !bytes.Equal(data[:5], []byte("REDIS")) {
		return nil, fmt.Errorf("%w: no REDIS header", ErrRDBFile)
	}
	version, err := strconv.Atoi(string(data[5:9]))
	if err != nil || version < 1 || version > rdbVersionMax {
		return nil, fmt.Errorf("%w: RDB version %q (this reads 1 to %d)", ErrRDBFile, data[5:9], rdbVersionMax)
	}
	if err := checkFileCRC(data, version); err != nil {
		return nil, err
	}
	f := &RDBFile{Version: version, Aux: map[string]string{}}
	r := &rdbReader{p: data[9:]}
	if err := readRecords(r, f, fn); err != nil {
		return nil, err
	}
	return f, nil
}

// checkFileCRC verifies the CRC64 after the EOF opcode (version 5 on; a
// zero checksum means the server was told not to compute one).
func checkFileCRC(data []byte, version int) error {
	if version < 5 {
		return nil
	}
	if len(data) < 9+1+8 || data[len(data)-9] != rdbOpEOF {
		return fmt.Errorf("%w: truncated (no EOF and checksum at the end)", ErrRDBFile)
	}
	sum := binary.LittleEndian.Uint64(data[len(data)-8:])
	if sum != 0 && sum != rdbCRC(data[:len(data)-8]) {
		return fmt.Errorf("%w: wrong checksum", ErrRDBFile)
	}
	return nil
}

// readRecords walks the opcodes and keys up to EOF.
func readRecords(r *rdbReader, f *RDBFile, fn func(RDBRecord) error) error {
	db, expireAt := 0, int64(0)
	for {
		op := r.byte()
		if r.err != nil {
			return fmt.Errorf("%w: truncated", ErrRDBFile)
		}
		switch op {
		case rdbOpEOF:
			return nil
		case rdbOpSelectDB:
			n, _ := r.length()
			db = int(n)
		case rdbOpResizeDB:
			r.length()
			r.length()
		case rdbOpExpireTimeMs:
			if b := r.next(8); b != nil {
				expireAt = int64(binary.LittleEndian.Uint64(b))
			}
		case rdbOpExpireTime:
			if b := r.next(4); b != nil {
				expireAt = int64(binary.LittleEndian.Uint32(b)) * 1000
			}
		case rdbOpFreq:
			r.next(1)
		case rdbOpIdle:
			r.length()
		case rdbOpAux:
			k, v := r.str(), r.str()
			f.Aux[string(k)] = string(v)
		case rdbOpFunction2:
			f.Functions = append(f.Functions, r.str())
		case rdbOpFunctionPre, rdbOpModuleAux:
			return fmt.Errorf("%w: opcode %#x (pre-release functions or module data) is not supported", ErrRDBFile, op)
		default:
			if err := readKey(r, op, db, expireAt, fn); err != nil {
				return err
			}
			expireAt = 0
		}
		if r.err != nil {
			return fmt.Errorf("%w: truncated or malformed after opcode %#x", ErrRDBFile, op)
		}
	}
}

// readKey reads one key of type t and hands it to fn as a DUMP payload.
func readKey(r *rdbReader, t byte, db int, expireAt int64, fn func(RDBRecord) error) error {
	key := r.str()
	if r.err != nil {
		return fmt.Errorf("%w: truncated key", ErrRDBFile)
	}
	v := r.value(t)
	if r.err != nil || v == nil {
		return fmt.Errorf("%w: key %q: a value of RDB type %d that cannot be read", ErrRDBFile, key, t)
	}
	if err := v.check(); err != nil {
		return fmt.Errorf("%w: key %q: %w", ErrRDBFile, key, err)
	}
	return fn(RDBRecord{DB: db, Key: append([]byte(nil), key...), ExpireAt: expireAt, Payload: rdbDump(v)})
}

// RDBWriter writes an RDB file of keys given as DUMP payloads.
type RDBWriter struct {
	w   io.Writer
	crc uint64
	err error
	buf []byte
}

// NewRDBWriter writes the header, aux fields and the selection of
// database 0 to w.
func NewRDBWriter(w io.Writer, aux map[string]string, auxOrder []string) *RDBWriter {
	rw := &RDBWriter{w: w}
	b := []byte("REDIS" + fmt.Sprintf("%04d", rdbFileVersion))
	for _, k := range auxOrder {
		b = append(b, rdbOpAux)
		b = rdbAppendString(rdbAppendString(b, []byte(k)), []byte(aux[k]))
	}
	b = append(b, rdbOpSelectDB, 0)
	rw.write(b)
	return rw
}

func (rw *RDBWriter) write(b []byte) {
	if rw.err != nil {
		return
	}
	rw.crc = ^crc64.Update(^rw.crc, crcJones, b) // rdbCRC, carried over the writes
	_, rw.err = rw.w.Write(b)
}

// Key writes key with its DUMP payload (from this server's DUMP, or any
// Redis's of RDB version 10 or older) and deadline (Unix ms, 0 for none).
func (rw *RDBWriter) Key(key []byte, expireAt int64, payload []byte) error {
	if len(payload) < 11 || binary.LittleEndian.Uint16(payload[len(payload)-10:]) > rdbFileVersion ||
		binary.LittleEndian.Uint64(payload[len(payload)-8:]) != rdbCRC(payload[:len(payload)-8]) {
		return fmt.Errorf("key %q: %w", key, errDumpPayload)
	}
	b := rw.buf[:0]
	if expireAt > 0 {
		b = binary.LittleEndian.AppendUint64(append(b, rdbOpExpireTimeMs), uint64(expireAt))
	}
	b = append(b, payload[0])
	b = append(rdbAppendString(b, key), payload[1:len(payload)-10]...)
	rw.write(b)
	rw.buf = b
	return rw.err
}

// Function writes a function library's source code (FUNCTION LOAD's
// argument), as Redis 7 saves libraries.
func (rw *RDBWriter) Function(code []byte) error {
	rw.write(rdbAppendString([]byte{rdbOpFunction2}, code))
	return rw.err
}

// Close writes EOF and the checksum (it does not close the writer).
func (rw *RDBWriter) Close() error {
	rw.write([]byte{rdbOpEOF})
	if rw.err == nil {
		_, rw.err = rw.w.Write(binary.LittleEndian.AppendUint64(nil, rw.crc))
	}
	return rw.err
}
