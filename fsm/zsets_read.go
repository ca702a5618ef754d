package fsm

import (
	"math"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Sorted-set reads: ZSCORE ZMSCORE ZCARD ZCOUNT ZLEXCOUNT ZRANK ZREVRANK
// the ZRANGE family (and ZRANGESTORE, a write) ZRANDMEMBER ZSCAN.

const zrangeComplexity = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned."
const zrangeByComplexity = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N))."

func init() {
	register(
		zsetCmd("zscore", 3, fR|fF, 1, 1, 1, aclZReadFast, "1.2.0",
			"Returns the score of a member in a sorted set.", "O(1)", zscoreCmd),
		zsetCmd("zmscore", -3, fR|fF, 1, 1, 1, aclZReadFast, "6.2.0",
			"Returns the score of one or more members in a sorted set.",
			"O(N) where N is the number of members being requested.", zmscoreCmd),
		zsetCmd("zcard", 2, fR|fF, 1, 1, 1, aclZReadFast, "1.2.0",
			"Returns the number of members in a sorted set.", "O(1)", zcardCmd),
		zsetCmd("zcount", 4, fR|fF, 1, 1, 1, aclZReadFast, "2.0.0",
			"Returns the count of members in a sorted set that have scores within a range.",
			"O(log(N)) with N being the number of elements in the sorted set.", zcountCmd(zscoreSpan)),
		zsetCmd("zlexcount", 4, fR|fF, 1, 1, 1, aclZReadFast, "2.8.9",
			"Returns the number of members in a sorted set within a lexicographical range.",
			"O(log(N)) with N being the number of elements in the sorted set.", zcountCmd(zlexSpan)),
		zsetCmd("zrank", -3, fR|fF, 1, 1, 1, aclZReadFast, "2.0.0",
			"Returns the index of a member in a sorted set ordered by ascending scores.", "O(log(N))", zrankCmd(false)),
		zsetCmd("zrevrank", -3, fR|fF, 1, 1, 1, aclZReadFast, "2.0.0",
			"Returns the index of a member in a sorted set ordered by descending scores.", "O(log(N))", zrankCmd(true)),
		zsetCmd("zrange", -4, fR, 1, 1, 1, aclZReadSlow, "1.2.0",
			"Returns members in a sorted set within a range of indexes.", zrangeComplexity,
			zrangeCmd(zrangeAuto, zdirAuto)),
		zsetCmd("zrangestore", -5, fW|fD, 1, 2, 1, aclZWriteSlow, "6.2.0",
			"Stores a range of members from sorted set in a key.",
			"O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
			zrangestoreCmd),
		zsetCmd("zrevrange", -4, fR, 1, 1, 1, aclZReadSlow, "1.2.0",
			"Returns members in a sorted set within a range of indexes in reverse order.", zrangeComplexity,
			zrangeCmd(zrangeRank, zdirRev)),
		zsetCmd("zrangebyscore", -4, fR, 1, 1, 1, aclZReadSlow, "1.0.5",
			"Returns members in a sorted set within a range of scores.", zrangeByComplexity,
			zrangeCmd(zrangeScore, zdirFwd)),
		zsetCmd("zrevrangebyscore", -4, fR, 1, 1, 1, aclZReadSlow, "2.2.0",
			"Returns members in a sorted set within a range of scores in reverse order.", zrangeByComplexity,
			zrangeCmd(zrangeScore, zdirRev)),
		zsetCmd("zrangebylex", -4, fR, 1, 1, 1, aclZReadSlow, "2.8.9",
			"Returns members in a sorted set within a lexicographical range.", zrangeByComplexity,
			zrangeCmd(zrangeLex, zdirFwd)),
		zsetCmd("zrevrangebylex", -4, fR, 1, 1, 1, aclZReadSlow, "2.8.9",
			"Returns members in a sorted set within a lexicographical range in reverse order.", zrangeByComplexity,
			zrangeCmd(zrangeLex, zdirRev)),
		zsetCmd("zrandmember", -2, fR, 1, 1, 1, aclZReadSlow, "6.2.0",
			"Returns one or more random members from a sorted set.",
			"O(N) where N is the number of members returned", zrandmemberCmd),
		zsetCmd("zscan", -3, fR, 1, 1, 1, aclZReadSlow, "2.8.0",
			"Iterates over members and scores of a sorted set.",
			"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", zscanCmd),
	)
	registry["zrandmember"].Meta.Tips = tipsNondet
	registry["zscan"].Meta.Tips = tipsNondet
}

func zscoreCmd(c *Ctx, args [][]byte) resp.Value {
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if z == nil {
		return resp.Null()
	}
	if s, ok := z.Score(args[2]); ok {
		return resp.Double(s)
	}
	return resp.Null()
}

func zmscoreCmd(c *Ctx, args [][]byte) resp.Value {
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	return memberScoresReply(z, args[2:], resp.Null(), resp.Double)
}

// memberScoresReply is an array with one reply per member: of its score
// in z, or missing when it is not in z (every member, if z is nil).
// ZMSCORE, GEOHASH and GEOPOS differ only in the two replies.
func memberScoresReply(z *store.ZSet, members [][]byte, missing resp.Value, reply func(score float64) resp.Value) resp.Value {
	out := make([]resp.Value, len(members))
	for i, m := range members {
		out[i] = missing
		if z == nil {
			continue
		}
		if s, ok := z.Score(m); ok {
			out[i] = reply(s)
		}
	}
	return resp.Array(out...)
}

func zcardCmd(c *Ctx, args [][]byte) resp.Value {
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if z == nil {
		return zero
	}
	return resp.Int(int64(z.Len()))
}

func zcountCmd(span func(*store.ZSet, []byte, []byte) (zspan, error)) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if _, err := span(nil, args[2], args[3]); err != nil {
			return errReply(err)
		}
		z, err := c.getZSet(args[1])
		if err != nil {
			return errReply(err)
		}
		if z == nil {
			return zero
		}
		s, _ := span(z, args[2], args[3])
		return resp.Int(int64(max(s.end-s.start, 0)))
	}
}

// zrankCmd is ZRANK/ZREVRANK key member [WITHSCORE] (WITHSCORE: 7.2).
func zrankCmd(rev bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if len(args) > 4 || (len(args) == 4 && !eq(args[3], "withscore")) {
			return errReply(resp.ErrSyntax)
		}
		withScore := len(args) == 4
		none := resp.Null()
		if withScore {
			none = resp.NullArray()
		}
		z, err := c.getZSet(args[1])
		if err != nil {
			return errReply(err)
		}
		if z == nil {
			return none
		}
		rank, score, ok := z.Rank(args[2])
		if !ok {
			return none
		}
		if rev {
			rank = z.Len() - 1 - rank
		}
		if withScore {
			return resp.Array(resp.Int(int64(rank)), resp.Double(score))
		}
		return resp.Int(int64(rank))
	}
}

type zrangeType int

const (
	zrangeAuto zrangeType = iota
	zrangeRank
	zrangeScore
	zrangeLex
)

type zdirection int

const (
	zdirAuto zdirection = iota
	zdirFwd
	zdirRev
)

// zrangeReq is a parsed ZRANGE-family request (Redis's zrangeGenericCommand).
type zrangeReq struct {
	key        []byte
	typ        zrangeType
	rev        bool
	minArg     []byte
	maxArg     []byte
	start, end int64 // by rank
	withScores bool
	offset     int64
	limit      int64
}

// parseZrange parses args[at:] = key min max [options]; store forbids
// WITHSCORES (ZRANGESTORE).
func parseZrange(args [][]byte, at int, store bool, typ zrangeType, dir zdirection) (zrangeReq, error) {
	r := zrangeReq{key: args[at], limit: -1}
	minIdx, maxIdx := at+1, at+2
	for j := at + 3; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case !store && eq(a, "withscores"):
			r.withScores = true
		case eq(a, "limit") && left >= 2:
			var err error
			if r.offset, err = resp.ParseInt(args[j+1]); err != nil {
				return r, err
			}
			if r.limit, err = resp.ParseInt(args[j+2]); err != nil {
				return r, err
			}
			j += 2
		case dir == zdirAuto && eq(a, "rev"):
			dir = zdirRev
		case typ == zrangeAuto && eq(a, "bylex"):
			typ = zrangeLex
		case typ == zrangeAuto && eq(a, "byscore"):
			typ = zrangeScore
		default:
			return r, resp.ErrSyntax
		}
	}
	if typ == zrangeAuto {
		typ = zrangeRank
	}
	r.typ, r.rev = typ, dir == zdirRev
	if r.limit != -1 && typ == zrangeRank {
		return r, resp.NewError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	}
	if r.withScores && typ == zrangeLex {
		return r, resp.NewError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	}
	if r.rev && typ != zrangeRank {
		minIdx, maxIdx = maxIdx, minIdx // given as max, min
	}
	r.minArg, r.maxArg = args[minIdx], args[maxIdx]
	var err error
	switch typ {
	case zrangeRank:
		if r.start, err = resp.ParseInt(r.minArg); err != nil {
			return r, err
		}
		if r.end, err = resp.ParseInt(r.maxArg); err != nil {
			return r, err
		}
	case zrangeScore:
		_, err = zscoreSpan(nil, r.minArg, r.maxArg)
	case zrangeLex:
		_, err = zlexSpan(nil, r.minArg, r.maxArg)
	}
	return r, err
}

// run returns the selected members of z.
func (r zrangeReq) run(z *store.ZSet) []zmember {
	switch r.typ {
	case zrangeScore:
		s, _ := zscoreSpan(z, r.minArg, r.maxArg)
		return s.collect(z, r.rev, r.offset, r.limit)
	case zrangeLex:
		s, _ := zlexSpan(z, r.minArg, r.maxArg)
		return s.collect(z, r.rev, r.offset, r.limit)
	}
	s := zrankSpan(z.Len(), r.start, r.end)
	if r.rev {
		// Ranks count from the highest score.
		s = zspan{z.Len() - s.end, z.Len() - s.start}
	}
	return s.collect(z, r.rev, 0, -1)
}

func zrangeCmd(typ zrangeType, dir zdirection) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		r, err := parseZrange(args, 1, false, typ, dir)
		if err != nil {
			return errReply(err)
		}
		z, err := c.getZSet(r.key)
		if err != nil {
			return errReply(err)
		}
		if z == nil {
			return resp.Array()
		}
		return zreply(r.run(z), r.withScores)
	}
}

func zrangestoreCmd(c *Ctx, args [][]byte) resp.Value {
	r, err := parseZrange(args, 2, true, zrangeAuto, zdirAuto)
	if err != nil {
		return errReply(err)
	}
	src, err := c.getZSet(r.key)
	if err != nil {
		return errReply(err)
	}
	dst := store.NewZSet(nil) // given the store's limits by storeZSet
	if src != nil {
		for _, m := range r.run(src) {
			dst.Add([]byte(m.member), m.score)
		}
	}
	return c.storeZSet(args[1], dst, "zrangestore")
}

// randMaxRepeats bounds the reply of ZRANDMEMBER, HRANDFIELD and
// SRANDMEMBER with a negative count (picks with repetition): Redis would
// build it until the client's output buffer limit closes the connection;
// here a count that would exhaust the node's memory is refused before
// anything is built.
const randMaxRepeats = 1 << 24

func zrandmemberCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args) == 2 {
		z, err := c.getZSet(args[1])
		if err != nil {
			return errReply(err)
		}
		if z == nil {
			return resp.Null()
		}
		m, _ := z.At(c.rand().IntN(z.Len()))
		return resp.BulkString(m)
	}
	n, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(err)
	}
	if n == math.MinInt64 {
		return errf("ERR value is out of range, value must between %d and %d", -math.MaxInt64, math.MaxInt64)
	}
	if len(args) > 4 || (len(args) == 4 && !eq(args[3], "withscores")) {
		return errReply(resp.ErrSyntax)
	}
	withScores := len(args) == 4
	if withScores && (n < -math.MaxInt64/2 || n > math.MaxInt64/2) {
		return errf("ERR value is out of range")
	}
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if z == nil || n == 0 {
		return resp.Array()
	}
	if n < -randMaxRepeats {
		return errf("ERR value is out of range")
	}
	return zreply(zrandom(c, z, n), withScores)
}

// zrandom picks |n| members: with repetition if n < 0, else distinct ones
// (all of them, in order, if n >= Len) in a random order. Every choice
// comes from c.rand(), so replicas agree.
func zrandom(c *Ctx, z *store.ZSet, n int64) []zmember {
	size := z.Len()
	at := func(i int) zmember {
		m, s := z.At(i)
		return zmember{m, s}
	}
	if n < 0 || n == 1 {
		picks := max(-n, 1)
		out := make([]zmember, 0, min(picks, 1024))
		for range picks {
			out = append(out, at(c.rand().IntN(size)))
		}
		return out
	}
	if n >= int64(size) {
		return zspan{0, size}.collect(z, false, 0, -1)
	}
	k := int(n)
	out := make([]zmember, 0, k)
	if k*3 > size {
		// Partial Fisher-Yates over all positions.
		idx := make([]int, size)
		for i := range idx {
			idx[i] = i
		}
		for i := range k {
			j := i + c.rand().IntN(size-i)
			idx[i], idx[j] = idx[j], idx[i]
			out = append(out, at(idx[i]))
		}
		return out
	}
	seen := make(map[int]bool, k)
	for len(out) < k {
		i := c.rand().IntN(size)
		if !seen[i] {
			seen[i] = true
			out = append(out, at(i))
		}
	}
	return out
}

func zscanCmd(c *Ctx, args [][]byte) resp.Value {
	cursor, err := resp.ParseUint(args[2])
	if err != nil {
		return errf("ERR invalid cursor")
	}
	z, err := c.getZSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if z == nil {
		return resp.Array(resp.BulkString("0"), resp.Array())
	}
	opts, err := parseScanOpts(args[3:])
	if err != nil {
		return errReply(err)
	}
	if opts.typ != nil {
		return errReply(resp.ErrSyntax)
	}
	big := z.Encoding() == "skiplist"
	var out []resp.Value
	emit := func(m string, s float64) {
		if opts.pattern == nil || Match(opts.pattern, []byte(m)) {
			out = append(out, resp.BulkString(m), resp.Bulk(scanScore(s, big)))
		}
	}
	var next uint64
	if big {
		next = z.Scan(cursor, int(min(opts.count, 1<<30)), emit)
	} else {
		// A listpack is returned whole, whatever the cursor and COUNT.
		z.Ascend(0, func(m string, s float64) bool { emit(m, s); return true })
	}
	return resp.Array(resp.Bulk(strconv.AppendUint(nil, next, 10)), resp.Array(out...))
}
