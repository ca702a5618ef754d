package fsm

import (
	"slices"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Sets: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE
// SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE SSCAN.
// Replies listing members come in the store's element order (64-bit member
// hash, then member; see store/set.go): deterministic, unlike Redis's
// hash-table order.

var (
	setTypeCmd      = commandsOf("set")
	aclReadSetFast  = []string{"read", "set", "fast"}
	aclReadSetSlow  = []string{"read", "set", "slow"}
	aclWriteSetFast = []string{"write", "set", "fast"}
	aclWriteSetSlow = []string{"write", "set", "slow"}
)

const (
	setCplxInter = "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."
	setCplxUnion = "O(N) where N is the total number of elements in all given sets."
	setCplxScan  = "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection."
)

func init() {
	register(
		setTypeCmd("sadd", -3, fW|fD|fF, 1, 1, 1, aclWriteSetFast, "1.0.0",
			"Adds one or more members to a set. Creates the key if it doesn't exist.",
			"O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.", saddCmd),
		setTypeCmd("srem", -3, fW|fF, 1, 1, 1, aclWriteSetFast, "1.0.0",
			"Removes one or more members from a set. Deletes the set if the last member was removed.",
			"O(N) where N is the number of members to be removed.", sremCmd),
		setTypeCmd("smembers", 2, fR, 1, 1, 1, aclReadSetSlow, "1.0.0",
			"Returns all members of a set.", "O(N) where N is the set cardinality.", smembersCmd),
		setTypeCmd("sismember", 3, fR|fF, 1, 1, 1, aclReadSetFast, "1.0.0",
			"Determines whether a member belongs to a set.", "O(1)", sismemberCmd),
		setTypeCmd("smismember", -3, fR|fF, 1, 1, 1, aclReadSetFast, "6.2.0",
			"Determines whether multiple members belong to a set.",
			"O(N) where N is the number of elements being checked for membership", smismemberCmd),
		setTypeCmd("scard", 2, fR|fF, 1, 1, 1, aclReadSetFast, "1.0.0",
			"Returns the number of members in a set.", "O(1)", scardCmd),
		setTypeCmd("spop", -2, fW|fF, 1, 1, 1, aclWriteSetFast, "1.0.0",
			"Returns one or more random members from a set after removing them. Deletes the set if the last member was popped.",
			"Without the count argument O(1), otherwise O(N) where N is the value of the passed count.", spopCmd),
		setTypeCmd("srandmember", -2, fR, 1, 1, 1, aclReadSetSlow, "1.0.0",
			"Get one or multiple random members from a set",
			"Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.", srandmemberCmd),
		setTypeCmd("smove", 4, fW|fF, 1, 2, 1, aclWriteSetFast, "1.0.0",
			"Moves a member from one set to another.", "O(1)", smoveCmd),
		setTypeCmd("sinter", -2, fR, 1, -1, 1, aclReadSetSlow, "1.0.0",
			"Returns the intersect of multiple sets.", setCplxInter, sinterCmd),
		setTypeCmd("sintercard", -3, fR|resp.FlagMovableKeys, 0, 0, 0, aclReadSetSlow, "7.0.0",
			"Returns the number of members of the intersect of multiple sets.", setCplxInter, sintercardCmd),
		setTypeCmd("sinterstore", -3, fW|fD, 1, -1, 1, aclWriteSetSlow, "1.0.0",
			"Stores the intersect of multiple sets in a key.", setCplxInter, sinterstoreCmd),
		setTypeCmd("sunion", -2, fR, 1, -1, 1, aclReadSetSlow, "1.0.0",
			"Returns the union of multiple sets.", setCplxUnion, sunionCmd),
		setTypeCmd("sunionstore", -3, fW|fD, 1, -1, 1, aclWriteSetSlow, "1.0.0",
			"Stores the union of multiple sets in a key.", setCplxUnion, sunionstoreCmd),
		setTypeCmd("sdiff", -2, fR, 1, -1, 1, aclReadSetSlow, "1.0.0",
			"Returns the difference of multiple sets.", setCplxUnion, sdiffCmd),
		setTypeCmd("sdiffstore", -3, fW|fD, 1, -1, 1, aclWriteSetSlow, "1.0.0",
			"Stores the difference of multiple sets in a key.", setCplxUnion, sdiffstoreCmd),
		setTypeCmd("sscan", -3, fR, 1, 1, 1, aclReadSetSlow, "2.8.0",
			"Iterates over members of a set.", setCplxScan, sscanCmd),
	)
	for _, n := range []string{"smembers", "sinter", "sunion", "sdiff"} {
		registry[n].Meta.Tips = hsTipsOrder
	}
	for _, n := range []string{"spop", "srandmember", "sscan"} {
		registry[n].Meta.Tips = tipsNondet
	}
	registry["sintercard"].Meta.Keys = numkeysKeysAt(1)
}

// readSet returns the set at key, nil if absent, or WRONGTYPE.
func (c *Ctx) readSet(key []byte) (*store.Set, error) {
	return readColl[*store.Set](c, key, store.TypeSet)
}

// readSets returns the sets at keys (nil for absent ones), or WRONGTYPE if
// any key holds another type.
func (c *Ctx) readSets(keys [][]byte) ([]*store.Set, error) {
	sets := make([]*store.Set, len(keys))
	for i, k := range keys {
		s, err := c.readSet(k)
		if err != nil {
			return nil, err
		}
		sets[i] = s
	}
	return sets, nil
}

// members renders a list of members (shared slices).
func setReplyOf(ms [][]byte) []resp.Value {
	out := make([]resp.Value, len(ms))
	for i, m := range ms {
		out[i] = resp.Bulk(m)
	}
	return out
}

// setMembersOf lists s in element order (nil s: none).
func setMembersOf(s *store.Set) [][]byte {
	if s == nil {
		return nil
	}
	out := make([][]byte, 0, s.Len())
	s.Ascend(func(m []byte) bool {
		out = append(out, m)
		return true
	})
	return out
}

func saddCmd(c *Ctx, args [][]byte) resp.Value {
	key, ms := args[1], args[2:]
	o, err := c.mutColl(key, store.TypeSet)
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		o = c.newColl(key, store.TypeSet, store.NewSet(c.Store.Limits(), ms[0], len(ms)))
	} else {
		o.Coll.(*store.Set).Hint(len(ms))
	}
	s := o.Coll.(*store.Set)
	added := 0
	for _, m := range ms {
		if s.Add(m) {
			added++
		}
	}
	if added > 0 {
		c.changedEvent(NotifySet, "sadd", key, o)
	}
	return resp.Int(int64(added))
}

func sremCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readSet(args[1])
	if s == nil || err != nil {
		if err != nil {
			return errReply(err)
		}
		return zero
	}
	o, _ := c.mutColl(args[1], store.TypeSet)
	s = o.Coll.(*store.Set)
	removed := 0
	for _, m := range args[2:] {
		if s.Remove(m) {
			removed++
			if s.Len() == 0 {
				break
			}
		}
	}
	if removed > 0 {
		c.changedEvent(NotifySet, "srem", args[1], o)
	}
	return resp.Int(int64(removed))
}

func smembersCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	return resp.Set(setReplyOf(setMembersOf(s))...)
}

func sismemberCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if s != nil && s.Has(args[2]) {
		return one
	}
	return zero
}

func smismemberCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	out := make([]resp.Value, len(args)-2)
	for i, m := range args[2:] {
		out[i] = zero
		if s != nil && s.Has(m) {
			out[i] = one
		}
	}
	return resp.Array(out...)
}

func scardCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return zero
	}
	return resp.Int(int64(s.Len()))
}

func spopCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args) > 3 {
		return errReply(resp.ErrSyntax)
	}
	count := int64(-1) // no count
	if len(args) == 3 {
		n, err := resp.ParseInt(args[2])
		if err != nil || n < 0 {
			return errf("ERR value is out of range, must be positive")
		}
		count = n
	}
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		if count < 0 {
			return resp.Null()
		}
		return resp.Set()
	}
	if count == 0 {
		return resp.Set()
	}
	if count >= int64(s.Len()) {
		all := setMembersOf(s)
		c.remove(args[1])
		c.notify(NotifySet, "spop", args[1])
		c.notify(NotifyGeneric, "del", args[1])
		return resp.Set(setReplyOf(all)...)
	}
	o, _ := c.mutColl(args[1], store.TypeSet)
	s = o.Coll.(*store.Set)
	if count < 0 {
		m := s.At(c.rand().IntN(s.Len()))
		s.Remove(m)
		c.changedEvent(NotifySet, "spop", args[1], o)
		return resp.Bulk(m)
	}
	idx := hsSample(c.rand(), s.Len(), int(count))
	popped := make([][]byte, len(idx))
	for i, j := range idx {
		popped[i] = s.At(j)
	}
	for _, m := range popped {
		s.Remove(m)
	}
	c.changedEvent(NotifySet, "spop", args[1], o)
	return resp.Set(setReplyOf(popped)...)
}

func srandmemberCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args) > 3 {
		return errReply(resp.ErrSyntax)
	}
	if len(args) == 2 {
		s, err := c.readSet(args[1])
		if err != nil {
			return errReply(err)
		}
		if s == nil {
			return resp.Null()
		}
		return resp.Bulk(s.At(c.rand().IntN(s.Len())))
	}
	count, err := hsRandCount(args[2])
	if err != nil {
		return errReply(err)
	}
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil || count == 0 {
		return resp.Array()
	}
	if count < -randMaxRepeats {
		return errf("ERR value is out of range")
	}
	idx := hsRandIndexes(c.rand(), s.Len(), count)
	out := make([]resp.Value, len(idx))
	for i, j := range idx {
		out[i] = resp.Bulk(s.At(j))
	}
	return resp.Array(out...)
}

func smoveCmd(c *Ctx, args [][]byte) resp.Value {
	srcKey, dstKey, m := args[1], args[2], args[3]
	if c.get(srcKey) == nil {
		return zero // before any type check, as Redis
	}
	src, err := c.readSet(srcKey)
	if err != nil {
		return errReply(err)
	}
	dst, err := c.readSet(dstKey)
	if err != nil {
		return errReply(err)
	}
	if string(srcKey) == string(dstKey) || !src.Has(m) {
		if src.Has(m) {
			return one
		}
		return zero
	}
	so, _ := c.mutColl(srcKey, store.TypeSet)
	so.Coll.(*store.Set).Remove(m)
	c.changedEvent(NotifySet, "srem", srcKey, so)
	var do *store.Object
	if dst == nil {
		do = c.newColl(dstKey, store.TypeSet, store.NewSet(c.Store.Limits(), m, 1))
	} else {
		do, _ = c.mutColl(dstKey, store.TypeSet)
	}
	if do.Coll.(*store.Set).Add(m) {
		c.changedEvent(NotifySet, "sadd", dstKey, do)
	}
	return one
}

// setOpKind computes SINTER (limit: stop after that many members, 0 = all),
// SUNION or SDIFF of sets (nil = empty), in element order.
type setOpKind uint8

const (
	setOpInter setOpKind = iota
	setOpUnion
	setOpDiff
)

func setCompute(op setOpKind, sets []*store.Set, limit int) [][]byte {
	switch op {
	case setOpInter:
		return setInter(sets, limit)
	case setOpDiff:
		var out [][]byte
		if sets[0] == nil {
			return nil
		}
		rest := sets[1:]
		sets[0].Ascend(func(m []byte) bool {
			for _, s := range rest {
				if s != nil && s.Has(m) {
					return true
				}
			}
			out = append(out, m)
			return true
		})
		return out
	}
	u := store.NewIntSet(nil) // only to gather the members
	for _, s := range sets {
		if s != nil {
			s.Ascend(func(m []byte) bool { u.Add(m); return true })
		}
	}
	return setMembersOf(u)
}

// inter walks the smallest set and keeps the members every other set has.
func setInter(sets []*store.Set, limit int) [][]byte {
	for _, s := range sets {
		if s == nil {
			return nil
		}
	}
	sorted := slices.Clone(sets)
	slices.SortStableFunc(sorted, func(a, b *store.Set) int { return a.Len() - b.Len() })
	var out [][]byte
	sorted[0].Ascend(func(m []byte) bool {
		for _, s := range sorted[1:] {
			if !s.Has(m) {
				return true
			}
		}
		out = append(out, m)
		return limit == 0 || len(out) < limit
	})
	return out
}

// setOpCmd is SINTER, SUNION and SDIFF.
func setOpCmd(op setOpKind) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		sets, err := c.readSets(args[1:])
		if err != nil {
			return errReply(err)
		}
		return resp.Set(setReplyOf(setCompute(op, sets, 0))...)
	}
}

// setStoreCmd is SINTERSTORE, SUNIONSTORE and SDIFFSTORE: the result
// replaces the destination (and its time to live); an empty one deletes it.
func setStoreCmd(op setOpKind) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		sets, err := c.readSets(args[2:])
		if err != nil {
			return errReply(err)
		}
		res := setCompute(op, sets, 0)
		if len(res) == 0 {
			if c.del(args[1]) {
				c.notify(NotifyGeneric, "del", args[1])
			}
			return zero
		}
		dst := store.NewIntSet(c.Store.Limits()) // as Redis builds it, for its encoding
		for _, m := range res {
			dst.Add(m)
		}
		c.newColl(args[1], store.TypeSet, dst)
		c.notify(NotifySet, setStoreEvents[op], args[1])
		return resp.Int(int64(dst.Len()))
	}
}

// setStoreEvents are the events of the STORE forms.
var setStoreEvents = [...]string{setOpInter: "sinterstore", setOpUnion: "sunionstore", setOpDiff: "sdiffstore"}

var (
	sinterCmd      = setOpCmd(setOpInter)
	sunionCmd      = setOpCmd(setOpUnion)
	sdiffCmd       = setOpCmd(setOpDiff)
	sinterstoreCmd = setStoreCmd(setOpInter)
	sunionstoreCmd = setStoreCmd(setOpUnion)
	sdiffstoreCmd  = setStoreCmd(setOpDiff)
)

func sintercardCmd(c *Ctx, args [][]byte) resp.Value {
	numkeys, err := resp.ParseInt(args[1])
	if err != nil || numkeys < 1 {
		return errf("ERR numkeys should be greater than 0")
	}
	if numkeys > int64(len(args)-2) {
		return errf("ERR Number of keys can't be greater than number of args")
	}
	keys := args[2 : 2+numkeys]
	var limit int64
	for j := 2 + int(numkeys); j < len(args); j += 2 {
		if !eq(args[j], "limit") || j+1 >= len(args) {
			return errReply(resp.ErrSyntax)
		}
		if limit, err = resp.ParseInt(args[j+1]); err != nil || limit < 0 {
			return errf("ERR LIMIT can't be negative")
		}
	}
	sets, err := c.readSets(keys)
	if err != nil {
		return errReply(err)
	}
	return resp.Int(int64(len(setInter(sets, int(min(limit, 1<<62))))))
}

// sscanCmd is SSCAN. As in Redis, an intset or listpack set is returned
// whole with cursor 0 whatever the cursor and COUNT.
func sscanCmd(c *Ctx, args [][]byte) resp.Value {
	cursor, err := resp.ParseUint(args[2])
	if err != nil {
		return errf("ERR invalid cursor")
	}
	s, err := c.readSet(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return hsScanReply(0, nil)
	}
	opts, err := hsScanOpts(args[3:])
	if err != nil {
		return errReply(err)
	}
	out := []resp.Value{}
	visit := func(m []byte) {
		if opts.pattern == nil || Match(opts.pattern, m) {
			out = append(out, resp.Bulk(m))
		}
	}
	if s.Encoding() != "hashtable" {
		s.Ascend(func(m []byte) bool { visit(m); return true })
		return hsScanReply(0, out)
	}
	return hsScanReply(s.Scan(cursor, int(min(opts.count, 1<<30)), visit), out)
}
