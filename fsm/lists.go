package fsm

import (
	"bytes"
	"math"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Lists: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT
// LREM LTRIM LPOS LMOVE RPOPLPUSH LMPOP, and BLPOP BRPOP BLMOVE BRPOPLPUSH
// BLMPOP served at once (what Redis does inside MULTI or a script: the
// first non-empty key, else a null reply; the blocking layer decides whether
// to wait). As in Redis, arguments are checked in t_list.c's order, so a
// syntax error wins over WRONGTYPE where Redis parses first.

var listCmd = commandsOf("list")

var (
	listACLReadFast  = []string{"read", "list", "fast"}
	listACLReadSlow  = []string{"read", "list", "slow"}
	listACLWriteFast = []string{"write", "list", "fast"}
	listACLWriteSlow = []string{"write", "list", "slow"}
	listACLBlocking  = []string{"write", "list", "slow", "blocking"}
)

const (
	listPushComplexity = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."
	listMPopComplexity = "O(N+M) where N is the number of provided keys and M is the number of elements returned."
	listFBlock         = resp.FlagBlocking
	listFMovable       = resp.FlagMovableKeys
)

func init() {
	register(
		listCmd("lpush", -3, fW|fD|fF, 1, 1, 1, listACLWriteFast, "1.0.0",
			"Prepends one or more elements to a list. Creates the key if it doesn't exist.", listPushComplexity, listPush(true, false)),
		listCmd("rpush", -3, fW|fD|fF, 1, 1, 1, listACLWriteFast, "1.0.0",
			"Appends one or more elements to a list. Creates the key if it doesn't exist.", listPushComplexity, listPush(false, false)),
		listCmd("lpushx", -3, fW|fD|fF, 1, 1, 1, listACLWriteFast, "2.2.0",
			"Prepends one or more elements to a list only when the list exists.", listPushComplexity, listPush(true, true)),
		listCmd("rpushx", -3, fW|fD|fF, 1, 1, 1, listACLWriteFast, "2.2.0",
			"Appends an element to a list only when the list exists.", listPushComplexity, listPush(false, true)),
		listCmd("lpop", -2, fW|fF, 1, 1, 1, listACLWriteFast, "1.0.0",
			"Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
			"O(N) where N is the number of elements returned", listPop(true)),
		listCmd("rpop", -2, fW|fF, 1, 1, 1, listACLWriteFast, "1.0.0",
			"Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
			"O(N) where N is the number of elements returned", listPop(false)),
		listCmd("llen", 2, fR|fF, 1, 1, 1, listACLReadFast, "1.0.0",
			"Returns the length of a list.", "O(1)", llenCmd),
		listCmd("lrange", 4, fR, 1, 1, 1, listACLReadSlow, "1.0.0",
			"Returns a range of elements from a list.",
			"O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.", lrangeCmd),
		listCmd("lindex", 3, fR, 1, 1, 1, listACLReadSlow, "1.0.0",
			"Returns an element from a list by its index.",
			"O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).", lindexCmd),
		listCmd("lset", 4, fW|fD, 1, 1, 1, listACLWriteSlow, "1.0.0",
			"Sets the value of an element in a list by its index.",
			"O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).", lsetCmd),
		listCmd("linsert", 5, fW|fD, 1, 1, 1, listACLWriteSlow, "2.2.0",
			"Inserts an element before or after another element in a list.",
			"O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).", linsertCmd),
		listCmd("lrem", 4, fW, 1, 1, 1, listACLWriteSlow, "1.0.0",
			"Removes elements from a list. Deletes the list if the last element was removed.",
			"O(N+M) where N is the length of the list and M is the number of elements removed.", lremCmd),
		listCmd("ltrim", 4, fW, 1, 1, 1, listACLWriteSlow, "1.0.0",
			"Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
			"O(N) where N is the number of elements to be removed by the operation.", ltrimCmd),
		listCmd("lpos", -3, fR, 1, 1, 1, listACLReadSlow, "6.0.6",
			"Returns the index of matching elements in a list.",
			"O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.", lposCmd),
		listCmd("lmove", 5, fW|fD, 1, 2, 1, listACLWriteSlow, "6.2.0",
			"Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.", "O(1)", lmoveCmd),
		listCmd("rpoplpush", 3, fW|fD, 1, 2, 1, listACLWriteSlow, "1.2.0",
			"Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.", "O(1)", rpoplpushCmd),
		listCmd("lmpop", -4, fW|listFMovable, 0, 0, 0, listACLWriteSlow, "7.0.0",
			"Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.", listMPopComplexity, lmpopCmd),
		listCmd("blpop", -3, fW|listFBlock, 1, -2, 1, listACLBlocking, "2.0.0",
			"Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
			"O(N) where N is the number of provided keys.", bpopCmd(true)).blocks(listPopBlock),
		listCmd("brpop", -3, fW|listFBlock, 1, -2, 1, listACLBlocking, "2.0.0",
			"Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped.",
			"O(N) where N is the number of provided keys.", bpopCmd(false)).blocks(listPopBlock),
		listCmd("blmove", 6, fW|fD|listFBlock, 1, 2, 1, listACLBlocking, "6.2.0",
			"Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved.", "O(1)", blmoveCmd).blocks(moveBlock(5)),
		listCmd("brpoplpush", 4, fW|fD|listFBlock, 1, 2, 1, listACLBlocking, "2.2.0",
			"Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped.", "O(1)", brpoplpushCmd).blocks(moveBlock(3)),
		listCmd("blmpop", -5, fW|listFBlock|listFMovable, 0, 0, 0, listACLBlocking, "7.0.0",
			"Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.", listMPopComplexity, blmpopCmd).blocks(listMPopBlock),
	)
	registry["lmpop"].Meta.Keys = numkeysKeysAt(1)
	registry["blmpop"].Meta.Keys = numkeysKeysAt(2)
}

// --- access helpers -------------------------------------------------------

// listOf returns the list at key for reading (nil if absent) or WRONGTYPE.
func (c *Ctx) listOf(key []byte) (*store.List, error) {
	return readColl[*store.List](c, key, store.TypeList)
}

// withList is fn's reply for the list at key, absent when there is none,
// or WRONGTYPE.
func (c *Ctx) withList(key []byte, absent resp.Value, fn func(l *store.List) resp.Value) resp.Value {
	l, err := c.listOf(key)
	switch {
	case err != nil:
		return errReply(err)
	case l == nil:
		return absent
	}
	return fn(l)
}

// listMut returns key's object and list for changing in place (nil if
// absent) or WRONGTYPE; call c.changed(key, o) afterwards.
func (c *Ctx) listMut(key []byte) (*store.Object, *store.List, error) {
	return writeColl[*store.List](c, key, store.TypeList)
}

// listCreate stores a new empty list at key (the caller fills it).
func (c *Ctx) listCreate(key []byte) (*store.Object, *store.List) {
	l := store.NewList()
	return c.newColl(key, store.TypeList, l), l
}

// listPopN pops up to n elements from one end, head or tail first.
func listPopN(l *store.List, left bool, n int) [][]byte {
	if left {
		return l.PopFront(n)
	}
	return l.PopBack(n)
}

// pushEvent and popEvent are the list events of a push or pop at one end.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

func listPushTo(l *store.List, left bool, v []byte) {
	if left {
		l.PushFront(v)
	} else {
		l.PushBack(v)
	}
}

// --- argument parsing -----------------------------------------------------

// listInt parses a long argument (getLongFromObjectOrReply).
func listInt(b []byte) (int, error) {
	n, err := resp.ParseInt(b)
	if err != nil {
		return 0, resp.ErrNotInteger
	}
	return int(n), nil
}

// listRange parses an argument in [lo, hi] like getRangeLongFromObjectOrReply:
// msg replaces both the parse and the range error when given.
func listRange(b []byte, lo, hi int64, msg string) (int, error) {
	n, err := resp.ParseInt(b)
	if err != nil {
		if msg != "" {
			return 0, resp.NewError("ERR " + msg)
		}
		return 0, resp.ErrNotInteger
	}
	if n < lo || n > hi {
		if msg != "" {
			return 0, resp.NewError("ERR " + msg)
		}
		return 0, resp.Errorf("ERR value is out of range, value must between %d and %d", lo, hi)
	}
	return int(n), nil
}

// listPositive is getPositiveLongFromObjectOrReply.
func listPositive(b []byte, msg string) (int, error) {
	if msg == "" {
		msg = "value is out of range, must be positive"
	}
	return listRange(b, 0, math.MaxInt64, msg)
}

// listWhere parses LEFT or RIGHT (true for LEFT).
func listWhere(b []byte) (bool, error) {
	switch {
	case eq(b, "left"):
		return true, nil
	case eq(b, "right"):
		return false, nil
	}
	return false, resp.ErrSyntax
}

// --- commands ---------------------------------------------------------------

// listPush is LPUSH/RPUSH, and with xx LPUSHX/RPUSHX.
func listPush(left, xx bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		key := args[1]
		o, l, err := c.listMut(key)
		if err != nil {
			return errReply(err)
		}
		if o == nil {
			if xx {
				return zero
			}
			o, l = c.listCreate(key)
		}
		if left {
			l.PushFront(args[2:]...)
		} else {
			l.PushBack(args[2:]...)
		}
		c.changedEvent(NotifyList, pushEvent(left), key, o)
		c.signalReady(key)
		return resp.Int(int64(l.Len()))
	}
}

// listPop is LPOP/RPOP key [count].
func listPop(left bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if len(args) > 3 {
			if left {
				return errReply(resp.ErrWrongArgs("lpop"))
			}
			return errReply(resp.ErrWrongArgs("rpop"))
		}
		hasCount := len(args) == 3
		count := 0
		if hasCount {
			var err error
			if count, err = listPositive(args[2], ""); err != nil {
				return errReply(err)
			}
		}
		key := args[1]
		l, err := c.listOf(key)
		switch {
		case err != nil:
			return errReply(err)
		case l == nil && hasCount:
			return resp.NullArray()
		case l == nil:
			return resp.Null()
		case hasCount && count == 0:
			return resp.Array()
		}
		o, l, _ := c.listMut(key)
		if !hasCount {
			v := listPopN(l, left, 1)[0]
			c.changedEvent(NotifyList, popEvent(left), key, o)
			return resp.Bulk(v)
		}
		vals := listPopN(l, left, count)
		c.changedEvent(NotifyList, popEvent(left), key, o)
		return resp.BulkArray(vals)
	}
}

func llenCmd(c *Ctx, args [][]byte) resp.Value {
	return c.withList(args[1], zero, func(l *store.List) resp.Value { return resp.Int(int64(l.Len())) })
}

func lrangeCmd(c *Ctx, args [][]byte) resp.Value {
	start, err := listInt(args[2])
	if err != nil {
		return errReply(err)
	}
	stop, err := listInt(args[3])
	if err != nil {
		return errReply(err)
	}
	return c.withList(args[1], resp.Array(), func(l *store.List) resp.Value {
		out := make([][]byte, 0, l.RangeLen(start, stop))
		l.Range(start, stop, func(v []byte) bool {
			out = append(out, v)
			return true
		})
		return resp.BulkArray(out)
	})
}

func lindexCmd(c *Ctx, args [][]byte) resp.Value {
	return c.withList(args[1], resp.Null(), func(l *store.List) resp.Value {
		i, err := listInt(args[2])
		if err != nil {
			return errReply(err)
		}
		v, ok := l.Index(i)
		if !ok {
			return resp.Null()
		}
		return resp.Bulk(v)
	})
}

var errListIndexRange = resp.NewError("ERR index out of range")

func lsetCmd(c *Ctx, args [][]byte) resp.Value {
	key := args[1]
	return c.withList(key, errReply(resp.ErrNoSuchKey), func(l *store.List) resp.Value {
		i, err := listInt(args[2])
		if err != nil {
			return errReply(err)
		}
		if _, ok := l.Index(i); !ok {
			return errReply(errListIndexRange)
		}
		o, l, _ := c.listMut(key)
		l.Set(i, args[3])
		c.changedEvent(NotifyList, "lset", key, o)
		return resp.OK()
	})
}

func linsertCmd(c *Ctx, args [][]byte) resp.Value {
	var after bool
	switch {
	case eq(args[2], "after"):
		after = true
	case eq(args[2], "before"):
	default:
		return errReply(resp.ErrSyntax)
	}
	key := args[1]
	return c.withList(key, zero, func(l *store.List) resp.Value {
		found := false
		l.Walk(0, false, func(v []byte) bool {
			found = bytes.Equal(v, args[3])
			return !found
		})
		if !found {
			return resp.Int(-1)
		}
		o, l, _ := c.listMut(key)
		l.Insert(args[3], args[4], after)
		c.changedEvent(NotifyList, "linsert", key, o)
		return resp.Int(int64(l.Len()))
	})
}

func lremCmd(c *Ctx, args [][]byte) resp.Value {
	count, err := listInt(args[2])
	if err != nil {
		return errReply(err)
	}
	key := args[1]
	return c.withList(key, zero, func(l *store.List) resp.Value {
		if l.Pos(args[3], 1, 1, 0) == nil {
			return zero
		}
		o, l, _ := c.listMut(key)
		removed := l.Remove(count, args[3])
		c.changedEvent(NotifyList, "lrem", key, o)
		return resp.Int(int64(removed))
	})
}

func ltrimCmd(c *Ctx, args [][]byte) resp.Value {
	start, err := listInt(args[2])
	if err != nil {
		return errReply(err)
	}
	stop, err := listInt(args[3])
	if err != nil {
		return errReply(err)
	}
	key := args[1]
	o, l, err := c.listMut(key)
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		return resp.OK()
	}
	l.Trim(start, stop)
	c.changedEvent(NotifyList, "ltrim", key, o)
	return resp.OK()
}

var errListRankZero = resp.NewError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")

func lposCmd(c *Ctx, args [][]byte) resp.Value {
	rank, count, maxlen := 1, -1, 0 // count -1: no COUNT option
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		var err error
		switch {
		case eq(args[j], "rank") && more:
			j++
			if rank, err = listRange(args[j], -math.MaxInt64, math.MaxInt64, ""); err == nil && rank == 0 {
				err = errListRankZero
			}
		case eq(args[j], "count") && more:
			j++
			count, err = listPositive(args[j], "COUNT can't be negative")
		case eq(args[j], "maxlen") && more:
			j++
			maxlen, err = listPositive(args[j], "MAXLEN can't be negative")
		default:
			err = resp.ErrSyntax
		}
		if err != nil {
			return errReply(err)
		}
	}
	l, err := c.listOf(args[1])
	if err != nil {
		return errReply(err)
	}
	if count == -1 {
		if l == nil {
			return resp.Null()
		}
		pos := l.Pos(args[2], rank, 1, maxlen)
		if len(pos) == 0 {
			return resp.Null()
		}
		return resp.Int(int64(pos[0]))
	}
	if l == nil {
		return resp.Array()
	}
	pos := l.Pos(args[2], rank, count, maxlen)
	out := make([]resp.Value, len(pos))
	for i, p := range pos {
		out[i] = resp.Int(int64(p))
	}
	return resp.Array(out...)
}

func lmoveCmd(c *Ctx, args [][]byte) resp.Value {
	from, err := listWhere(args[3])
	if err != nil {
		return errReply(err)
	}
	to, err := listWhere(args[4])
	if err != nil {
		return errReply(err)
	}
	return c.lmove(args[1], args[2], from, to)
}

func rpoplpushCmd(c *Ctx, args [][]byte) resp.Value {
	return c.lmove(args[1], args[2], false, true)
}

// lmove pops from src's end (left if fromLeft) and pushes to dst's end,
// replying with the element, or null if src is absent (Redis's
// lmoveGenericCommand).
func (c *Ctx) lmove(src, dst []byte, fromLeft, toLeft bool) resp.Value {
	sl, err := c.listOf(src)
	if err != nil {
		return errReply(err)
	}
	if sl == nil {
		return resp.Null()
	}
	if _, err := c.listOf(dst); err != nil {
		return errReply(err)
	}
	so, sl, _ := c.listMut(src)
	var v []byte
	if bytes.Equal(src, dst) {
		v = sl.Rotate(fromLeft, toLeft)
		c.notify(NotifyList, pushEvent(toLeft), dst)
		c.changedEvent(NotifyList, popEvent(fromLeft), src, so)
	} else {
		v = listPopN(sl, fromLeft, 1)[0]
		do, dl, _ := c.listMut(dst)
		if do == nil {
			do, dl = c.listCreate(dst)
		}
		listPushTo(dl, toLeft, v)
		c.changedEvent(NotifyList, pushEvent(toLeft), dst, do)
		c.changedEvent(NotifyList, popEvent(fromLeft), src, so)
	}
	c.signalReady(dst)
	return resp.Bulk(v)
}

// listMPopArgs parses LMPOP/BLMPOP's numkeys (at index at), keys, LEFT|RIGHT
// and COUNT (1 when absent), as lmpopGenericCommand does.
func listMPopArgs(args [][]byte, at int) (keys [][]byte, left bool, count int, err error) {
	numkeys, err := listRange(args[at], 1, math.MaxInt64, "numkeys should be greater than 0")
	if err != nil {
		return nil, false, 0, err
	}
	where := at + 1 + numkeys
	if numkeys > len(args) || where >= len(args) {
		return nil, false, 0, resp.ErrSyntax
	}
	if left, err = listWhere(args[where]); err != nil {
		return nil, false, 0, err
	}
	count = -1
	for j := where + 1; j < len(args); j++ {
		if count == -1 && eq(args[j], "count") && j < len(args)-1 {
			j++
			if count, err = listRange(args[j], 1, math.MaxInt64, "count should be greater than 0"); err != nil {
				return nil, false, 0, err
			}
			continue
		}
		return nil, false, 0, resp.ErrSyntax
	}
	if count == -1 {
		count = 1
	}
	return args[at+1 : where], left, count, nil
}

// listPopFirst pops from the first non-empty list of keys: count elements
// as [key, [elements]] when nested, else one element as [key, element]; a
// null array when every key is empty or absent. A key of another type
// stops the search with WRONGTYPE, as in Redis.
func (c *Ctx) listPopFirst(keys [][]byte, left bool, count int, nested bool) resp.Value {
	for _, key := range keys {
		l, err := c.listOf(key)
		if err != nil {
			return errReply(err)
		}
		if l == nil {
			continue
		}
		o, l, _ := c.listMut(key)
		vals := listPopN(l, left, count)
		c.changedEvent(NotifyList, popEvent(left), key, o)
		if nested {
			return resp.Array(resp.Bulk(key), resp.BulkArray(vals))
		}
		return resp.Array(resp.Bulk(key), resp.Bulk(vals[0]))
	}
	return resp.NullArray()
}

func lmpopCmd(c *Ctx, args [][]byte) resp.Value {
	keys, left, count, err := listMPopArgs(args, 1)
	if err != nil {
		return errReply(err)
	}
	return c.listPopFirst(keys, left, count, true)
}

// bpopCmd is BLPOP/BRPOP served at once.
func bpopCmd(left bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if _, err := blockDeadline(c.Now, args[len(args)-1]); err != nil {
			return errReply(err)
		}
		return c.listPopFirst(args[1:len(args)-1], left, 1, false)
	}
}

func blmpopCmd(c *Ctx, args [][]byte) resp.Value {
	keys, left, count, err := listMPopArgs(args, 2)
	if err != nil {
		return errReply(err)
	}
	if _, err := blockDeadline(c.Now, args[1]); err != nil {
		return errReply(err)
	}
	return c.listPopFirst(keys, left, count, true)
}

func blmoveCmd(c *Ctx, args [][]byte) resp.Value {
	from, err := listWhere(args[3])
	if err != nil {
		return errReply(err)
	}
	to, err := listWhere(args[4])
	if err != nil {
		return errReply(err)
	}
	if _, err := blockDeadline(c.Now, args[5]); err != nil {
		return errReply(err)
	}
	return c.lmove(args[1], args[2], from, to)
}

func brpoplpushCmd(c *Ctx, args [][]byte) resp.Value {
	if _, err := blockDeadline(c.Now, args[3]); err != nil {
		return errReply(err)
	}
	return c.lmove(args[1], args[2], false, true)
}
