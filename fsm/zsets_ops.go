package fsm

import (
	"math"
	"slices"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// ZUNION ZUNIONSTORE ZINTER ZINTERSTORE ZINTERCARD ZDIFF ZDIFFSTORE
// (Redis's zunionInterDiffGenericCommand). Plain sets are valid inputs:
// their members count with score 1.

const (
	zunionComplexity = "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set."
	zinterComplexity = "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set."
	zdiffComplexity  = "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set."
)

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

func init() {
	movable := resp.FlagMovableKeys
	register(
		zsetCmd("zunion", -3, fR|movable, 0, 0, 0, aclZReadSlow, "6.2.0",
			"Returns the union of multiple sorted sets.", zunionComplexity, zsetOpCmd(zopUnion, false, false)),
		zsetCmd("zunionstore", -4, fW|fD|movable, 1, 1, 1, aclZWriteSlow, "2.0.0",
			"Stores the union of multiple sorted sets in a key.", zunionComplexity, zsetOpCmd(zopUnion, true, false)),
		zsetCmd("zinter", -3, fR|movable, 0, 0, 0, aclZReadSlow, "6.2.0",
			"Returns the intersect of multiple sorted sets.", zinterComplexity, zsetOpCmd(zopInter, false, false)),
		zsetCmd("zinterstore", -4, fW|fD|movable, 1, 1, 1, aclZWriteSlow, "2.0.0",
			"Stores the intersect of multiple sorted sets in a key.", zinterComplexity, zsetOpCmd(zopInter, true, false)),
		zsetCmd("zintercard", -3, fR|movable, 0, 0, 0, aclZReadSlow, "7.0.0",
			"Returns the number of members of the intersect of multiple sorted sets.",
			"O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
			zsetOpCmd(zopInter, false, true)),
		zsetCmd("zdiff", -3, fR|movable, 0, 0, 0, aclZReadSlow, "6.2.0",
			"Returns the difference between multiple sorted sets.", zdiffComplexity, zsetOpCmd(zopDiff, false, false)),
		zsetCmd("zdiffstore", -4, fW|fD|movable, 1, 1, 1, aclZWriteSlow, "6.2.0",
			"Stores the difference of multiple sorted sets in a key.", zdiffComplexity, zsetOpCmd(zopDiff, true, false)),
	)
	for _, name := range []string{"zunion", "zinter", "zintercard", "zdiff"} {
		registry[name].Meta.Keys = numkeysKeysAt(1)
	}
	for _, name := range []string{"zunionstore", "zinterstore", "zdiffstore"} {
		registry[name].Meta.Keys = numkeysKeysAt(2, 1)
	}
}

// zsrc is one input: a sorted set, a plain set (scores 1) or nothing.
type zsrc struct {
	z      *store.ZSet
	s      *store.Set
	weight float64
}

func (s *zsrc) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.s != nil:
		return s.s.Len()
	}
	return 0
}

func (s *zsrc) score(m []byte) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(m)
	case s.s != nil:
		return 1, s.s.Has(m)
	}
	return 0, false
}

// each visits the members, a sorted set from its highest score down (the
// order Redis's zuiNext uses), until fn returns false.
func (s *zsrc) each(fn func(m string, score float64) bool) {
	switch {
	case s.z != nil:
		s.z.Descend(s.z.Len()-1, fn)
	case s.s != nil:
		s.s.Ascend(func(m []byte) bool { return fn(string(m), 1) })
	}
}

type zaggregate int

const (
	aggSum zaggregate = iota
	aggMin
	aggMax
)

func (a zaggregate) apply(target *float64, v float64) {
	switch a {
	case aggSum:
		*target += v
		if math.IsNaN(*target) {
			*target = 0
		}
	case aggMin: // C's comparison: a NaN operand changes nothing
		if v < *target {
			*target = v
		}
	case aggMax:
		if v > *target {
			*target = v
		}
	}
}

// weighted is score*weight with NaN (0 * inf) taken as 0.
func weighted(score, weight float64) float64 {
	if v := score * weight; !math.IsNaN(v) {
		return v
	}
	return 0
}

func zsetOpCmd(op zsetOp, store, cardOnly bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return zsetOpGeneric(c, args, op, store, cardOnly) }
}

// zsetOpGeneric follows zunionInterDiffGenericCommand's order of checks:
// numkeys, key types, then options.
func zsetOpGeneric(c *Ctx, args [][]byte, op zsetOp, toStore, cardOnly bool) resp.Value {
	at := 1
	if toStore {
		at = 2
	}
	setnum, err := resp.ParseInt(args[at])
	if err != nil {
		return errReply(err)
	}
	if setnum < 1 {
		return errf("ERR at least 1 input key is needed for '%s' command", c.zcmdName(args[0]))
	}
	if setnum > int64(len(args)-at-1) {
		return errReply(resp.ErrSyntax)
	}
	srcs := make([]zsrc, setnum)
	j := at + 1
	for i := range srcs {
		o := c.get(args[j])
		j++
		srcs[i].weight = 1
		if o == nil {
			continue
		}
		switch o.Type {
		case store.TypeZSet:
			srcs[i].z = o.Coll.(*store.ZSet)
		case store.TypeSet:
			srcs[i].s = o.Coll.(*store.Set)
		default:
			return errReply(resp.ErrWrongType)
		}
	}
	agg, withScores, limit := aggSum, false, int64(0)
	for j < len(args) {
		left := len(args) - j
		a := args[j]
		switch {
		case op != zopDiff && !cardOnly && left >= len(srcs)+1 && eq(a, "weights"):
			j++
			for i := range srcs {
				w, err := resp.ParseFloat(args[j])
				if err != nil {
					return errf("ERR weight value is not a float")
				}
				srcs[i].weight = w
				j++
			}
		case op != zopDiff && !cardOnly && left >= 2 && eq(a, "aggregate"):
			switch v := args[j+1]; {
			case eq(v, "sum"):
				agg = aggSum
			case eq(v, "min"):
				agg = aggMin
			case eq(v, "max"):
				agg = aggMax
			default:
				return errReply(resp.ErrSyntax)
			}
			j += 2
		case !toStore && !cardOnly && eq(a, "withscores"):
			withScores = true
			j++
		case cardOnly && left >= 2 && eq(a, "limit"):
			n, err := resp.ParseInt(args[j+1])
			if err != nil || n < 0 {
				return errf("ERR LIMIT can't be negative")
			}
			limit = n
			j += 2
		default:
			return errReply(resp.ErrSyntax)
		}
	}
	if op != zopDiff {
		// Smallest input first, as Redis sorts them by cardinality.
		slices.SortStableFunc(srcs, func(a, b zsrc) int { return a.len() - b.len() })
	}
	if cardOnly {
		return resp.Int(zintercard(srcs, limit))
	}
	var res *store.ZSet
	switch op {
	case zopUnion:
		res = zunion(srcs, agg)
	case zopInter:
		res = zinter(srcs, agg)
	default:
		res = zdiff(srcs)
	}
	if toStore {
		return c.storeZSet(args[1], res, zstoreEvents[op])
	}
	return zreply(zspan{0, res.Len()}.collect(res, false, 0, -1), withScores)
}

// zstoreEvents are the keyspace events of the STORE forms.
var zstoreEvents = [...]string{zopUnion: "zunionstore", zopInter: "zinterstore", zopDiff: "zdiffstore"}

// zcmdName is the command's name as Redis's c->cmd->fullname spells it.
func (c *Ctx) zcmdName(name []byte) string {
	if cmd := Lookup(name); cmd != nil {
		return cmd.Meta.Name
	}
	return string(name)
}

func zunion(srcs []zsrc, agg zaggregate) *store.ZSet {
	acc := map[string]float64{}
	var order []string // first-seen order: never iterate the map
	for i := range srcs {
		s := &srcs[i]
		s.each(func(m string, score float64) bool {
			v := weighted(score, s.weight)
			if cur, ok := acc[m]; ok {
				agg.apply(&cur, v)
				acc[m] = cur
			} else {
				acc[m] = v
				order = append(order, m)
			}
			return true
		})
	}
	res := store.NewZSet(nil) // given the store's limits by storeZSet
	for _, m := range order {
		res.Add([]byte(m), acc[m])
	}
	return res
}

func zinter(srcs []zsrc, agg zaggregate) *store.ZSet {
	res := store.NewZSet(nil) // given the store's limits by storeZSet
	zinterEach(srcs, agg, func(m string, score float64) bool {
		res.Add([]byte(m), score)
		return true
	})
	return res
}

func zintercard(srcs []zsrc, limit int64) int64 {
	var n int64
	zinterEach(srcs, aggSum, func(string, float64) bool {
		n++
		return limit == 0 || n < limit
	})
	return n
}

// zinterEach calls fn with every member of the intersection and its
// aggregated score, until fn returns false.
func zinterEach(srcs []zsrc, agg zaggregate, fn func(m string, score float64) bool) {
	first := &srcs[0]
	first.each(func(m string, score float64) bool {
		total := weighted(score, first.weight)
		mb := []byte(m)
		for k := 1; k < len(srcs); k++ {
			s := &srcs[k]
			var v float64
			if s.z != nil && s.z == first.z || s.s != nil && s.s == first.s {
				v = score * s.weight
			} else if sv, ok := s.score(mb); ok {
				v = sv * s.weight
			} else {
				return true
			}
			agg.apply(&total, v)
		}
		return fn(m, total)
	})
}

func zdiff(srcs []zsrc) *store.ZSet {
	res := store.NewZSet(nil) // given the store's limits by storeZSet
	first := &srcs[0]
	first.each(func(m string, score float64) bool {
		mb := []byte(m)
		for k := 1; k < len(srcs); k++ {
			s := &srcs[k]
			if s.z != nil && s.z == first.z || s.s != nil && s.s == first.s {
				return true
			}
			if _, ok := s.score(mb); ok {
				return true
			}
		}
		res.Add(mb, score)
		return true
	})
	return res
}
