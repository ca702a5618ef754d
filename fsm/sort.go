package fsm

import (
	"bytes"
	"sort"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// SORT and SORT_RO (Redis's sort.c). As in a Redis Cluster, BY and GET
// patterns are accepted only when every key they can form hashes to the
// sorted key's slot (Redis 7.4+'s rule: the pattern has a hash tag before
// its '*'); such keys live in this group's store. Numbers are parsed like
// strtod, strings compared bytewise (strcoll in the C locale).

var (
	errSortBy     = resp.NewError("ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.")
	errSortGet    = resp.NewError("ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.")
	errSortScores = resp.NewError("ERR One or more scores can't be converted into double")
)

func init() {
	acl := func(rw string) []string { return []string{rw, "set", "sortedset", "list", "slow", "dangerous"} }
	complexity := "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."
	sortC := genCmd("sort", -2, fW|fD|resp.FlagMovableKeys, 1, 1, 1, acl("write"), "1.0.0",
		"Sorts the elements in a list, a set, or a sorted set, optionally storing the result.", complexity, sortCmd(false))
	sortC.Meta.Keys = sortKeys
	sortRO := genCmd("sort_ro", -2, fR|resp.FlagMovableKeys, 1, 1, 1, acl("read"), "7.0.0",
		"Returns the sorted elements of a list, a set, or a sorted set.", complexity, sortCmd(true))
	sortRO.Meta.Keys = func([][]byte) []int { return []int{1} }
	register(sortC, sortRO)
}

// sortKeys is Redis's sortGetKeys: the sorted key and the last STORE
// destination.
func sortKeys(args [][]byte) []int {
	keys := []int{1}
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case eq(args[i], "limit"):
			i += 2
		case eq(args[i], "get"), eq(args[i], "by"):
			i++
		case eq(args[i], "store") && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		keys = append(keys, store)
	}
	return keys
}

// sortOpts are SORT's parsed options.
type sortOpts struct {
	desc, alpha, dontSort  bool
	limitStart, limitCount int64
	by                     []byte // nil: sort by the elements
	gets                   [][]byte
	store                  []byte
}

// patternSlot is Redis's patternHashSlot: the slot every key matching the
// glob pattern hashes to, or -1 if they may hash to several.
func patternSlot(p []byte) int {
	open := -1
	for i, c := range p {
		switch {
		case c == '*' || c == '?' || c == '[' || c == '\\':
			return -1
		case open == -1 && c == '{':
			open = i
		case open >= 0 && c == '}' && i == open+1:
			open = -2 // "{}": the whole key is hashed
		case open >= 0 && c == '}':
			return int(slots.CRC16(p[open+1:i]) & (slots.Count - 1))
		}
	}
	return int(slots.CRC16(p) & (slots.Count - 1))
}

func parseSortOpts(args [][]byte, readonly bool) (sortOpts, error) {
	o := sortOpts{limitCount: -1}
	keySlot := int(slots.Of(args[1]))
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case eq(args[j], "asc"):
			o.desc = false
		case eq(args[j], "desc"):
			o.desc = true
		case eq(args[j], "alpha"):
			o.alpha = true
		case eq(args[j], "limit") && left >= 2:
			var err1, err2 error
			o.limitStart, err1 = resp.ParseInt(args[j+1])
			o.limitCount, err2 = resp.ParseInt(args[j+2])
			if err1 != nil || err2 != nil {
				return o, resp.ErrNotInteger
			}
			j += 2
		case !readonly && eq(args[j], "store") && left >= 1:
			o.store = args[j+1]
			j++
		case eq(args[j], "by") && left >= 1:
			o.by = args[j+1]
			if bytes.IndexByte(o.by, '*') < 0 {
				o.dontSort = true
			} else if patternSlot(o.by) != keySlot {
				return o, errSortBy
			}
			j++
		case eq(args[j], "get") && left >= 1:
			if string(args[j+1]) != "#" && patternSlot(args[j+1]) != keySlot {
				return o, errSortGet
			}
			o.gets = append(o.gets, args[j+1])
			j++
		default:
			return o, resp.ErrSyntax
		}
	}
	return o, nil
}

// sortItem is one element being sorted.
type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte // ALPHA BY: the value sorted by (nil: none)
}

func sortCmd(readonly bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		o, err := parseSortOpts(args, readonly)
		if err != nil {
			return errReply(err)
		}
		obj := c.get(args[1])
		if obj != nil && obj.Type != store.TypeList && obj.Type != store.TypeSet && obj.Type != store.TypeZSet {
			return errReply(resp.ErrWrongType)
		}
		if o.dontSort && obj != nil && obj.Type == store.TypeSet && o.store != nil {
			// A set has no order of its own: force ALPHA so the stored
			// result does not depend on the set's internal order.
			o.dontSort, o.alpha, o.by = false, true, nil
		}
		items, start, end := sortLoad(obj, &o)
		if !o.dontSort {
			if !sortScores(c, items, &o) {
				return errReply(errSortScores)
			}
			sortItems(items, &o)
		}
		return sortOutput(c, items[start:end+1], &o)
	}
}

// sortLoad returns the elements to sort and the inclusive range LIMIT
// selects from them (end = start-1 when empty). Lists and sorted sets that
// are not sorted (BY constant) load the selected range only.
func sortLoad(obj *store.Object, o *sortOpts) (items []sortItem, start, end int) {
	n := 0
	if obj != nil {
		n = obj.Coll.Len()
	}
	s := min(max(o.limitStart, 0), int64(n))
	cnt := min(max(o.limitCount, -1), int64(n))
	e := s + cnt - 1
	if cnt < 0 {
		e = int64(n) - 1
	}
	if s >= int64(n) {
		s, e = int64(n)-1, int64(n)-2
	}
	e = min(e, int64(n)-1)
	start, end = int(s), int(e)
	if obj == nil {
		return nil, 0, -1
	}
	ranged := o.dontSort && obj.Type != store.TypeSet
	from, count := 0, n
	if ranged {
		from, count = start, max(end-start+1, 0)
		start, end = 0, end-start
	}
	items = make([]sortItem, 0, count)
	add := func(b []byte) bool {
		items = append(items, sortItem{elem: b})
		return len(items) < count
	}
	if count == 0 {
		return items, start, end
	}
	switch obj.Type {
	case store.TypeList:
		listWalk(obj.Coll, from, ranged && o.desc, add)
	case store.TypeSet:
		obj.Coll.(*store.Set).Ascend(add)
	case store.TypeZSet:
		z := obj.Coll.(*store.ZSet)
		walk := func(m string, _ float64) bool { return add([]byte(m)) }
		if ranged && o.desc {
			z.Descend(n-1-from, walk)
		} else {
			z.Ascend(from, walk)
		}
	}
	return items, start, end
}

// sortScores computes what each element is sorted by; false if a number
// does not parse.
func sortScores(c *Ctx, items []sortItem, o *sortOpts) bool {
	ok := true
	for i := range items {
		by := items[i].elem
		if o.by != nil {
			var found bool
			by, found = sortLookup(c, o.by, items[i].elem)
			if !found {
				continue
			}
		}
		if o.alpha {
			if o.by != nil {
				items[i].cmp = by
			}
			continue
		}
		f, good := sortParseDouble(by)
		if !good {
			ok = false
		}
		items[i].score = f
	}
	return ok
}

// sortParseDouble parses like strtod with the checks Redis makes: leading
// whitespace skipped, nothing after the number, no overflow, no NaN. An
// empty string is 0.
func sortParseDouble(b []byte) (float64, bool) {
	b = bytes.TrimLeft(b, " \t\n\v\f\r")
	if len(b) == 0 {
		return 0, true
	}
	f, err := resp.ParseFloat(b)
	return f, err == nil
}

func sortItems(items []sortItem, o *sortOpts) {
	cmp := func(a, b *sortItem) int {
		if !o.alpha {
			switch {
			case a.score > b.score:
				return 1
			case a.score < b.score:
				return -1
			}
			return bytes.Compare(a.elem, b.elem)
		}
		if o.by == nil {
			return bytes.Compare(a.elem, b.elem)
		}
		switch {
		case a.cmp == nil && b.cmp == nil:
			return 0
		case a.cmp == nil:
			return -1
		case b.cmp == nil:
			return 1
		}
		return bytes.Compare(a.cmp, b.cmp)
	}
	sort.SliceStable(items, func(i, j int) bool {
		r := cmp(&items[i], &items[j])
		if o.desc {
			r = -r
		}
		return r < 0
	})
}

// sortLookup is Redis's lookupKeyByPattern: "#" is the element itself; the
// first '*' is replaced by the element to form a key, which must hold a
// string, or a hash when the pattern ends in "->field".
func sortLookup(c *Ctx, pattern, elem []byte) ([]byte, bool) {
	if string(pattern) == "#" {
		return elem, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	keyEnd, field := len(pattern), []byte(nil)
	if a := bytes.Index(pattern[star+1:], []byte("->")); a >= 0 && star+1+a+2 < len(pattern) {
		keyEnd = star + 1 + a
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, keyEnd-1+len(elem))
	key = append(append(append(key, pattern[:star]...), elem...), pattern[star+1:keyEnd]...)
	o := c.get(key)
	switch {
	case o == nil:
		return nil, false
	case field != nil:
		if o.Type != store.TypeHash {
			return nil, false
		}
		return o.Coll.(*store.Hash).Get(field)
	case o.Type != store.TypeString:
		return nil, false
	}
	return o.Str, true
}

// sortOutput replies with the elements (or what GET finds for them), or
// stores them as a list at STORE's key.
func sortOutput(c *Ctx, items []sortItem, o *sortOpts) resp.Value {
	var out [][]byte
	var found []bool
	for _, it := range items {
		if len(o.gets) == 0 {
			out, found = append(out, it.elem), append(found, true)
			continue
		}
		for _, g := range o.gets {
			v, ok := sortLookup(c, g, it.elem)
			out, found = append(out, v), append(found, ok)
		}
	}
	if o.store == nil {
		vals := make([]resp.Value, len(out))
		for i, v := range out {
			vals[i] = resp.Null()
			if found[i] {
				vals[i] = resp.Bulk(v)
			}
		}
		return resp.Array(vals...)
	}
	if len(out) == 0 {
		if c.del(o.store) {
			c.notify(NotifyGeneric, "del", o.store)
		}
		return zero
	}
	for i := range out {
		out[i] = clone(out[i]) // GET misses are stored as ""
	}
	c.newColl(o.store, store.TypeList, newListOf(c.Store.Limits(), out)) // replaces what was there
	c.signalReady(o.store)
	c.notify(NotifyList, "sortstore", o.store)
	return resp.Int(int64(len(out)))
}
