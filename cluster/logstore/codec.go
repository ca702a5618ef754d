package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// codecVersion is the first byte of every encoded entry: a later format
// gets a new number and this one stays readable.
const codecVersion = 1

// Time flags: AppendedAt is optional (entries of older raft versions and
// some tests leave it zero), and a zero time.Time has no useful Unix form.
const (
	timeZero = 0
	timeUnix = 1
)

// errCorrupt wraps every decoding failure.
var errCorrupt = errors.New("logstore: corrupt log entry")

// appendLog appends the encoding of l to dst:
//
//	version (1) | uvarint index | uvarint term | type (1) |
//	uvarint len | data | uvarint len | extensions |
//	time flag (1) [ | varint unix seconds | uvarint nanoseconds ]
func appendLog(dst []byte, l *raft.Log) []byte {
	dst = append(dst, codecVersion)
	dst = binary.AppendUvarint(dst, l.Index)
	dst = binary.AppendUvarint(dst, l.Term)
	dst = append(dst, byte(l.Type))
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	if l.AppendedAt.IsZero() {
		return append(dst, timeZero)
	}
	dst = append(dst, timeUnix)
	dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
	return binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
}

// decoder reads an encoded entry; the first failure sticks, so callers
// check once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, what)
	}
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail(what + ": truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what + ": bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what + ": bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a length-prefixed field into a new slice (nil when empty):
// the input is pebble's buffer, valid only until the read is closed.
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what + ": length past the end")
		return nil
	}
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, d.b)
	d.b = d.b[n:]
	return out
}

// decodeLog decodes b into out. It returns an error wrapping errCorrupt,
// never panics, on any input that appendLog did not produce.
func decodeLog(b []byte, out *raft.Log) error {
	d := decoder{b: b}
	if v := d.byte1("version"); d.err == nil && v != codecVersion {
		return fmt.Errorf("%w: unknown version %d", errCorrupt, v)
	}
	var l raft.Log
	l.Index = d.uvarint("index")
	l.Term = d.uvarint("term")
	l.Type = raft.LogType(d.byte1("type"))
	l.Data = d.bytes("data")
	l.Extensions = d.bytes("extensions")
	switch flag := d.byte1("time flag"); {
	case d.err != nil:
	case flag == timeZero:
	case flag == timeUnix:
		sec := d.varint("time seconds")
		nsec := d.uvarint("time nanoseconds")
		if nsec >= uint64(time.Second) {
			d.fail("time nanoseconds out of range")
		}
		l.AppendedAt = time.Unix(sec, int64(nsec))
	default:
		d.fail(fmt.Sprintf("unknown time flag %d", flag))
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail(fmt.Sprintf("%d trailing bytes", len(d.b)))
	}
	if d.err != nil {
		return d.err
	}
	*out = l
	return nil
}
