package fsm

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/slotraft/slotraft/resp"
)

// FUNCTION DUMP's payload, as Redis writes it (functionDumpCommand,
// rdbSaveFunctions): per library the RDB_OPCODE_FUNCTION2 byte and the
// library's code as an RDB string, then the 2-byte RDB version and the
// CRC64 of everything before it, both little-endian (the framing of DUMP,
// rdb.go). The payload is labelled with RDB version 10 (Redis 7.0's, the
// first with functions), so Redis 7.0 and 7.2 both load it. Redis may
// LZF-compress a long library; slotraft writes plain strings and reads
// both, and lists libraries by name where Redis follows its hash table, so
// the bytes can differ from Redis's for the same libraries.

const (
	rdbOpcodeFunctionPreGA = 246
	rdbOpcodeFunction2     = 245
	rdbVersionFunctions    = 10
)

// dumpFunctions renders libs as a FUNCTION DUMP payload.
func dumpFunctions(libs []*library) []byte {
	var b []byte
	for _, l := range libs {
		b = append(b, rdbOpcodeFunction2)
		b = rdbAppendString(b, l.code)
	}
	b = binary.LittleEndian.AppendUint16(b, rdbVersionFunctions)
	return binary.LittleEndian.AppendUint64(b, rdbCRC(b))
}

// decodeFunctionPayload checks a FUNCTION RESTORE payload's footer and
// returns the libraries' code, with Redis's errors.
func decodeFunctionPayload(p []byte) ([][]byte, error) {
	if len(p) < 10 || binary.LittleEndian.Uint16(p[len(p)-10:]) > rdbVersionMax ||
		binary.LittleEndian.Uint64(p[len(p)-8:]) != rdbCRC(p[:len(p)-8]) {
		return nil, errDumpPayload
	}
	r := rdbReader{p: p[:len(p)-10]}
	var codes [][]byte
	for len(r.p) > 0 {
		switch r.byte() {
		case rdbOpcodeFunction2:
		case rdbOpcodeFunctionPreGA:
			return nil, resp.NewError("ERR Pre-GA function format not supported")
		default:
			return nil, resp.NewError("ERR given type is not a function")
		}
		code := r.str()
		if r.err != nil {
			return nil, resp.NewError("ERR Failed loading library payload")
		}
		codes = append(codes, code)
	}
	return codes, nil
}

// restoreFunctions loads a payload's libraries into a new set, as
// functionRestoreCommand does before applying its policy; each library's
// top-level code may run budget instructions.
func restoreFunctions(p []byte, budget int64) (*functionSet, error) {
	codes, err := decodeFunctionPayload(p)
	if err != nil {
		return nil, err
	}
	set := newFunctionSet()
	for _, code := range codes {
		if _, err := set.load(code, false, budget); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// The libraries in a snapshot (version 4 on): length (4 bytes), then a
// uvarint count and per library a uvarint length and its code, then the
// CRC-32C of that (4 bytes). Restore loads every library again, without
// a budget (reloadBudget).

// maxFunctionsLen bounds the section; it is read in chunks.
const maxFunctionsLen = 1 << 30

func appendFunctionsSection(b []byte, set *functionSet) []byte {
	var enc []byte
	libs := set.sorted()
	enc = binary.AppendUvarint(enc, uint64(len(libs)))
	for _, l := range libs {
		enc = binary.AppendUvarint(enc, uint64(len(l.code)))
		enc = append(enc, l.code...)
	}
	return appendChecked(b, enc)
}

func readFunctionsSection(r io.Reader) (*functionSet, error) {
	b, err := readChecked(r, "functions", maxFunctionsLen)
	if err != nil {
		return nil, err
	}
	d := decoder{b: b}
	n, err := d.count("libraries")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	set := newFunctionSet()
	for i := range n {
		code, err := d.bytes("library bytes")
		if err != nil {
			return nil, fmt.Errorf("%w: library %d: %w", ErrBadSnapshot, i, err)
		}
		if _, err := set.load(code, false, reloadBudget); err != nil {
			return nil, fmt.Errorf("%w: library %d: %w", ErrBadSnapshot, i, err)
		}
	}
	if d.off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes after the libraries", ErrBadSnapshot, len(b)-d.off)
	}
	return set, nil
}
