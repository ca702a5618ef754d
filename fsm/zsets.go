package fsm

import (
	"bytes"
	"math"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Sorted sets: shared access, range parsing and reply helpers. The
// commands are in zsets_write.go (ZADD, ZREM, pops…), zsets_read.go
// (scores, ranks, ranges, ZRANDMEMBER, ZSCAN) and zsets_ops.go (ZUNION,
// ZINTER, ZDIFF and their STORE forms).

var zsetCmd = commandsOf("sorted-set")

var (
	aclZReadFast  = []string{"read", "sortedset", "fast"}
	aclZReadSlow  = []string{"read", "sortedset", "slow"}
	aclZWriteFast = []string{"write", "sortedset", "fast"}
	aclZWriteSlow = []string{"write", "sortedset", "slow"}
)

var (
	errZMinMaxFloat = resp.NewError("ERR min or max is not a float")
	errZMinMaxLex   = resp.NewError("ERR min or max not valid string range item")
	errZNaN         = resp.NewError("ERR resulting score is not a number (NaN)")
)

// getZSet returns the live sorted set at key, nil if absent, or WRONGTYPE.
func (c *Ctx) getZSet(key []byte) (*store.ZSet, error) {
	return readColl[*store.ZSet](c, key, store.TypeZSet)
}

// mutZSet returns key's object and sorted set for changing in place (nil
// if absent), or WRONGTYPE.
func (c *Ctx) mutZSet(key []byte) (*store.Object, *store.ZSet, error) {
	return writeColl[*store.ZSet](c, key, store.TypeZSet)
}

// storeZSet replaces dst by z (whatever dst held), or deletes dst when z is
// empty, as the STORE commands do; the reply is z's size. event is the
// command's keyspace event.
func (c *Ctx) storeZSet(dst []byte, z *store.ZSet, event string) resp.Value {
	if z.Len() == 0 {
		if c.del(dst) {
			c.notify(NotifyGeneric, "del", dst)
		}
		return zero
	}
	z.FitEncoding(c.Store.Limits())
	c.put(dst, &store.Object{Type: store.TypeZSet, Coll: z})
	c.signalReady(dst)
	c.notify(NotifyZSet, event, dst)
	return resp.Int(int64(z.Len()))
}

// zsetPairs renders member/score pairs given flat: a flat array in RESP2,
// an array of [member, score] arrays in RESP3, as Redis 7.2 replies.
func zsetPairs(flat []resp.Value) resp.Value { return resp.Pairs(flat...) }

// zmember is one member and score of a reply.
type zmember struct {
	member string
	score  float64
}

// zreply renders members, with their scores as pairs if withScores.
func zreply(ms []zmember, withScores bool) resp.Value {
	if !withScores {
		out := make([]resp.Value, len(ms))
		for i, m := range ms {
			out[i] = resp.BulkString(m.member)
		}
		return resp.Array(out...)
	}
	out := make([]resp.Value, 0, 2*len(ms))
	for _, m := range ms {
		out = append(out, resp.BulkString(m.member), resp.Double(m.score))
	}
	return zsetPairs(out)
}

// zstrtod parses a score bound like C's strtod as zslParseRange uses it:
// the whole string must be consumed, leading white space is skipped, an
// empty string is 0, NaN is refused, and out-of-range values saturate
// (1e400 is +inf, 1e-400 is 0).
func zstrtod(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	t := bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(t) == 0 {
		return 0, false
	}
	if f, err := resp.ParseFloat(t); err == nil {
		return f, true
	}
	if bytes.IndexByte(t, '_') >= 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		return f, true
	}
	return 0, false
}

// zscoreBound is one end of a score range: "(" makes it exclusive.
func zscoreBound(b []byte) (v float64, ex bool, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex, b = true, b[1:]
	}
	v, ok = zstrtod(b)
	return v, ex, ok && !math.IsNaN(v)
}

// zspan is a half-open range of positions [start, end) in ascending order.
type zspan struct{ start, end int }

// zscoreSpan parses a score range and returns the positions it covers in z
// (z may be nil when only parsing).
func zscoreSpan(z *store.ZSet, minArg, maxArg []byte) (zspan, error) {
	lo, loEx, ok1 := zscoreBound(minArg)
	hi, hiEx, ok2 := zscoreBound(maxArg)
	if !ok1 || !ok2 {
		return zspan{}, errZMinMaxFloat
	}
	if z == nil {
		return zspan{}, nil
	}
	return zspan{z.CountScoreBelow(lo, loEx), z.CountScoreBelow(hi, !hiEx)}, nil
}

// zlexBound is one end of a lex range: "-" and "+" are the extremes,
// "[" and "(" prefix an inclusive or exclusive member.
type zlexBound struct {
	inf int // -1 for "-", +1 for "+", 0 for a member
	val []byte
	ex  bool
}

func parseZLexBound(b []byte) (zlexBound, bool) {
	switch {
	case len(b) == 0:
		return zlexBound{}, false
	case len(b) == 1 && b[0] == '-':
		return zlexBound{inf: -1}, true
	case len(b) == 1 && b[0] == '+':
		return zlexBound{inf: 1}, true
	case b[0] == '(':
		return zlexBound{val: b[1:], ex: true}, true
	case b[0] == '[':
		return zlexBound{val: b[1:]}, true
	}
	return zlexBound{}, false
}

// pos returns the number of members before the bound: a lower bound
// (isMin) excludes its member when exclusive, an upper bound includes its
// member unless exclusive.
func (l zlexBound) pos(z *store.ZSet, isMin bool) int {
	switch l.inf {
	case -1:
		return 0
	case 1:
		return z.Len()
	}
	return z.CountMemberBelow(l.val, isMin == l.ex)
}

func zlexSpan(z *store.ZSet, minArg, maxArg []byte) (zspan, error) {
	lo, ok1 := parseZLexBound(minArg)
	hi, ok2 := parseZLexBound(maxArg)
	if !ok1 || !ok2 {
		return zspan{}, errZMinMaxLex
	}
	if z == nil {
		return zspan{}, nil
	}
	return zspan{lo.pos(z, true), hi.pos(z, false)}, nil
}

// zrankSpan turns Redis's inclusive start/stop indexes (negative from the
// end) into positions.
func zrankSpan(n int, start, stop int64) zspan {
	l := int64(n)
	if start < 0 {
		start += l
	}
	if stop < 0 {
		stop += l
	}
	start = max(start, 0)
	if start > stop || start >= l {
		return zspan{}
	}
	stop = min(stop, l-1)
	return zspan{int(start), int(stop) + 1}
}

// collect returns the members of the span, in reverse order if rev, after
// skipping offset of them and stopping after limit (negative: no limit),
// as ZRANGE's LIMIT does; a negative offset selects nothing.
func (s zspan) collect(z *store.ZSet, rev bool, offset, limit int64) []zmember {
	n := int64(s.end - s.start)
	if n <= 0 || offset < 0 || offset >= n || limit == 0 {
		return nil
	}
	n -= offset
	if limit > 0 {
		n = min(n, limit)
	}
	out := make([]zmember, 0, min(n, 1024))
	fn := func(m string, sc float64) bool {
		out = append(out, zmember{m, sc})
		return int64(len(out)) < n
	}
	if rev {
		z.Descend(s.end-1-int(offset), fn)
	} else {
		z.Ascend(s.start+int(offset), fn)
	}
	return out
}

// scanScore formats a score as ZSCAN replies it in Redis 7.2: a listpack
// keeps the score's shortest form, a skiplist prints it with "%.17Lg".
func scanScore(f float64, skiplist bool) []byte {
	if !skiplist || math.IsInf(f, 0) || f == 0 {
		return resp.FormatDouble(f, false)
	}
	s := strconv.AppendFloat(nil, f, 'g', 17, 64)
	mant, exp := s, []byte(nil)
	if i := bytes.IndexByte(s, 'e'); i >= 0 {
		mant, exp = s[:i], s[i:]
	}
	if bytes.IndexByte(mant, '.') >= 0 {
		mant = bytes.TrimRight(mant, "0")
		mant = bytes.TrimSuffix(mant, []byte("."))
	}
	return append(append([]byte(nil), mant...), exp...)
}
