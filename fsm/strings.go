package fsm

import (
	"strings"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Strings: GET SET SETNX SETEX PSETEX MGET MSET MSETNX GETSET GETDEL GETEX
// APPEND STRLEN. Counters are in counters.go, ranges and LCS in ranges.go
// and lcs.go.

var (
	aclReadStrFast  = []string{"read", "string", "fast"}
	aclReadStrSlow  = []string{"read", "string", "slow"}
	aclWriteStrFast = []string{"write", "string", "fast"}
	aclWriteStrSlow = []string{"write", "string", "slow"}
)

func init() {
	register(
		strCmd("get", 2, fR|fF, 1, 1, 1, aclReadStrFast, "1.0.0",
			"Returns the string value of a key.", "O(1)", getCmd),
		strCmd("set", -3, fW|fD, 1, 1, 1, aclWriteStrSlow, "1.0.0",
			"Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "O(1)", setCmd),
		strCmd("setnx", 3, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "1.0.0",
			"Set the string value of a key only when the key doesn't exist.", "O(1)", setnxCmd),
		strCmd("setex", 4, fW|fD, 1, 1, 1, aclWriteStrSlow, "2.0.0",
			"Sets the string value and expiration time of a key. Creates the key if it doesn't exist.", "O(1)", setexCmd(unitEX)),
		strCmd("psetex", 4, fW|fD, 1, 1, 1, aclWriteStrSlow, "2.6.0",
			"Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.", "O(1)", setexCmd(unitPX)),
		strCmd("mget", -2, fR|fF, 1, -1, 1, aclReadStrFast, "1.0.0",
			"Atomically returns the string values of one or more keys.", "O(N) where N is the number of keys to retrieve.", mgetCmd),
		strCmd("mset", -3, fW|fD, 1, -1, 2, aclWriteStrSlow, "1.0.1",
			"Atomically creates or modifies the string values of one or more keys.", "O(N) where N is the number of keys to set.", msetCmd),
		strCmd("msetnx", -3, fW|fD, 1, -1, 2, aclWriteStrSlow, "1.0.1",
			"Atomically modifies the string values of one or more keys only when all keys don't exist.", "O(N) where N is the number of keys to set.", msetnxCmd),
		strCmd("getset", 3, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "1.0.0",
			"Returns the previous string value of a key after setting it to a new value.", "O(1)", getsetCmd),
		strCmd("getdel", 2, fW|fF, 1, 1, 1, aclWriteStrFast, "6.2.0",
			"Returns the string value of a key after deleting the key.", "O(1)", getdelCmd),
		strCmd("getex", -2, fW|fF, 1, 1, 1, aclWriteStrFast, "6.2.0",
			"Returns the string value of a key after setting its expiration time.", "O(1)", getexCmd),
		strCmd("append", 3, fW|fD|fF, 1, 1, 1, aclWriteStrFast, "2.0.0",
			"Appends a string to the value of a key. Creates the key if it doesn't exist.",
			"O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.", appendCmd),
		strCmd("strlen", 2, fR|fF, 1, 1, 1, aclReadStrFast, "2.2.0",
			"Returns the length of a string value.", "O(1)", strlenCmd),
	)
	registry["mget"].Meta.Tips = tipsMultiOnly
	registry["mset"].Meta.Tips = tipsMultiOK
}

func getCmd(c *Ctx, args [][]byte) resp.Value {
	val, found, err := c.stringValue(args[1])
	if err != nil {
		return errReply(err)
	}
	if !found {
		return resp.Null()
	}
	return resp.Bulk(val)
}

func setCmd(c *Ctx, args [][]byte) resp.Value {
	opts, err := parseSetOpts(args[3:], false)
	if err != nil {
		return errReply(err)
	}
	var exp int64
	if opts.unit != unitNone {
		if exp, err = expireAt(c.Now, opts.expire, opts.unit, "set"); err != nil {
			return errReply(err)
		}
	}
	key := args[1]
	old := c.get(key)
	if opts.get && old != nil && old.Type != store.TypeString {
		return errReply(resp.ErrWrongType)
	}
	reply := resp.OK()
	if opts.get {
		reply = oldValue(old)
	}
	if (opts.nx && old != nil) || (opts.xx && old == nil) {
		if opts.get {
			return reply
		}
		return resp.Null()
	}
	if opts.keepTTL && old != nil {
		exp = old.ExpireAt
	}
	gone := c.setWithExpiry(key, args[2], exp)
	c.notifySet(key, opts.unit != unitNone)
	if gone {
		// Redis stores the key and expires it on its next access; here it
		// is gone at once, so it expires at once.
		c.notify(NotifyExpired, "expired", key)
	}
	return reply
}

func oldValue(o *store.Object) resp.Value {
	if o == nil {
		return resp.Null()
	}
	return resp.Bulk(o.Str)
}

// strAndExpiry returns a string key's value and deadline (nil and 0 if the
// key is absent): what a command that rewrites the value starts from and
// keeps.
func strAndExpiry(o *store.Object) ([]byte, int64) {
	if o == nil {
		return nil, 0
	}
	return o.Str, o.ExpireAt
}

// setWithExpiry stores val; an absolute expiry already in the past deletes
// the key instead (the key would be expired at once) and reports true.
func (c *Ctx) setWithExpiry(key, val []byte, exp int64) bool {
	if store.DeadlinePassed(exp, c.Now) {
		c.notifyWrite(key) // as if stored: "new" if there was no key
		c.Store.Delete(key)
		c.modified(key) // Redis stores it, then it is expired: changed either way
		return true
	}
	c.putString(key, val, exp)
	return false
}

// notifySet records SET's events: "set", then "expire" when an expiry was
// given (Redis's setGenericCommand).
func (c *Ctx) notifySet(key []byte, expiry bool) {
	c.notify(NotifyString, "set", key)
	if expiry {
		c.notify(NotifyGeneric, "expire", key)
	}
}

func setnxCmd(c *Ctx, args [][]byte) resp.Value {
	if c.get(args[1]) != nil {
		return zero
	}
	c.putString(args[1], args[2], 0)
	c.notifySet(args[1], false)
	return one
}

func setexCmd(u expireUnit) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		exp, err := expireAt(c.Now, args[2], u, strings.ToLower(string(args[0])))
		if err != nil {
			return errReply(err)
		}
		c.putString(args[1], args[3], exp)
		c.notifySet(args[1], true)
		return resp.OK()
	}
}

func mgetCmd(c *Ctx, args [][]byte) resp.Value {
	out := make([]resp.Value, 0, len(args)-1)
	for _, k := range args[1:] {
		val, found, err := c.stringValue(k)
		if !found || err != nil {
			out = append(out, resp.Null())
			continue
		}
		out = append(out, resp.Bulk(val))
	}
	return resp.Array(out...)
}

func msetCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args)%2 == 0 {
		return errReply(resp.ErrWrongArgs(string(args[0])))
	}
	for i := 1; i < len(args); i += 2 {
		c.putString(args[i], args[i+1], 0)
		c.notify(NotifyString, "set", args[i])
	}
	return resp.OK()
}

func msetnxCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args)%2 == 0 {
		return errReply(resp.ErrWrongArgs(string(args[0])))
	}
	for i := 1; i < len(args); i += 2 {
		if c.get(args[i]) != nil {
			return zero
		}
	}
	msetCmd(c, args)
	return one
}

func getsetCmd(c *Ctx, args [][]byte) resp.Value {
	old, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	c.putString(args[1], args[2], 0)
	c.notify(NotifyString, "set", args[1])
	return oldValue(old)
}

func getdelCmd(c *Ctx, args [][]byte) resp.Value {
	o, err := c.getString(args[1])
	if err != nil || o == nil {
		if err != nil {
			return errReply(err)
		}
		return resp.Null()
	}
	c.remove(args[1])
	c.notify(NotifyGeneric, "del", args[1])
	return resp.Bulk(o.Str)
}

func getexCmd(c *Ctx, args [][]byte) resp.Value {
	opts, err := parseSetOpts(args[2:], true)
	if err != nil {
		return errReply(err)
	}
	var exp int64
	if opts.unit != unitNone {
		if exp, err = expireAt(c.Now, opts.expire, opts.unit, "getex"); err != nil {
			return errReply(err)
		}
	}
	o, err := c.getString(args[1])
	if err != nil || o == nil {
		if err != nil {
			return errReply(err)
		}
		return resp.Null()
	}
	switch {
	case store.DeadlinePassed(exp, c.Now):
		c.remove(args[1])
		c.notify(NotifyGeneric, "del", args[1])
	case exp != 0:
		c.putString(args[1], o.Str, exp)
		c.notify(NotifyGeneric, "expire", args[1])
	case opts.persist && o.ExpireAt != 0:
		c.putString(args[1], o.Str, 0)
		c.notify(NotifyGeneric, "persist", args[1])
	}
	return resp.Bulk(o.Str)
}

// maxString is Redis's default proto-max-bulk-len (512 MB).
const maxString = 512 << 20

// checkLength is Redis's checkStringLength: size+extra must fit 512 MB.
func checkLength(size, extra int64) error {
	if extra > maxString || size > maxString-extra {
		return resp.ErrStringTooLong
	}
	return nil
}

func appendCmd(c *Ctx, args [][]byte) resp.Value {
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		c.putString(args[1], args[2], 0)
		c.notify(NotifyString, "append", args[1])
		return resp.Int(int64(len(args[2])))
	}
	if err := checkLength(int64(len(o.Str)), int64(len(args[2]))); err != nil {
		return errReply(err)
	}
	v := make([]byte, 0, len(o.Str)+len(args[2]))
	v = append(append(v, o.Str...), args[2]...)
	c.put(args[1], &store.Object{Type: store.TypeString, Str: v, ExpireAt: o.ExpireAt})
	c.notify(NotifyString, "append", args[1])
	return resp.Int(int64(len(v)))
}

func strlenCmd(c *Ctx, args [][]byte) resp.Value {
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		return zero
	}
	return resp.Int(int64(len(o.Str)))
}
