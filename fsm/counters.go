package fsm

import (
	"math"
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Counters: INCR DECR INCRBY DECRBY INCRBYFLOAT. Like Redis they keep the
// key's time to live.

func init() {
	register(
		strCmd("incr", 2, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "1.0.0",
			"Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "O(1)", incrCmd(1)),
		strCmd("decr", 2, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "1.0.0",
			"Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.", "O(1)", incrCmd(-1)),
		strCmd("incrby", 3, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "1.0.0",
			"Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "O(1)", incrbyCmd),
		strCmd("decrby", 3, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "1.0.0",
			"Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.", "O(1)", decrbyCmd),
		strCmd("incrbyfloat", 3, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "2.6.0",
			"Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.", "O(1)", incrbyfloatCmd),
	)
}

func incrCmd(by int64) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return c.incrBy(args[1], by) }
}

func incrbyCmd(c *Ctx, args [][]byte) resp.Value {
	by, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	return c.incrBy(args[1], by)
}

func decrbyCmd(c *Ctx, args [][]byte) resp.Value {
	by, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	if by == math.MinInt64 {
		return errf("ERR decrement would overflow")
	}
	return c.incrBy(args[1], -by)
}

// incrBy is Redis's incrDecrCommand.
func (c *Ctx) incrBy(key []byte, by int64) resp.Value {
	o, err := c.getString(key)
	if err != nil {
		return errReply(err)
	}
	var cur, exp int64
	if o != nil {
		if cur, err = resp.ParseInt(o.Str); err != nil {
			return errReply(resp.ErrNotInteger)
		}
		exp = o.ExpireAt
	}
	if (by < 0 && cur < 0 && by < math.MinInt64-cur) || (by > 0 && cur > 0 && by > math.MaxInt64-cur) {
		return errReply(resp.ErrOverflow)
	}
	n := cur + by
	c.put(key, &store.Object{Type: store.TypeString, Str: strconv.AppendInt(nil, n, 10), ExpireAt: exp})
	c.notify(NotifyString, "incrby", key)
	return resp.Int(n)
}

func incrbyfloatCmd(c *Ctx, args [][]byte) resp.Value {
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	cur, exp := strAndExpiry(o)
	v, err := resp.IncrByFloat(cur, args[2])
	if err != nil {
		return errReply(err)
	}
	c.put(args[1], &store.Object{Type: store.TypeString, Str: v, ExpireAt: exp})
	c.notify(NotifyString, "incrbyfloat", args[1])
	return resp.Bulk(v)
}
