package fsm

import (
	"math/bits"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Bitmaps: SETBIT GETBIT BITCOUNT BITPOS BITOP, as Redis 7.2's bitops.c.
// BITFIELD and BITFIELD_RO are in bitmaps_field.go. Bitmaps are strings:
// bit 0 is the most significant bit of the first byte. Stored strings are
// immutable (snapshots share them), so a write builds a new []byte and Puts
// it, keeping the key's TTL.

var (
	bitCmd = commandsOf("bitmap")

	aclReadBitFast  = []string{"read", "bitmap", "fast"}
	aclReadBitSlow  = []string{"read", "bitmap", "slow"}
	aclWriteBitSlow = []string{"write", "bitmap", "slow"}

	errBitOffset  = resp.NewError("ERR bit offset is not an integer or out of range")
	errBitValue   = resp.NewError("ERR bit is not an integer or out of range")
	errBitArg     = resp.NewError("ERR The bit argument must be 1 or 0.")
	errBitopNot   = resp.NewError("ERR BITOP NOT must be called with a single source key.")
	errBitfieldRO = resp.NewError("ERR BITFIELD_RO only supports the GET subcommand")
	errBfType     = resp.NewError("ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
	errBfOverflow = resp.NewError("ERR Invalid OVERFLOW type specified")
)

func init() {
	register(
		bitCmd("setbit", 4, fW|fD, 1, 1, 1, aclWriteBitSlow, "2.2.0",
			"Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist.", "O(1)", setbitCmd),
		bitCmd("getbit", 3, fR|fF, 1, 1, 1, aclReadBitFast, "2.2.0",
			"Returns a bit value by offset.", "O(1)", getbitCmd),
		bitCmd("bitcount", -2, fR, 1, 1, 1, aclReadBitSlow, "2.6.0",
			"Counts the number of set bits (population counting) in a string.", "O(N)", bitcountCmd),
		bitCmd("bitpos", -3, fR, 1, 1, 1, aclReadBitSlow, "2.8.7",
			"Finds the first set (1) or clear (0) bit in a string.", "O(N)", bitposCmd),
		bitCmd("bitop", -4, fW|fD, 2, -1, 1, aclWriteBitSlow, "2.6.0",
			"Performs bitwise operations on multiple strings, and stores the result.", "O(N)", bitopCmd),
	)
}

// parseBitOffset is Redis's getBitOffsetFromArgument. With hash and bits > 0
// a "#N" offset means N*bits (BITFIELD's positional form).
func parseBitOffset(arg []byte, hash bool, width int) (int64, error) {
	useHash := hash && width > 0 && len(arg) > 0 && arg[0] == '#'
	if useHash {
		arg = arg[1:]
	}
	off, err := resp.ParseInt(arg)
	if err != nil {
		return 0, errBitOffset
	}
	if useHash {
		off *= int64(width) // wraps on overflow like Redis's C arithmetic
	}
	if off < 0 || off>>3 >= maxString {
		return 0, errBitOffset
	}
	return off, nil
}

// bitAt returns bit i of s (0 past the end).
func bitAt(s []byte, i int64) int {
	if i>>3 >= int64(len(s)) {
		return 0
	}
	return int(s[i>>3]>>(7-uint(i&7))) & 1
}

// grownCopy returns a copy of old at least n bytes long, zero padded.
func grownCopy(old []byte, n int64) []byte {
	v := make([]byte, max(int64(len(old)), n))
	copy(v, old)
	return v
}

func setbitCmd(c *Ctx, args [][]byte) resp.Value {
	off, err := parseBitOffset(args[2], false, 0)
	if err != nil {
		return errReply(err)
	}
	on, err := resp.ParseInt(args[3])
	if err != nil || on&^1 != 0 {
		return errReply(errBitValue)
	}
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	old, exp := strAndExpiry(o)
	prev := bitAt(old, off)
	byteIdx := off >> 3
	if o != nil && byteIdx < int64(len(old)) && int64(prev) == on {
		return resp.Int(int64(prev)) // nothing changes: no write, as Redis
	}
	v := grownCopy(old, byteIdx+1)
	mask := byte(1) << (7 - uint(off&7))
	if on == 1 {
		v[byteIdx] |= mask
	} else {
		v[byteIdx] &^= mask
	}
	c.put(args[1], &store.Object{Type: store.TypeString, Str: v, ExpireAt: exp})
	c.notify(NotifyString, "setbit", args[1])
	return resp.Int(int64(prev))
}

func getbitCmd(c *Ctx, args [][]byte) resp.Value {
	off, err := parseBitOffset(args[2], false, 0)
	if err != nil {
		return errReply(err)
	}
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		return zero
	}
	return resp.Int(int64(bitAt(o.Str, off)))
}

// bitRange is a parsed [start end [BYTE|BIT]] range normalised as Redis
// does: negative indexes count from the end, end is clamped to the last
// unit; empty is set when nothing is in range.
type bitRange struct {
	first, last int64 // inclusive bit positions
	empty       bool
}

// normRange converts start/end (bytes, or bits when isBit) for a string of
// n bytes into an inclusive bit range, as bitcountCommand/bitposCommand.
func normRange(start, end, n int64, isBit bool) bitRange {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return bitRange{empty: true}
	}
	if isBit {
		return bitRange{first: start, last: end}
	}
	return bitRange{first: start << 3, last: end<<3 | 7}
}

// parseUnit reads BYTE|BIT.
func parseUnit(arg []byte) (isBit bool, err error) {
	switch {
	case eq(arg, "bit"):
		return true, nil
	case eq(arg, "byte"):
		return false, nil
	}
	return false, resp.ErrSyntax
}

// bitcountCmd follows Redis 7.2, which looks the key up before parsing the
// range: a missing key answers 0 and a wrong type WRONGTYPE whatever the
// other arguments (Redis 8.0 changed this order).
func bitcountCmd(c *Ctx, args [][]byte) resp.Value {
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		return zero
	}
	s := o.Str
	switch len(args) {
	case 2:
		return resp.Int(popcount(s))
	case 4, 5:
	default:
		return errReply(resp.ErrSyntax)
	}
	start, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	end, err := resp.ParseInt(args[3])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	// As Redis 7.2: this empty range answers before BYTE|BIT is checked.
	if start < 0 && end < 0 && start > end {
		return zero
	}
	isBit := false
	if len(args) == 5 {
		if isBit, err = parseUnit(args[4]); err != nil {
			return errReply(err)
		}
	}
	r := normRange(start, end, int64(len(s)), isBit)
	if r.empty {
		return zero
	}
	return resp.Int(countBits(s, r.first, r.last))
}

// popcount counts the set bits of s.
func popcount(s []byte) int64 {
	var n int
	for len(s) >= 8 {
		w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		n += bits.OnesCount64(w)
		s = s[8:]
	}
	for _, b := range s {
		n += bits.OnesCount8(b)
	}
	return int64(n)
}

// countBits counts the set bits of s in the inclusive bit range [first, last]
// (both inside s).
func countBits(s []byte, first, last int64) int64 {
	fb, lb := first>>3, last>>3
	n := popcount(s[fb : lb+1])
	// Remove the bits of the edge bytes that are outside the range.
	if head := uint(first & 7); head != 0 {
		n -= int64(bits.OnesCount8(s[fb] >> (8 - head)))
	}
	if tail := uint(7 - last&7); tail != 0 {
		n -= int64(bits.OnesCount8(s[lb] & (1<<tail - 1)))
	}
	return n
}

// bitposCmd follows Redis 7.2's order: the bit argument, then the key
// lookup (a missing key answers at once), then the range.
func bitposCmd(c *Ctx, args [][]byte) resp.Value {
	bit, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	if bit != 0 && bit != 1 {
		return errReply(errBitArg)
	}
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		// A missing key is an infinite run of zeros.
		if bit == 1 {
			return resp.Int(-1)
		}
		return zero
	}
	s := o.Str
	n := int64(len(s))
	endGiven := false
	var r bitRange
	switch len(args) {
	case 3:
		r = normRange(0, n-1, n, false)
	case 4, 5, 6:
		start, err := resp.ParseInt(args[3])
		if err != nil {
			return errReply(resp.ErrNotInteger)
		}
		isBit := false
		if len(args) == 6 {
			if isBit, err = parseUnit(args[5]); err != nil {
				return errReply(err)
			}
		}
		end := int64(-1) // without an end the range runs to the end of the string
		if len(args) >= 5 {
			if end, err = resp.ParseInt(args[4]); err != nil {
				return errReply(resp.ErrNotInteger)
			}
			endGiven = true
		}
		r = normRange(start, end, n, isBit)
	default:
		return errReply(resp.ErrSyntax)
	}
	if r.empty {
		return resp.Int(-1)
	}
	if pos := findBit(s, r.first, r.last, byte(bit)); pos >= 0 {
		return resp.Int(pos)
	}
	if bit == 1 || endGiven {
		return resp.Int(-1)
	}
	// Looking for a 0 without an explicit end: the string is taken as
	// zero padded on the right, so the answer is the first bit after the
	// last byte of the range.
	return resp.Int((r.last>>3 + 1) << 3)
}

// findBit returns the first position in the inclusive bit range
// [first, last] of s holding bit, or -1.
func findBit(s []byte, first, last int64, bit byte) int64 {
	skip := byte(0) // a byte with no bit of interest
	if bit == 0 {
		skip = 0xff
	}
	for i := first; i <= last; {
		b := i >> 3
		if i&7 == 0 && i+7 <= last {
			// Whole bytes: skip runs quickly, 8 bytes at a time.
			for b+8 <= (last+1)>>3 && allByte(s[b:b+8], skip) {
				b += 8
			}
			for b < (last+1)>>3 && s[b] == skip {
				b++
			}
			i = b << 3
			if i > last {
				break
			}
		}
		if (s[i>>3]>>(7-uint(i&7)))&1 == bit {
			return i
		}
		i++
	}
	return -1
}

// allByte reports whether every byte of s (8 bytes) equals v.
func allByte(s []byte, v byte) bool {
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return w == uint64(v)*0x0101010101010101
}

func bitopCmd(c *Ctx, args [][]byte) resp.Value {
	op := args[1]
	var kind byte
	switch {
	case eq(op, "and"):
		kind = '&'
	case eq(op, "or"):
		kind = '|'
	case eq(op, "xor"):
		kind = '^'
	case eq(op, "not"):
		kind = '~'
	default:
		return errReply(resp.ErrSyntax)
	}
	if kind == '~' && len(args) != 4 {
		return errReply(errBitopNot)
	}
	dest, keys := args[2], args[3:]
	srcs := make([][]byte, len(keys))
	var maxLen int
	for i, k := range keys {
		o, err := c.getString(k)
		if err != nil {
			return errReply(err)
		}
		if o != nil {
			srcs[i] = o.Str
			maxLen = max(maxLen, len(o.Str))
		}
	}
	if maxLen == 0 {
		if c.del(dest) {
			c.notify(NotifyGeneric, "del", dest)
		}
		return zero
	}
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	switch kind {
	case '~':
		for j := range res {
			res[j] = ^res[j]
		}
	case '&':
		for _, s := range srcs[1:] {
			for j := range res {
				if j < len(s) {
					res[j] &= s[j]
				} else {
					res[j] = 0
				}
			}
		}
	case '|':
		for _, s := range srcs[1:] {
			for j := range s {
				res[j] |= s[j]
			}
		}
	case '^':
		for _, s := range srcs[1:] {
			for j := range s {
				res[j] ^= s[j]
			}
		}
	}
	// Like SET, the destination loses any TTL it had.
	c.put(dest, &store.Object{Type: store.TypeString, Str: res})
	c.notify(NotifyString, "set", dest)
	return resp.Int(int64(maxLen))
}
