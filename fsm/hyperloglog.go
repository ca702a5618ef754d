package fsm

import (
	"math"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// HyperLogLog commands: PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST, on string
// values in Redis's representation (hyperloglog_repr.go).
//
// One difference from Redis: PFCOUNT is a read here (served outside the
// log), so it never writes the recomputed cardinality back into the value's
// cache bytes as Redis does. The count is the same; a GET of the value may
// show a stale-cache header where Redis would show the cached count.

var hllCmd = commandsOf("hyperloglog")

var (
	errHLLWrongType = resp.NewError("WRONGTYPE Key is not a valid HyperLogLog string value.")
	errHLLCorrupt   = resp.NewError("INVALIDOBJ Corrupted HLL object detected")
	errHLLNoKey     = resp.NewError("ERR The specified key does not exist")
	errHLLNotSparse = resp.NewError("ERR HLL encoding is not sparse")
)

func init() {
	register(
		hllCmd("pfadd", -2, fW|fD|fF, 1, 1, 1, []string{"write", "hyperloglog", "fast"}, "2.8.9",
			"Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.",
			"O(1) to add every element.", pfaddCmd),
		hllCmd("pfcount", -2, fR|resp.FlagMayReplicate, 1, -1, 1, []string{"read", "hyperloglog", "slow"}, "2.8.9",
			"Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s).",
			"O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
			pfcountCmd),
		hllCmd("pfmerge", -2, fW|fD, 1, -1, 1, []string{"write", "hyperloglog", "slow"}, "2.8.9",
			"Merges one or more HyperLogLog values into a single key.",
			"O(N) to merge N HyperLogLogs, but with high constant times.", pfmergeCmd),
		hllCmd("pfdebug", 3, fW|fD|resp.FlagAdmin, 2, 2, 1, []string{"write", "hyperloglog", "admin", "slow", "dangerous"}, "2.8.9",
			"Internal commands for debugging HyperLogLog values.", "N/A", pfdebugCmd),
		hllCmd("pfselftest", 1, resp.FlagAdmin, 0, 0, 0, []string{"hyperloglog", "admin", "slow", "dangerous"}, "2.8.9",
			"An internal command for testing HyperLogLog values.", "N/A", pfselftestCmd),
	)
}

// getHLL returns the live HLL value at key (nil if absent), or WRONGTYPE
// (the plain one for other types, the HLL one for strings that are not HLLs).
func (c *Ctx) getHLL(key []byte) (*store.Object, error) {
	o, err := c.getString(key)
	if err != nil || o == nil {
		return nil, err
	}
	if !hllValid(o.Str) {
		return nil, errHLLWrongType
	}
	return o, nil
}

func pfaddCmd(c *Ctx, args [][]byte) resp.Value {
	key := args[1]
	o, err := c.getHLL(key)
	if err != nil {
		return errReply(err)
	}
	var (
		b       []byte
		owned   bool
		updated bool
		exp     int64
	)
	if o == nil {
		b, owned, updated = hllCreate(), true, true
	} else {
		b, exp = o.Str, o.ExpireAt
	}
	for _, ele := range args[2:] {
		idx, count := hllPatLen(ele)
		nb, changed, ok := hllSet(b, owned, idx, count)
		if !ok {
			// Redis keeps the elements added before the corruption was
			// found; here a failed write changes nothing.
			return errReply(errHLLCorrupt)
		}
		b = nb
		if changed {
			updated, owned = true, true
		}
	}
	if !updated {
		return zero
	}
	hllInvalidate(b)
	c.put(key, &store.Object{Type: store.TypeString, Str: b, ExpireAt: exp})
	c.notify(NotifyString, "pfadd", key)
	return one
}

func pfcountCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args) == 2 {
		o, err := c.getHLL(args[1])
		if err != nil {
			return errReply(err)
		}
		if o == nil {
			return zero
		}
		card, ok := hllCard(o.Str)
		if !ok {
			return errReply(errHLLCorrupt)
		}
		return resp.Int(int64(card))
	}
	var regs [hllRegisters]uint8
	for _, k := range args[1:] {
		o, err := c.getHLL(k)
		if err != nil {
			return errReply(err)
		}
		if o != nil && !hllMergeInto(&regs, o.Str) {
			return errReply(errHLLCorrupt)
		}
	}
	var h [64]int
	for _, v := range regs {
		h[v]++
	}
	return resp.Int(int64(hllEstimate(&h)))
}

func pfmergeCmd(c *Ctx, args [][]byte) resp.Value {
	var regs [hllRegisters]uint8
	useDense := false
	for _, k := range args[1:] {
		o, err := c.getHLL(k)
		if err != nil {
			return errReply(err)
		}
		if o == nil {
			continue
		}
		if o.Str[4] == hllDense {
			useDense = true
		}
		if !hllMergeInto(&regs, o.Str) {
			return errReply(errHLLCorrupt)
		}
	}
	dest := args[1]
	var (
		b     []byte
		owned bool
		exp   int64
	)
	if o := c.get(dest); o == nil {
		b, owned = hllCreate(), true
	} else {
		b, exp = o.Str, o.ExpireAt
	}
	if useDense && b[4] == hllSparse {
		d, ok := hllSparseToDense(b)
		if !ok {
			return errReply(errHLLCorrupt)
		}
		b, owned = d, true
	}
	for i, v := range regs {
		if v == 0 {
			continue
		}
		nb, changed, _ := hllSet(b, owned, i, v)
		b = nb
		if changed {
			owned = true
		}
	}
	if !owned {
		b = clone(b)
	}
	hllInvalidate(b)
	c.put(dest, &store.Object{Type: store.TypeString, Str: b, ExpireAt: exp})
	c.notify(NotifyString, "pfadd", dest)
	return resp.OK()
}

func pfdebugCmd(c *Ctx, args [][]byte) resp.Value {
	key := args[2]
	o, err := c.getString(key)
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		return errReply(errHLLNoKey)
	}
	if !hllValid(o.Str) {
		return errReply(errHLLWrongType)
	}
	b := o.Str
	// toDense stores the dense form of a sparse value. Like Redis (no
	// signalModifiedKey) it keeps the key's version: WATCH is not touched.
	toDense := func() bool {
		d, ok := hllSparseToDense(b)
		if !ok {
			return false
		}
		c.Store.Put(key, &store.Object{Type: store.TypeString, Str: d, ExpireAt: o.ExpireAt,
			Version: o.Version, Touched: c.Now})
		b = d
		return true
	}
	switch strings.ToLower(string(args[1])) {
	case "getreg":
		if b[4] == hllSparse && !toDense() {
			return errReply(errHLLCorrupt)
		}
		out := make([]resp.Value, hllRegisters)
		regs := b[hllHdrSize:]
		for i := range out {
			out[i] = resp.Int(int64(hllDenseGet(regs, i)))
		}
		return resp.Array(out...)
	case "decode":
		if b[4] != hllSparse {
			return errReply(errHLLNotSparse)
		}
		return resp.BulkString(hllDecode(b))
	case "encoding":
		if b[4] == hllDense {
			return resp.Status("dense")
		}
		return resp.Status("sparse")
	case "todense":
		if b[4] == hllSparse {
			if !toDense() {
				return errReply(errHLLCorrupt)
			}
			return one
		}
		return zero
	}
	return errf("ERR Unknown PFDEBUG subcommand '%s'", args[1])
}

// hllDecode renders a sparse value's opcodes as PFDEBUG DECODE does.
func hllDecode(b []byte) string {
	var sb strings.Builder
	for p := hllHdrSize; p < len(b); {
		op := b[p]
		switch {
		case hllIsZero(op):
			sb.WriteString("z:")
			sb.WriteString(strconv.Itoa(hllZeroLen(op)))
			p++
		case hllIsXZero(op):
			sb.WriteString("Z:")
			sb.WriteString(strconv.Itoa(hllXZeroLen(b, p)))
			p += 2
		default:
			sb.WriteString("v:")
			sb.WriteString(strconv.Itoa(hllValValue(op)))
			sb.WriteByte(',')
			sb.WriteString(strconv.Itoa(hllValLen(op)))
			p++
		}
		sb.WriteByte(' ')
	}
	return strings.TrimRight(sb.String(), " ")
}

// hllSelftestCycles and hllSelftestMax size PFSELFTEST. Redis runs 1000
// register cycles and counts up to 10,000,000 elements; a read here holds
// its group's state lock, so both are smaller (the checks are the same).
var (
	hllSelftestCycles = 100
	hllSelftestMax    = uint64(1_000_000)
)

// pfselftestCmd checks the dense register access and the estimator's error
// on dense and sparse HLLs, as Redis's PFSELFTEST does.
func pfselftestCmd(c *Ctx, args [][]byte) resp.Value {
	dense := make([]byte, hllDenseSize)
	copy(dense, "HYLL")
	regs := dense[hllHdrSize:]
	var want [hllRegisters]uint8
	for j := 0; j < hllSelftestCycles; j++ {
		for i := range want {
			r := uint8(c.rand().Uint32() & hllRegisterMax)
			want[i] = r
			hllDenseSetReg(regs, i, r)
		}
		for i := range want {
			if v := hllDenseGet(regs, i); v != want[i] {
				return errf("ERR TESTFAILED Register %d should be %d but is %d", i, want[i], v)
			}
		}
	}
	clear(regs)
	sparse := hllCreate()
	relerr := 1.04 / 128 // 1.04/sqrt(16384)
	seed := c.rand().Uint64()
	checkpoint := uint64(1)
	var ele [8]byte
	for j := uint64(1); j <= hllSelftestMax; j++ {
		v := j ^ seed
		for k := range ele {
			ele[k] = byte(v >> (8 * k))
		}
		idx, count := hllPatLen(ele[:])
		hllDenseSet(regs, idx, count)
		sparse, _, _ = hllSet(sparse, true, idx, count)
		if j != checkpoint {
			continue
		}
		if j < hllSparseMaxLen/2 && sparse[4] != hllSparse {
			return errf("ERR TESTFAILED sparse encoding not used")
		}
		var hd, hs [64]int
		hllHisto(dense, &hd)
		hllHisto(sparse, &hs)
		card := hllEstimate(&hd)
		if card != hllEstimate(&hs) {
			return errf("ERR TESTFAILED dense/sparse disagree")
		}
		maxerr := uint64(math.Ceil(relerr * 6 * float64(checkpoint)))
		if j == 10 {
			maxerr = 1
		}
		abserr := int64(checkpoint) - int64(card)
		if abserr < 0 {
			abserr = -abserr
		}
		if abserr > int64(maxerr) {
			return errf("ERR TESTFAILED Too big error. card:%d abserr:%d", checkpoint, abserr)
		}
		checkpoint *= 10
	}
	return resp.OK()
}
