package fsm

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Hashes: HSET HSETNX HGET HMSET HMGET HGETALL HDEL HEXISTS HLEN HKEYS HVALS
// HINCRBY HINCRBYFLOAT HSTRLEN HRANDFIELD HSCAN. Replies listing fields come
// in the store's element order (64-bit field hash, then field; see
// store/hash.go): deterministic, unlike Redis's hash-table order.

var (
	hashCmd          = commandsOf("hash")
	aclReadHashFast  = []string{"read", "hash", "fast"}
	aclReadHashSlow  = []string{"read", "hash", "slow"}
	aclWriteHashFast = []string{"write", "hash", "fast"}
	hsTipsOrder      = []string{"nondeterministic_output_order"}
)

func init() {
	register(
		hashCmd("hset", -4, fW|fD|fF, 1, 1, 1, aclWriteHashFast, "2.0.0",
			"Creates or modifies the value of a field in a hash.",
			"O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.", hsetCmd(false)),
		hashCmd("hsetnx", 4, fW|fD|fF, 1, 1, 1, aclWriteHashFast, "2.0.0",
			"Sets the value of a field in a hash only when the field doesn't exist.", "O(1)", hsetnxCmd),
		hashCmd("hget", 3, fR|fF, 1, 1, 1, aclReadHashFast, "2.0.0",
			"Returns the value of a field in a hash.", "O(1)", hgetCmd),
		hashCmd("hmset", -4, fW|fD|fF, 1, 1, 1, aclWriteHashFast, "2.0.0",
			"Sets the values of multiple fields.", "O(N) where N is the number of fields being set.", hsetCmd(true)),
		hashCmd("hmget", -3, fR|fF, 1, 1, 1, aclReadHashFast, "2.0.0",
			"Returns the values of all fields in a hash.", "O(N) where N is the number of fields being requested.", hmgetCmd),
		hashCmd("hgetall", 2, fR, 1, 1, 1, aclReadHashSlow, "2.0.0",
			"Returns all fields and values in a hash.", "O(N) where N is the size of the hash.", hgetallCmd),
		hashCmd("hdel", -3, fW|fF, 1, 1, 1, aclWriteHashFast, "2.0.0",
			"Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.",
			"O(N) where N is the number of fields to be removed.", hdelCmd),
		hashCmd("hexists", 3, fR|fF, 1, 1, 1, aclReadHashFast, "2.0.0",
			"Determines whether a field exists in a hash.", "O(1)", hexistsCmd),
		hashCmd("hlen", 2, fR|fF, 1, 1, 1, aclReadHashFast, "2.0.0",
			"Returns the number of fields in a hash.", "O(1)", hlenCmd),
		hashCmd("hkeys", 2, fR, 1, 1, 1, aclReadHashSlow, "2.0.0",
			"Returns all fields in a hash.", "O(N) where N is the size of the hash.", hkeysCmd),
		hashCmd("hvals", 2, fR, 1, 1, 1, aclReadHashSlow, "2.0.0",
			"Returns all values in a hash.", "O(N) where N is the size of the hash.", hvalsCmd),
		hashCmd("hincrby", 4, fW|fD|fF, 1, 1, 1, aclWriteHashFast, "2.0.0",
			"Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", "O(1)", hincrbyCmd),
		hashCmd("hincrbyfloat", 4, fW|fD|fF, 1, 1, 1, aclWriteHashFast, "2.6.0",
			"Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", "O(1)", hincrbyfloatCmd),
		hashCmd("hstrlen", 3, fR|fF, 1, 1, 1, aclReadHashFast, "3.2.0",
			"Returns the length of the value of a field.", "O(1)", hstrlenCmd),
		hashCmd("hrandfield", -2, fR, 1, 1, 1, aclReadHashSlow, "6.2.0",
			"Returns one or more random fields from a hash.", "O(N) where N is the number of fields returned", hrandfieldCmd),
		hashCmd("hscan", -3, fR, 1, 1, 1, aclReadHashSlow, "2.8.0",
			"Iterates over fields and values of a hash.",
			"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", hscanCmd),
	)
	for _, n := range []string{"hgetall", "hkeys", "hvals"} {
		registry[n].Meta.Tips = hsTipsOrder
	}
	registry["hrandfield"].Meta.Tips = tipsNondet
	registry["hscan"].Meta.Tips = tipsNondet
}

// readHash returns the hash at key, nil if absent, or WRONGTYPE.
func (c *Ctx) readHash(key []byte) (*store.Hash, error) {
	return readColl[*store.Hash](c, key, store.TypeHash)
}

// writeHash returns the hash at key for changing in place, creating an
// empty one if absent (call c.changed after), or WRONGTYPE.
func (c *Ctx) writeHash(key []byte) (*store.Object, *store.Hash, error) {
	o, err := c.mutColl(key, store.TypeHash)
	if err != nil {
		return nil, nil, err
	}
	if o == nil {
		o = c.newColl(key, store.TypeHash, store.NewHash(c.Store.Limits()))
	}
	return o, o.Coll.(*store.Hash), nil
}

// hsetCmd is HSET (reply: fields added) and, replyOK, HMSET (reply: OK).
func hsetCmd(replyOK bool) func(c *Ctx, args [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return hset(c, args, replyOK) }
}

func hset(c *Ctx, args [][]byte, replyOK bool) resp.Value {
	if len(args)%2 != 0 {
		return errReply(resp.ErrWrongArgs(string(args[0])))
	}
	o, h, err := c.writeHash(args[1])
	if err != nil {
		return errReply(err)
	}
	maxLen := 0
	for _, a := range args[2:] {
		maxLen = max(maxLen, len(a))
	}
	h.Prepare((len(args)-2)/2, maxLen)
	added := 0
	for i := 2; i < len(args); i += 2 {
		if h.Set(args[i], args[i+1]) {
			added++
		}
	}
	c.changedEvent(NotifyHash, "hset", args[1], o)
	if replyOK {
		return resp.OK()
	}
	return resp.Int(int64(added))
}

func hsetnxCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	if h != nil && h.Has(args[2]) {
		return zero
	}
	o, h, _ := c.writeHash(args[1])
	h.Prepare(1, max(len(args[2]), len(args[3])))
	h.Set(args[2], args[3])
	c.changedEvent(NotifyHash, "hset", args[1], o)
	return one
}

func hgetCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	if h == nil {
		return resp.Null()
	}
	if v, ok := h.Get(args[2]); ok {
		return resp.Bulk(v)
	}
	return resp.Null()
}

func hmgetCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	out := make([]resp.Value, len(args)-2)
	for i, f := range args[2:] {
		out[i] = resp.Null()
		if h == nil {
			continue
		}
		if v, ok := h.Get(f); ok {
			out[i] = resp.Bulk(v)
		}
	}
	return resp.Array(out...)
}

// hashList is HGETALL (a map), HKEYS and HVALS (arrays).
func hashList(c *Ctx, key []byte, fields, values bool) resp.Value {
	h, err := c.readHash(key)
	if err != nil {
		return errReply(err)
	}
	var out []resp.Value
	if h != nil {
		n := h.Len()
		if fields && values {
			n *= 2
		}
		out = make([]resp.Value, 0, n)
		h.Ascend(func(f, v []byte) bool {
			if fields {
				out = append(out, resp.Bulk(f))
			}
			if values {
				out = append(out, resp.Bulk(v))
			}
			return true
		})
	}
	if fields && values {
		return resp.Map(out...)
	}
	return resp.Array(out...)
}

func hgetallCmd(c *Ctx, args [][]byte) resp.Value { return hashList(c, args[1], true, true) }
func hkeysCmd(c *Ctx, args [][]byte) resp.Value   { return hashList(c, args[1], true, false) }
func hvalsCmd(c *Ctx, args [][]byte) resp.Value   { return hashList(c, args[1], false, true) }

func hdelCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if h == nil || err != nil {
		if err != nil {
			return errReply(err)
		}
		return zero
	}
	o, h, _ := c.writeHash(args[1])
	deleted := 0
	for _, f := range args[2:] {
		if h.Delete(f) {
			deleted++
			if h.Len() == 0 {
				break
			}
		}
	}
	if deleted > 0 {
		c.changedEvent(NotifyHash, "hdel", args[1], o)
	}
	return resp.Int(int64(deleted))
}

func hexistsCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	if h != nil && h.Has(args[2]) {
		return one
	}
	return zero
}

func hlenCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if err != nil || h == nil {
		if err != nil {
			return errReply(err)
		}
		return zero
	}
	return resp.Int(int64(h.Len()))
}

func hstrlenCmd(c *Ctx, args [][]byte) resp.Value {
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	if h == nil {
		return zero
	}
	v, _ := h.Get(args[2])
	return resp.Int(int64(len(v)))
}

func hincrbyCmd(c *Ctx, args [][]byte) resp.Value {
	incr, err := resp.ParseInt(args[3])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	var cur int64
	if h != nil {
		if v, ok := h.Get(args[2]); ok {
			if cur, err = resp.ParseInt(v); err != nil {
				return errf("ERR hash value is not an integer")
			}
		}
	}
	if (incr < 0 && cur < 0 && incr < math.MinInt64-cur) || (incr > 0 && cur > 0 && incr > math.MaxInt64-cur) {
		return errReply(resp.ErrOverflow)
	}
	n := cur + incr
	o, h, _ := c.writeHash(args[1])
	h.Set(args[2], strconv.AppendInt(nil, n, 10))
	c.changedEvent(NotifyHash, "hincrby", args[1], o)
	return resp.Int(n)
}

func hincrbyfloatCmd(c *Ctx, args [][]byte) resp.Value {
	incr, err := resp.ParseLongDouble(args[3])
	if err != nil {
		return errReply(resp.ErrNotFloat)
	}
	if incr.IsInf() {
		return errf("ERR value is NaN or Infinity")
	}
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	var cur []byte
	if h != nil {
		if v, ok := h.Get(args[2]); ok {
			if _, err := resp.ParseLongDouble(v); err != nil {
				return errf("ERR hash value is not a float")
			}
			cur = v
		}
	}
	n, err := resp.IncrByFloat(cur, args[3])
	if err != nil {
		return errReply(err)
	}
	o, h, _ := c.writeHash(args[1])
	h.Set(args[2], n)
	c.changedEvent(NotifyHash, "hincrbyfloat", args[1], o)
	return resp.Bulk(n)
}

// hashPairs renders field/value pairs given flat: Redis 7.2 replies to
// HRANDFIELD … WITHVALUES with a flat array in RESP2 and an array of
// [field, value] arrays in RESP3.
func hashPairs(flat []resp.Value) resp.Value { return resp.Pairs(flat...) }

// hsRandCount parses the count of HRANDFIELD and SRANDMEMBER as Redis's
// getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX) does.
func hsRandCount(b []byte) (int64, error) {
	n, err := resp.ParseInt(b)
	if err != nil {
		return 0, resp.ErrNotInteger
	}
	if n == math.MinInt64 {
		return 0, resp.Errorf("ERR value is out of range, value must between %d and %d", -math.MaxInt64, math.MaxInt64)
	}
	return n, nil
}

// hsRandIndexes picks indexes of [0, size) for a random-member command with
// count as Redis reads it: a negative count picks -count indexes with
// repeats, a positive one min(count, size) distinct indexes (all of them,
// in order, when count >= size). Picks are uniform and depend only on r.
func hsRandIndexes(r *rand.Rand, size int, count int64) []int {
	if count < 0 || count == 1 {
		n := count
		if n < 0 {
			n = -n
		}
		out := make([]int, n)
		for i := range out {
			out[i] = r.IntN(size)
		}
		return out
	}
	if count >= int64(size) {
		out := make([]int, size)
		for i := range out {
			out[i] = i
		}
		return out
	}
	return hsSample(r, size, int(count))
}

// hsSample returns k distinct uniform indexes of [0, n), 0 < k < n:
// selection sampling (in order, O(n)) when k is a large part of n, else
// Floyd's algorithm (O(k); the map is only probed, never iterated).
func hsSample(r *rand.Rand, n, k int) []int {
	out := make([]int, 0, k)
	if k*3 > n {
		for i := 0; i < n && len(out) < k; i++ {
			if r.IntN(n-i) < k-len(out) {
				out = append(out, i)
			}
		}
		return out
	}
	seen := make(map[int]struct{}, k)
	for j := n - k; j < n; j++ {
		t := r.IntN(j + 1)
		if _, dup := seen[t]; dup {
			t = j
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	return out
}

func hrandfieldCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args) == 2 {
		h, err := c.readHash(args[1])
		if err != nil {
			return errReply(err)
		}
		if h == nil {
			return resp.Null()
		}
		f, _ := h.At(c.rand().IntN(h.Len()))
		return resp.Bulk(f)
	}
	withValues := len(args) == 4 && eq(args[3], "withvalues")
	if len(args) > 4 || (len(args) == 4 && !withValues) {
		return errReply(resp.ErrSyntax)
	}
	count, err := hsRandCount(args[2])
	if err != nil {
		return errReply(err)
	}
	if withValues && (count < -math.MaxInt64/2 || count > math.MaxInt64/2) {
		return errf("ERR value is out of range")
	}
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	if h == nil || count == 0 {
		return resp.Array()
	}
	if count < -randMaxRepeats {
		return errf("ERR value is out of range")
	}
	idx := hsRandIndexes(c.rand(), h.Len(), count)
	out := make([]resp.Value, 0, 2*len(idx))
	for _, i := range idx {
		f, v := h.At(i)
		out = append(out, resp.Bulk(f))
		if withValues {
			out = append(out, resp.Bulk(v))
		}
	}
	if withValues {
		return hashPairs(out)
	}
	return resp.Array(out...)
}

// hsScanReply is the [cursor, elements] reply of the *SCAN commands.
func hsScanReply(next uint64, elems []resp.Value) resp.Value {
	return resp.Array(resp.Bulk(strconv.AppendUint(nil, next, 10)), resp.Array(elems...))
}

// hsScanOpts parses HSCAN/SSCAN's options: SCAN's without TYPE.
func hsScanOpts(args [][]byte) (scanOpts, error) {
	opts, err := parseScanOpts(args)
	if err == nil && opts.typ != nil {
		err = resp.ErrSyntax
	}
	return opts, err
}

// hscanCmd is HSCAN. As in Redis, a listpack-encoded hash is returned whole
// with cursor 0 whatever the cursor and COUNT.
func hscanCmd(c *Ctx, args [][]byte) resp.Value {
	cursor, err := resp.ParseUint(args[2])
	if err != nil {
		return errf("ERR invalid cursor")
	}
	h, err := c.readHash(args[1])
	if err != nil {
		return errReply(err)
	}
	if h == nil {
		return hsScanReply(0, nil)
	}
	opts, err := hsScanOpts(args[3:])
	if err != nil {
		return errReply(err)
	}
	out := []resp.Value{}
	visit := func(f, v []byte) {
		if opts.pattern == nil || Match(opts.pattern, f) {
			out = append(out, resp.Bulk(f), resp.Bulk(v))
		}
	}
	if h.Encoding() != "hashtable" {
		h.Ascend(func(f, v []byte) bool { visit(f, v); return true })
		return hsScanReply(0, out)
	}
	next := h.Scan(cursor, int(min(opts.count, 1<<30)), visit)
	return hsScanReply(next, out)
}
