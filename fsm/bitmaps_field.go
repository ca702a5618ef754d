package fsm

import (
	"bytes"
	"math"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// BITFIELD and BITFIELD_RO, as Redis 7.2's bitfieldGeneric. BITFIELD stays a
// write command (routed through the log) even when it only has GETs, as in
// Redis's command table.

func init() {
	register(
		bitCmd("bitfield", -2, fW|fD, 1, 1, 1, aclWriteBitSlow, "3.2.0",
			"Performs arbitrary bitfield integer operations on strings.",
			"O(1) for each subcommand specified", bitfieldCmd),
		bitCmd("bitfield_ro", -2, fR|fF, 1, 1, 1, aclReadBitFast, "6.0.0",
			"Performs arbitrary read-only bitfield integer operations on strings.",
			"O(1) for each subcommand specified", bitfieldROCmd),
	)
}

// Overflow behaviours.
const (
	bfWrap = iota
	bfSat
	bfFail
)

// Subcommands.
const (
	bfGet = iota
	bfSet
	bfIncrBy
)

type bitfieldOp struct {
	offset int64
	val    int64 // SET value or INCRBY increment
	opcode int
	ow     int
	width  int
	signed bool
}

// parseBitfieldType is getBitfieldTypeFromArgument: i1..i64 or u1..u63.
func parseBitfieldType(arg []byte) (signed bool, width int, err error) {
	if len(arg) == 0 || (arg[0] != 'i' && arg[0] != 'u') {
		return false, 0, errBfType
	}
	signed = arg[0] == 'i'
	// Redis reads the digits with strlen: they end at a NUL byte.
	digits := arg[1:]
	if i := bytes.IndexByte(digits, 0); i >= 0 {
		digits = digits[:i]
	}
	n, err := resp.ParseInt(digits)
	if err != nil || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, errBfType
	}
	return signed, int(n), nil
}

// parseBitfield parses the subcommands; readonly reports whether there is
// no SET or INCRBY, highest is the last bit written.
func parseBitfield(args [][]byte) (ops []bitfieldOp, readonly bool, highest int64, err error) {
	readonly = true
	ow := bfWrap
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		sub := args[j]
		var opcode int
		switch {
		case eq(sub, "get") && rem >= 2:
			opcode = bfGet
		case eq(sub, "set") && rem >= 3:
			opcode = bfSet
		case eq(sub, "incrby") && rem >= 3:
			opcode = bfIncrBy
		case eq(sub, "overflow") && rem >= 1:
			j++
			switch t := args[j]; {
			case eq(t, "wrap"):
				ow = bfWrap
			case eq(t, "sat"):
				ow = bfSat
			case eq(t, "fail"):
				ow = bfFail
			default:
				return nil, false, 0, errBfOverflow
			}
			continue
		default:
			return nil, false, 0, resp.ErrSyntax
		}
		signed, width, err := parseBitfieldType(args[j+1])
		if err != nil {
			return nil, false, 0, err
		}
		off, err := parseBitOffset(args[j+2], true, width)
		if err != nil {
			return nil, false, 0, err
		}
		var val int64
		if opcode != bfGet {
			readonly = false
			highest = max(highest, off+int64(width)-1)
			if val, err = resp.ParseInt(args[j+3]); err != nil {
				return nil, false, 0, resp.ErrNotInteger
			}
		}
		ops = append(ops, bitfieldOp{offset: off, val: val, opcode: opcode, ow: ow, width: width, signed: signed})
		if opcode == bfGet {
			j += 2
		} else {
			j += 3
		}
	}
	return ops, readonly, highest, nil
}

func bitfieldCmd(c *Ctx, args [][]byte) resp.Value   { return bitfield(c, args, false) }
func bitfieldROCmd(c *Ctx, args [][]byte) resp.Value { return bitfield(c, args, true) }

func bitfield(c *Ctx, args [][]byte, ro bool) resp.Value {
	ops, readonly, highest, err := parseBitfield(args)
	if err != nil {
		return errReply(err)
	}
	if !readonly && ro {
		return errReply(errBitfieldRO)
	}
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	old, exp := strAndExpiry(o)
	out := make([]resp.Value, len(ops))
	if readonly {
		for i, op := range ops {
			out[i] = resp.Int(getField(old, op))
		}
		return resp.Array(out...)
	}
	// Like lookupStringForBitCommand, the key is created or grown up to
	// the farthest bit written even if every write fails to overflow.
	v := grownCopy(old, highest>>3+1)
	// Redis notifies "setbit" when a write op succeeded and the key was
	// created or grown, or an op changed its field's value.
	dirty := o == nil || len(v) > len(old)
	changes := 0
	for i, op := range ops {
		if op.opcode == bfGet {
			out[i] = resp.Int(getField(v, op))
			continue
		}
		ret, nv, ok := applyField(v, op)
		if !ok {
			out[i] = resp.Null()
			continue
		}
		prev := getUnsigned(v, op.offset, op.width)
		setField(v, op.offset, op.width, nv)
		out[i] = resp.Int(ret)
		if dirty || prev != getUnsigned(v, op.offset, op.width) {
			changes++
		}
	}
	if o == nil || !bytes.Equal(v, old) {
		c.put(args[1], &store.Object{Type: store.TypeString, Str: v, ExpireAt: exp})
	}
	if changes > 0 {
		c.notify(NotifyString, "setbit", args[1])
	}
	return resp.Array(out...)
}

// getUnsigned reads width bits at offset (zero past the end of s).
func getUnsigned(s []byte, offset int64, width int) uint64 {
	var v uint64
	for j := range int64(width) {
		v = v<<1 | uint64(bitAt(s, offset+j))
	}
	return v
}

// getSigned reads a two's complement integer of width bits.
func getSigned(s []byte, offset int64, width int) int64 {
	v := int64(getUnsigned(s, offset, width))
	if width < 64 && v&(1<<(width-1)) != 0 {
		v |= -1 << width
	}
	return v
}

// setField writes the low width bits of v at offset (inside s).
func setField(s []byte, offset int64, width int, v uint64) {
	for j := range width {
		bit := byte(v>>(width-1-j)) & 1
		pos := offset + int64(j)
		mask := byte(1) << (7 - uint(pos&7))
		s[pos>>3] = s[pos>>3]&^mask | bit<<(7-uint(pos&7))
	}
}

func getField(s []byte, op bitfieldOp) int64 {
	if op.signed {
		return getSigned(s, op.offset, op.width)
	}
	return int64(getUnsigned(s, op.offset, op.width))
}

// applyField computes a SET or INCRBY: the reply value, the bits to store,
// and false when OVERFLOW FAIL refuses the write.
func applyField(s []byte, op bitfieldOp) (ret int64, stored uint64, ok bool) {
	if op.signed {
		oldv := getSigned(s, op.offset, op.width)
		var nv int64
		var over int
		if op.opcode == bfIncrBy {
			var wrapped int64
			over, wrapped = signedOverflow(oldv, op.val, op.width, op.ow)
			nv = oldv + op.val
			if over != 0 {
				nv = wrapped
			}
			ret = nv
		} else {
			var wrapped int64
			nv = op.val
			over, wrapped = signedOverflow(nv, 0, op.width, op.ow)
			if over != 0 {
				nv = wrapped
			}
			ret = oldv
		}
		if over != 0 && op.ow == bfFail {
			return 0, 0, false
		}
		return ret, uint64(nv), true
	}
	oldv := getUnsigned(s, op.offset, op.width)
	var nv uint64
	var over int
	var wrapped uint64
	if op.opcode == bfIncrBy {
		nv = oldv + uint64(op.val)
		over, wrapped = unsignedOverflow(oldv, op.val, op.width, op.ow)
		if over != 0 {
			nv = wrapped
		}
		ret = int64(nv)
	} else {
		nv = uint64(op.val)
		over, wrapped = unsignedOverflow(nv, 0, op.width, op.ow)
		if over != 0 {
			nv = wrapped
		}
		ret = int64(oldv)
	}
	if over != 0 && op.ow == bfFail {
		return 0, 0, false
	}
	return ret, nv, true
}

// unsignedOverflow is checkUnsignedBitfieldOverflow: 1 overflow, -1
// underflow, 0 fits; limit is the value to store for WRAP and SAT.
func unsignedOverflow(value uint64, incr int64, width, ow int) (int, uint64) {
	maxv := uint64(1)<<width - 1 // width <= 63
	maxincr := int64(maxv - value)
	minincr := -int64(value)
	wrap := func() uint64 { return (value + uint64(incr)) &^ (math.MaxUint64 << width) }
	if value > maxv || (incr > 0 && incr > maxincr) {
		switch ow {
		case bfWrap:
			return 1, wrap()
		case bfSat:
			return 1, maxv
		}
		return 1, 0
	}
	if incr < 0 && incr < minincr {
		switch ow {
		case bfWrap:
			return 1, wrap() // Redis's wrap path returns 1 for underflows too
		case bfSat:
			return -1, 0
		}
		return -1, 0
	}
	return 0, 0
}

// signedOverflow is checkSignedBitfieldOverflow.
func signedOverflow(value, incr int64, width, ow int) (int, int64) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = 1<<(width-1) - 1
	}
	minv := -maxv - 1
	maxincr := int64(uint64(maxv) - uint64(value))
	minincr := minv - value // may wrap: only used once value is in range
	wrap := func() int64 {
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := uint64(math.MaxUint64) << width
			if c&(1<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c)
	}
	if value > maxv || (width != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr) {
		switch ow {
		case bfWrap:
			return 1, wrap()
		case bfSat:
			return 1, maxv
		}
		return 1, 0
	}
	if value < minv || (width != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr) {
		switch ow {
		case bfWrap:
			return 1, wrap() // Redis's wrap path returns 1 for underflows too
		case bfSat:
			return -1, minv
		}
		return -1, 0
	}
	return 0, 0
}
