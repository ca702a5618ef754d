package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Keyspace: DEL UNLINK EXISTS TYPE TOUCH RENAME RENAMENX COPY. They act on
// one group's store; the cluster layer combines groups where a command spans
// several. Expiry commands are in expire.go, iteration in scan.go.

var (
	aclKeyReadFast  = []string{"keyspace", "read", "fast"}
	aclKeyReadSlow  = []string{"keyspace", "read", "slow"}
	aclKeyWriteFast = []string{"keyspace", "write", "fast"}
	aclKeyWriteSlow = []string{"keyspace", "write", "slow"}
)

func init() {
	register(
		genCmd("del", -2, fW, 1, -1, 1, aclKeyWriteSlow, "1.0.0", "Deletes one or more keys.",
			"O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).", delCmd),
		genCmd("unlink", -2, fW|fF, 1, -1, 1, aclKeyWriteFast, "4.0.0", "Asynchronously deletes one or more keys.",
			"O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.", delCmd),
		genCmd("exists", -2, fR|fF, 1, -1, 1, aclKeyReadFast, "1.0.0", "Determines whether one or more keys exist.",
			"O(N) where N is the number of keys to check.", existsCmd),
		genCmd("type", 2, fR|fF, 1, 1, 1, aclKeyReadFast, "1.0.0", "Determines the type of value stored at a key.",
			"O(1)", typeCmd),
		genCmd("touch", -2, fR|fF, 1, -1, 1, aclKeyReadFast, "3.2.1",
			"Returns the number of existing keys out of those specified after updating the time they were last accessed.",
			"O(N) where N is the number of keys that will be touched.", touchCmd),
		genCmd("rename", 3, fW, 1, 2, 1, aclKeyWriteSlow, "1.0.0", "Renames a key and overwrites the destination.",
			"O(1)", renameCmd(false)),
		genCmd("renamenx", 3, fW|fF, 1, 2, 1, aclKeyWriteFast, "1.0.0", "Renames a key only when the target key name doesn't exist.",
			"O(1)", renameCmd(true)),
		genCmd("move", 3, fW|fF, 1, 1, 1, aclKeyWriteFast, "1.0.0", "Moves a key to another database.", "O(1)", moveCmd),
		genCmd("copy", -3, fW|fD, 1, 2, 1, aclKeyWriteSlow, "6.2.0", "Copies the value of a key to a new key.",
			"O(N) worst case for collections, where N is the number of nested items. O(1) for string values.", copyCmd),
	)
	for _, n := range []string{"del", "unlink", "exists", "touch"} {
		registry[n].Meta.Tips = tipsMultiSum
	}
}

// moveCmd is MOVE in a cluster: routed by its key like Redis Cluster's, then
// refused, as redis-server with cluster-enabled yes does (only database 0).
func moveCmd(*Ctx, [][]byte) resp.Value { return errf("ERR MOVE is not allowed in cluster mode") }

// delCmd is DEL and UNLINK; they differ in what Redis frees in the
// background (lazyfree.go).
func delCmd(c *Ctx, args [][]byte) resp.Value {
	var n int64
	kind := &c.Freed.Del
	if eq(args[0], "unlink") {
		kind = &c.Freed.Unlink
	}
	for _, k := range args[1:] {
		if c.counting() {
			if o := c.peek(k); o != nil {
				c.freeing(kind, o)
			}
		}
		if c.del(k) {
			c.notify(NotifyGeneric, "del", k)
			n++
		}
	}
	return resp.Int(n)
}

// existsCmd counts live keys, a key repeated being counted each time,
// without recording accesses.
func existsCmd(c *Ctx, args [][]byte) resp.Value {
	var n int64
	for _, k := range args[1:] {
		if c.peek(k) != nil {
			n++
		}
	}
	return resp.Int(n)
}

// touchCmd is EXISTS that records the accesses, even for a CLIENT
// NO-TOUCH client (Redis exempts TOUCH).
func touchCmd(c *Ctx, args [][]byte) resp.Value {
	var n int64
	p := c.settings().Params
	for _, k := range args[1:] {
		found := c.Store.Touch(k, c.Now, p)
		c.looked(found)
		if found {
			n++
		}
	}
	return resp.Int(n)
}

func typeCmd(c *Ctx, args [][]byte) resp.Value {
	o := c.peek(args[1])
	if o == nil {
		return resp.Status(store.TypeNone.String())
	}
	return resp.Status(o.Type.String())
}

// renameCmd is Redis's renameGenericCommand.
func renameCmd(nx bool) func(*Ctx, [][]byte) resp.Value {
	ok := resp.OK()
	if nx {
		ok = one
	}
	return func(c *Ctx, args [][]byte) resp.Value {
		src, dst := args[1], args[2]
		o := c.get(src)
		if o == nil {
			return errReply(resp.ErrNoSuchKey)
		}
		if string(src) == string(dst) {
			if nx {
				return zero
			}
			return ok
		}
		if nx && c.get(dst) != nil {
			return zero
		}
		c.del(dst)
		c.put(dst, copyObject(o))
		c.remove(src)
		c.signalIfBlockable(dst, o)
		c.notify(NotifyGeneric, "rename_from", src)
		c.notify(NotifyGeneric, "rename_to", dst)
		return ok
	}
}

// copyObject returns a new object with o's value and expiry, sharing the
// value: a string is immutable, a collection must be Cloned unless o goes
// away (RENAME).
func copyObject(o *store.Object) *store.Object {
	n := *o
	return &n
}

// maxDB is Redis's default "databases" setting; COPY's DB must be below it.
const maxDB = 16

type copyOpts struct {
	replace bool
	db      int64
}

func parseCopyOpts(args [][]byte) (copyOpts, error) {
	var o copyOpts
	for j := 0; j < len(args); j++ {
		switch {
		case eq(args[j], "replace"):
			o.replace = true
		case eq(args[j], "db") && j+1 < len(args):
			db, err := resp.ParseInt(args[j+1])
			if err != nil || db < -1<<31 || db > 1<<31-1 {
				return o, resp.ErrNotInteger
			}
			if db < 0 || db >= maxDB {
				return o, resp.ErrInvalidDBIndex
			}
			o.db = db
			j++
		default:
			return o, resp.ErrSyntax
		}
	}
	if o.db != 0 {
		return o, resp.NewError("ERR Copying to another database is not allowed in cluster mode")
	}
	return o, nil
}

func copyCmd(c *Ctx, args [][]byte) resp.Value {
	opts, err := parseCopyOpts(args[3:])
	if err != nil {
		return errReply(err)
	}
	src, dst := args[1], args[2]
	if string(src) == string(dst) {
		return errf("ERR source and destination objects are the same")
	}
	o := c.get(src)
	if o == nil {
		return zero
	}
	if c.get(dst) != nil && !opts.replace {
		return zero
	}
	c.del(dst)
	n := copyObject(o)
	if n.Coll != nil {
		n.Coll = n.Coll.Clone() // the copy changes independently of the source
	}
	c.put(dst, n)
	c.signalIfBlockable(dst, o)
	c.notify(NotifyGeneric, "copy_to", dst)
	return one
}

// signalIfBlockable signals key as ready when it now holds o's list,
// sorted set or stream (clients may block on those), as Redis's dbAdd does.
func (c *Ctx) signalIfBlockable(key []byte, o *store.Object) {
	if o.Type == store.TypeList || o.Type == store.TypeZSet || o.Type == store.TypeStream {
		c.signalReady(key)
	}
}
