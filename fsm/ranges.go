package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// GETRANGE and SETRANGE.

func init() {
	register(
		strCmd("getrange", 4, fR, 1, 1, 1, aclReadStrSlow, "2.4.0",
			"Returns a substring of the string stored at a key.",
			"O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.", getrangeCmd),
		// SUBSTR is GETRANGE's deprecated older name; Redis keeps both.
		strCmd("substr", 4, fR, 1, 1, 1, aclReadStrSlow, "1.0.0",
			"Returns a substring from a string value.",
			"O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.", getrangeCmd),
		strCmd("setrange", 4, fW|fD, 1, 1, 1, aclWriteStrSlow, "2.2.0",
			"Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist.",
			"O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.", setrangeCmd),
	)
}

func getrangeCmd(c *Ctx, args [][]byte) resp.Value {
	start, err1 := resp.ParseInt(args[2])
	end, err2 := resp.ParseInt(args[3])
	if err1 != nil || err2 != nil {
		return errReply(resp.ErrNotInteger)
	}
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	if o == nil {
		return resp.Bulk(nil)
	}
	return resp.Bulk(substr(o.Str, start, end))
}

// substr applies GETRANGE's index rules: negative indexes count from the
// end, both ends inclusive and clamped.
func substr(s []byte, start, end int64) []byte {
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return nil
	}
	return s[start : end+1]
}

func setrangeCmd(c *Ctx, args [][]byte) resp.Value {
	off, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	if off < 0 {
		return errReply(resp.ErrOffsetRange)
	}
	o, err := c.getString(args[1])
	if err != nil {
		return errReply(err)
	}
	val := args[3]
	if len(val) == 0 {
		if o == nil {
			return zero
		}
		return resp.Int(int64(len(o.Str)))
	}
	if err := checkLength(off, int64(len(val))); err != nil {
		return errReply(err)
	}
	old, exp := strAndExpiry(o)
	v := make([]byte, max(int64(len(old)), off+int64(len(val))))
	copy(v, old)
	copy(v[off:], val)
	c.put(args[1], &store.Object{Type: store.TypeString, Str: v, ExpireAt: exp})
	c.notify(NotifyString, "setrange", args[1])
	return resp.Int(int64(len(v)))
}
