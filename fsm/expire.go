package fsm

import (
	"math"
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// Expiry: EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME PEXPIRETIME
// PERSIST.

func init() {
	register(
		genCmd("expire", -3, fW|fF, 1, 1, 1, aclKeyWriteFast, "1.0.0",
			"Sets the expiration time of a key in seconds.", "O(1)", expireCmd(unitEX)),
		genCmd("pexpire", -3, fW|fF, 1, 1, 1, aclKeyWriteFast, "2.6.0",
			"Sets the expiration time of a key in milliseconds.", "O(1)", expireCmd(unitPX)),
		genCmd("expireat", -3, fW|fF, 1, 1, 1, aclKeyWriteFast, "1.2.0",
			"Sets the expiration time of a key to a Unix timestamp.", "O(1)", expireCmd(unitEXAT)),
		genCmd("pexpireat", -3, fW|fF, 1, 1, 1, aclKeyWriteFast, "2.6.0",
			"Sets the expiration time of a key to a Unix milliseconds timestamp.", "O(1)", expireCmd(unitPXAT)),
		genCmd("ttl", 2, fR|fF, 1, 1, 1, aclKeyReadFast, "1.0.0",
			"Returns the expiration time in seconds of a key.", "O(1)", ttlCmd(false, false)),
		genCmd("pttl", 2, fR|fF, 1, 1, 1, aclKeyReadFast, "2.6.0",
			"Returns the expiration time in milliseconds of a key.", "O(1)", ttlCmd(true, false)),
		genCmd("expiretime", 2, fR|fF, 1, 1, 1, aclKeyReadFast, "7.0.0",
			"Returns the expiration time of a key as a Unix timestamp.", "O(1)", ttlCmd(false, true)),
		genCmd("pexpiretime", 2, fR|fF, 1, 1, 1, aclKeyReadFast, "7.0.0",
			"Returns the expiration time of a key as a Unix milliseconds timestamp.", "O(1)", ttlCmd(true, true)),
		genCmd("persist", 2, fW|fF, 1, 1, 1, aclKeyWriteFast, "2.2.0",
			"Removes the expiration time of a key.", "O(1)", persistCmd),
	)
	registry["ttl"].Meta.Tips = tipsNondet
	registry["pttl"].Meta.Tips = tipsNondet
}

// condFlags are the NX XX GT LT conditions of EXPIRE and ZADD.
type condFlags struct{ nx, xx, gt, lt bool }

// parse records a if it is NX, XX, GT or LT (any case) and reports whether
// it was. The caller checks the combinations: EXPIRE and ZADD refuse
// different ones with different errors.
func (f *condFlags) parse(a []byte) bool {
	switch {
	case eq(a, "nx"):
		f.nx = true
	case eq(a, "xx"):
		f.xx = true
	case eq(a, "gt"):
		f.gt = true
	case eq(a, "lt"):
		f.lt = true
	default:
		return false
	}
	return true
}

// expireFlags are EXPIRE's NX XX GT LT.
type expireFlags struct{ condFlags }

// parseExpireFlags is Redis's parseExtendedExpireArgumentsOrReply.
func parseExpireFlags(args [][]byte) (expireFlags, error) {
	var f expireFlags
	for _, a := range args {
		if !f.parse(a) {
			return f, resp.Errorf("ERR Unsupported option %s", a)
		}
	}
	if f.nx && (f.xx || f.gt || f.lt) {
		return f, resp.NewError("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if f.gt && f.lt {
		return f, resp.NewError("ERR GT and LT options at the same time are not compatible")
	}
	return f, nil
}

// expireWhen converts EXPIRE's argument to unix ms; negative values are
// allowed (they delete the key), overflow is an error.
func expireWhen(now int64, raw []byte, u expireUnit, name string) (int64, error) {
	when, err := resp.ParseInt(raw)
	if err != nil {
		return 0, resp.ErrNotInteger
	}
	if u == unitEX || u == unitEXAT {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return 0, errInvalidExpire(name)
		}
		when *= 1000
	}
	var base int64
	if u == unitEX || u == unitPX {
		base = now
	}
	if when > math.MaxInt64-base {
		return 0, errInvalidExpire(name)
	}
	return when + base, nil
}

// allowed applies NX XX GT LT to the current expiry (0 = none, which GT
// and LT treat as infinite).
func (f expireFlags) allowed(cur, when int64) bool {
	switch {
	case f.nx && cur != 0, f.xx && cur == 0:
		return false
	case f.gt && (cur == 0 || when <= cur):
		return false
	case f.lt && cur != 0 && when >= cur:
		return false
	}
	return true
}

// expireCmd is Redis's expireGenericCommand.
func expireCmd(u expireUnit) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		f, err := parseExpireFlags(args[3:])
		if err != nil {
			return errReply(err)
		}
		when, err := expireWhen(c.Now, args[2], u, strings.ToLower(string(args[0])))
		if err != nil {
			return errReply(err)
		}
		o := c.get(args[1])
		if o == nil || !f.allowed(o.ExpireAt, when) {
			return zero
		}
		if when <= c.Now {
			c.remove(args[1])
			c.notify(NotifyGeneric, "del", args[1])
			return one
		}
		n := copyObject(o)
		n.ExpireAt = when
		c.put(args[1], n)
		c.notify(NotifyGeneric, "expire", args[1])
		return one
	}
}

// ttlCmd is Redis's ttlGenericCommand: -2 no key, -1 no expiry.
func ttlCmd(ms, abs bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		o := c.peek(args[1])
		if o == nil {
			return resp.Int(-2)
		}
		if o.ExpireAt == 0 {
			return resp.Int(-1)
		}
		t := o.ExpireAt
		if !abs {
			t = max(t-c.Now, 0)
		}
		if !ms {
			t = (t + 500) / 1000
		}
		return resp.Int(t)
	}
}

func persistCmd(c *Ctx, args [][]byte) resp.Value {
	o := c.get(args[1])
	if o == nil || o.ExpireAt == 0 {
		return zero
	}
	n := copyObject(o)
	n.ExpireAt = 0
	c.put(args[1], n)
	c.notify(NotifyGeneric, "persist", args[1])
	return one
}
