package fsm

import (
	"math"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Sorted-set writes: ZADD ZINCRBY ZREM ZREMRANGEBYRANK ZREMRANGEBYSCORE
// ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZMPOP and the non-blocking forms of
// BZPOPMIN BZPOPMAX BZMPOP (the blocking layer wraps them).

const zpopComplexity = "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped."
const zmpopComplexity = "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped."
const zremComplexity = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation."

func init() {
	register(
		zsetCmd("zadd", -4, fW|fD|fF, 1, 1, 1, aclZWriteFast, "1.2.0",
			"Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.",
			"O(log(N)) for each item added, where N is the number of elements in the sorted set.", zaddCmd),
		zsetCmd("zincrby", 4, fW|fD|fF, 1, 1, 1, aclZWriteFast, "1.2.0",
			"Increments the score of a member in a sorted set.",
			"O(log(N)) where N is the number of elements in the sorted set.", zincrbyCmd),
		zsetCmd("zrem", -3, fW|fF, 1, 1, 1, aclZWriteFast, "1.2.0",
			"Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.",
			"O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.", zremCmd),
		zsetCmd("zremrangebyrank", 4, fW, 1, 1, 1, aclZWriteSlow, "2.0.0",
			"Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.",
			zremComplexity, zremrangeCmd(zspanRank, "zremrangebyrank")),
		zsetCmd("zremrangebyscore", 4, fW, 1, 1, 1, aclZWriteSlow, "1.2.0",
			"Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.",
			zremComplexity, zremrangeCmd(zscoreSpan, "zremrangebyscore")),
		zsetCmd("zremrangebylex", 4, fW, 1, 1, 1, aclZWriteSlow, "2.8.9",
			"Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.",
			zremComplexity, zremrangeCmd(zlexSpan, "zremrangebylex")),
		zsetCmd("zpopmin", -2, fW|fF, 1, 1, 1, aclZWriteFast, "5.0.0",
			"Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
			zpopComplexity, zpopCmd(false)),
		zsetCmd("zpopmax", -2, fW|fF, 1, 1, 1, aclZWriteFast, "5.0.0",
			"Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.",
			zpopComplexity, zpopCmd(true)),
		zsetCmd("zmpop", -4, fW|resp.FlagMovableKeys, 0, 0, 0, aclZWriteSlow, "7.0.0",
			"Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.",
			zmpopComplexity, zmpopCmd),
		zsetCmd("bzpopmin", -3, fW|fF|resp.FlagBlocking, 1, -2, 1,
			[]string{"write", "sortedset", "fast", "blocking"}, "5.0.0",
			"Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
			"O(log(N)) with N being the number of elements in the sorted set.", bzpopCmd(false)).blocks(zsetPopBlock),
		zsetCmd("bzpopmax", -3, fW|fF|resp.FlagBlocking, 1, -2, 1,
			[]string{"write", "sortedset", "fast", "blocking"}, "5.0.0",
			"Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped.",
			"O(log(N)) with N being the number of elements in the sorted set.", bzpopCmd(true)).blocks(zsetPopBlock),
		zsetCmd("bzmpop", -5, fW|resp.FlagBlocking|resp.FlagMovableKeys, 0, 0, 0,
			[]string{"write", "sortedset", "slow", "blocking"}, "7.0.0",
			"Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.",
			zmpopComplexity, bzmpopCmd).blocks(zsetMPopBlock),
	)
	registry["zmpop"].Meta.Keys = numkeysKeysAt(1)
	registry["bzmpop"].Meta.Keys = numkeysKeysAt(2)
}

// zaddFlags are ZADD's NX XX GT LT CH INCR.
type zaddFlags struct {
	condFlags
	ch, incr bool
}

func zaddCmd(c *Ctx, args [][]byte) resp.Value { return zaddGeneric(c, args, zaddFlags{}) }

func zincrbyCmd(c *Ctx, args [][]byte) resp.Value {
	return zaddGeneric(c, args, zaddFlags{incr: true})
}

// parse records a if it is one of ZADD's flags and reports whether it was.
func (f *zaddFlags) parse(a []byte) bool {
	switch {
	case eq(a, "ch"):
		f.ch = true
		return true
	case eq(a, "incr"):
		f.incr = true
		return true
	}
	return f.condFlags.parse(a)
}

// zaddGeneric is Redis's zaddGenericCommand.
func zaddGeneric(c *Ctx, args [][]byte, f zaddFlags) resp.Value {
	key := args[1]
	i := 2
	for i < len(args) && f.parse(args[i]) {
		i++
	}
	pairs := args[i:]
	if len(pairs)%2 != 0 || len(pairs) == 0 {
		return errReply(resp.ErrSyntax)
	}
	switch {
	case f.nx && f.xx:
		return errf("ERR XX and NX options at the same time are not compatible")
	case (f.gt && f.nx) || (f.lt && f.nx) || (f.gt && f.lt):
		return errf("ERR GT, LT, and/or NX options at the same time are not compatible")
	case f.incr && len(pairs) > 2:
		return errf("ERR INCR option supports a single increment-element pair")
	}
	n := len(pairs) / 2
	scores := make([]float64, n)
	maxLen := 0
	for j := range n {
		s, err := resp.ParseFloat(pairs[2*j])
		if err != nil {
			return errReply(err)
		}
		scores[j] = s
		maxLen = max(maxLen, len(pairs[2*j+1]))
	}
	o, z, err := c.mutZSet(key)
	if err != nil {
		return errReply(err)
	}
	if z == nil && f.xx {
		return zaddReply(f, 0, 0, 0, 0)
	}
	if z != nil && f.incr {
		// The only way ZADD fails after the key check: validate first.
		if cur, ok := z.Score(pairs[1]); ok && math.IsNaN(cur+scores[0]) && !f.nx {
			return errReply(errZNaN)
		}
	}
	if z == nil {
		z = store.NewZSetHint(c.Store.Limits(), n, maxLen)
		o = c.newColl(key, store.TypeZSet, z)
	}
	var added, updated, processed int
	score := 0.0
	for j := range n {
		member, s := pairs[2*j+1], scores[j]
		cur, exists := z.Score(member)
		switch {
		case exists && f.nx, !exists && f.xx:
			continue
		case exists:
			if f.incr {
				s += cur
			}
			if (f.lt && s >= cur) || (f.gt && s <= cur) {
				continue
			}
			if s != cur {
				z.Add(member, s)
				updated++
			}
		default:
			z.Add(member, s)
			added++
		}
		processed++
		score = s
	}
	if added+updated > 0 {
		c.changedEvent(NotifyZSet, zaddEvent(f.incr), key, o)
	}
	if added > 0 {
		c.signalReady(key)
	}
	return zaddReply(f, added, updated, processed, score)
}

func zaddEvent(incr bool) string {
	if incr {
		return "zincr"
	}
	return "zadd"
}

func zaddReply(f zaddFlags, added, updated, processed int, score float64) resp.Value {
	switch {
	case f.incr && processed > 0:
		return resp.Double(score)
	case f.incr:
		return resp.Null()
	case f.ch:
		return resp.Int(int64(added + updated))
	}
	return resp.Int(int64(added))
}

func zremCmd(c *Ctx, args [][]byte) resp.Value {
	o, z, err := c.mutZSet(args[1])
	if z == nil {
		if err != nil {
			return errReply(err)
		}
		return zero
	}
	deleted := 0
	for _, m := range args[2:] {
		if z.Remove(m) {
			deleted++
		}
		if z.Len() == 0 {
			break
		}
	}
	if deleted > 0 {
		c.changedEvent(NotifyZSet, "zrem", args[1], o)
	}
	return resp.Int(int64(deleted))
}

// zspanRank parses ZREMRANGEBYRANK's start and stop.
func zspanRank(z *store.ZSet, startArg, stopArg []byte) (zspan, error) {
	start, err := resp.ParseInt(startArg)
	if err != nil {
		return zspan{}, err
	}
	stop, err := resp.ParseInt(stopArg)
	if err != nil {
		return zspan{}, err
	}
	if z == nil {
		return zspan{}, nil
	}
	return zrankSpan(z.Len(), start, stop), nil
}

func zremrangeCmd(span func(*store.ZSet, []byte, []byte) (zspan, error), event string) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if _, err := span(nil, args[2], args[3]); err != nil {
			return errReply(err)
		}
		o, z, err := c.mutZSet(args[1])
		if z == nil {
			if err != nil {
				return errReply(err)
			}
			return zero
		}
		s, _ := span(z, args[2], args[3])
		n := z.RemoveRange(s.start, s.end)
		if n > 0 {
			c.changedEvent(NotifyZSet, event, args[1], o)
		}
		return resp.Int(int64(n))
	}
}

// zpopOpts are the reply shape choices of Redis's genericZpopCommand.
type zpopOpts struct {
	max          bool
	emitKey      bool
	count        int64 // -1: a single pop without COUNT
	nested       bool  // [member, score] arrays instead of a flat list
	nilWhenEmpty bool
}

// zpop pops from the first existing key of keys.
func (c *Ctx) zpop(keys [][]byte, p zpopOpts) resp.Value {
	var key []byte
	for _, k := range keys {
		o, err := c.getColl(k, store.TypeZSet)
		if err != nil {
			return errReply(err)
		}
		if o != nil {
			key = k
			break
		}
	}
	if key == nil {
		if p.nilWhenEmpty {
			return resp.NullArray()
		}
		return resp.Array()
	}
	if p.count == 0 {
		return resp.Array()
	}
	o, z, _ := c.mutZSet(key)
	n := int(min(max(p.count, 1), int64(z.Len())))
	var popped []zmember
	if p.max {
		popped = zspan{z.Len() - n, z.Len()}.collect(z, true, 0, -1)
		z.RemoveRange(z.Len()-n, z.Len())
	} else {
		popped = zspan{0, n}.collect(z, false, 0, -1)
		z.RemoveRange(0, n)
	}
	c.changedEvent(NotifyZSet, zpopEvent(p.max), key, o)
	var items []resp.Value
	if p.nested {
		items = make([]resp.Value, len(popped))
		for i, m := range popped {
			items[i] = resp.Array(resp.BulkString(m.member), resp.Double(m.score))
		}
	} else {
		for _, m := range popped {
			items = append(items, resp.BulkString(m.member), resp.Double(m.score))
		}
	}
	k := resp.Bulk(clone(key))
	switch {
	case p.emitKey && p.nested:
		return resp.Array(k, resp.Array(items...))
	case p.emitKey:
		return resp.Array(append([]resp.Value{k}, items...)...)
	case p.nested:
		return zsetPairsNested(items)
	}
	return resp.Array(items...)
}

func zpopEvent(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}

// zsetPairsNested is ZPOPMIN/ZPOPMAX with COUNT: nested pairs in RESP3,
// a flat array in RESP2.
func zsetPairsNested(pairs []resp.Value) resp.Value {
	flat := make([]resp.Value, 0, 2*len(pairs))
	for _, p := range pairs {
		flat = append(flat, p.Elems...)
	}
	return zsetPairs(flat)
}

func zpopCmd(max bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if len(args) > 3 {
			return errReply(resp.ErrSyntax)
		}
		count := int64(-1)
		if len(args) == 3 {
			n, err := resp.ParseInt(args[2])
			if err != nil {
				return errReply(err)
			}
			if n < 0 {
				return errf("ERR value is out of range, must be positive")
			}
			count = n
		}
		return c.zpop(args[1:2], zpopOpts{max: max, count: count, nested: count != -1})
	}
}

// zmpopArgs parses "numkeys key… MIN|MAX [COUNT count]" from args[at:].
func zmpopArgs(args [][]byte, at int) (keys [][]byte, max bool, count int64, err error) {
	numkeys, err := resp.ParseInt(args[at])
	if err != nil || numkeys < 1 {
		return nil, false, 0, resp.NewError("ERR numkeys should be greater than 0")
	}
	if numkeys >= int64(len(args)-at-1) {
		return nil, false, 0, resp.ErrSyntax
	}
	where := at + 1 + int(numkeys)
	switch {
	case eq(args[where], "min"):
	case eq(args[where], "max"):
		max = true
	default:
		return nil, false, 0, resp.ErrSyntax
	}
	count = -1
	for j := where + 1; j < len(args); j++ {
		if count == -1 && eq(args[j], "count") && j+1 < len(args) {
			j++
			n, err := resp.ParseInt(args[j])
			if err != nil || n < 1 {
				return nil, false, 0, resp.NewError("ERR count should be greater than 0")
			}
			count = n
			continue
		}
		return nil, false, 0, resp.ErrSyntax
	}
	return args[at+1 : where], max, max64(count, 1), nil
}

func max64(a, b int64) int64 { return max(a, b) }

func zmpopCmd(c *Ctx, args [][]byte) resp.Value {
	keys, max, count, err := zmpopArgs(args, 1)
	if err != nil {
		return errReply(err)
	}
	return c.zpop(keys, zpopOpts{max: max, emitKey: true, count: count, nested: true, nilWhenEmpty: true})
}

// bzpopCmd is BZPOPMIN/BZPOPMAX served at once: the first non-empty key, or
// a null array (the blocking layer decides whether to wait).
func bzpopCmd(max bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if _, err := blockDeadline(c.Now, args[len(args)-1]); err != nil {
			return errReply(err)
		}
		return c.zpop(args[1:len(args)-1], zpopOpts{max: max, emitKey: true, count: -1, nilWhenEmpty: true})
	}
}

func bzmpopCmd(c *Ctx, args [][]byte) resp.Value {
	keys, max, count, err := zmpopArgs(args, 2)
	if err != nil {
		return errReply(err)
	}
	if _, err := blockDeadline(c.Now, args[1]); err != nil {
		return errReply(err)
	}
	return c.zpop(keys, zpopOpts{max: max, emitKey: true, count: count, nested: true, nilWhenEmpty: true})
}
