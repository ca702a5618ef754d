package fsm

import (
	"strconv"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Whole-store commands: KEYS SCAN RANDOMKEY DBSIZE FLUSHALL FLUSHDB. Each
// acts on one group's store; the cluster layer runs them on every group it
// serves and combines the answers.

func init() {
	register(
		genCmd("keys", 2, fR, 0, 0, 0, []string{"keyspace", "read", "slow", "dangerous"}, "1.0.0",
			"Returns all key names that match a pattern.",
			"O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.", keysCmd),
		genCmd("scan", -2, fR, 0, 0, 0, aclKeyReadSlow, "2.8.0",
			"Iterates over the key names in the database.",
			"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.", scanCmd),
		genCmd("randomkey", 1, fR, 0, 0, 0, aclKeyReadSlow, "1.0.0",
			"Returns a random key name from the database.", "O(1)", randomkeyCmd),
		srvCmd("dbsize", 1, fR|fF, aclKeyReadFast, "Returns the number of keys in the database.", "O(1)", dbsizeCmd),
		srvCmd("flushall", -1, fW, aclFlush, "Removes all keys from all databases.",
			"O(N) where N is the total number of keys in all databases", flushCmd),
		srvCmd("flushdb", -1, fW, aclFlush, "Remove all keys from the current database.",
			"O(N) where N is the number of keys in the selected database", flushCmd),
	)
	registry["keys"].Meta.Tips = []string{"request_policy:all_shards", "nondeterministic_output_order"}
	registry["scan"].Meta.Tips = []string{"nondeterministic_output", "request_policy:special", "response_policy:special"}
	registry["randomkey"].Meta.Tips = []string{"request_policy:all_shards", "response_policy:special", "nondeterministic_output"}
	registry["dbsize"].Meta.Tips = tipsAllSum
	registry["flushall"].Meta.Tips = tipsAllOK
	registry["flushdb"].Meta.Tips = tipsAllOK
}

var aclFlush = []string{"keyspace", "write", "slow", "dangerous"}

func srvCmd(name string, arity int, flags resp.Flag, acl []string, summary, complexity string,
	run func(*Ctx, [][]byte) resp.Value) *Command {
	return &Command{Meta: &resp.Command{
		Name: name, Arity: arity, Flags: flags, ACL: acl, Group: "server", Since: "1.0.0",
		Summary: summary, Complexity: complexity,
	}, Run: run}
}

func keysCmd(c *Ctx, args [][]byte) resp.Value {
	pat := args[1]
	all := len(pat) == 1 && pat[0] == '*'
	out := []resp.Value{}
	c.Store.Ascend(func(key []byte, o *store.Object) bool {
		if !o.ExpiredAt(c.Now) && (all || Match(pat, key)) {
			out = append(out, resp.Bulk(clone(key)))
		}
		return true
	})
	return resp.Array(out...)
}

type scanOpts struct {
	count   int64
	pattern []byte // nil = every key
	typ     []byte // nil = every type
}

// parseScanOpts is the option loop of Redis's scanGenericCommand.
func parseScanOpts(args [][]byte) (scanOpts, error) {
	o := scanOpts{count: 10}
	for j := 0; j < len(args); j += 2 {
		if j+1 >= len(args) {
			return o, resp.ErrSyntax
		}
		v := args[j+1]
		switch {
		case eq(args[j], "count"):
			n, err := resp.ParseInt(v)
			if err != nil {
				return o, resp.ErrNotInteger
			}
			if n < 1 {
				return o, resp.ErrSyntax
			}
			o.count = n
		case eq(args[j], "match"):
			o.pattern = v
			if len(v) == 1 && v[0] == '*' {
				o.pattern = nil
			}
		case eq(args[j], "type"):
			o.typ = v
		default:
			return o, resp.ErrSyntax
		}
	}
	return o, nil
}

func scanCmd(c *Ctx, args [][]byte) resp.Value {
	cursor, err := resp.ParseUint(args[1])
	if err != nil {
		return errf("ERR invalid cursor")
	}
	opts, err := parseScanOpts(args[2:])
	if err != nil {
		return errReply(err)
	}
	keys := []resp.Value{}
	next := c.Store.Scan(cursor, int(min(opts.count, 1<<30)), func(key []byte, o *store.Object) {
		if opts.keep(key, o, c.Now) {
			keys = append(keys, resp.Bulk(clone(key)))
		}
	})
	return resp.Array(resp.Bulk(strconv.AppendUint(nil, next, 10)), resp.Array(keys...))
}

// keep filters a visited key: live, matching the pattern and the type (an
// unknown type name matches nothing, as in Redis 7.2).
func (o scanOpts) keep(key []byte, obj *store.Object, now int64) bool {
	if obj.ExpiredAt(now) {
		return false
	}
	if o.typ != nil && !eq(o.typ, obj.Type.String()) {
		return false
	}
	return o.pattern == nil || Match(o.pattern, key)
}

func randomkeyCmd(c *Ctx, _ [][]byte) resp.Value {
	k := c.Store.RandomKey(c.rand().Uint64(), c.Now)
	if k == nil {
		return resp.Null()
	}
	return resp.Bulk(clone(k))
}

func dbsizeCmd(c *Ctx, _ [][]byte) resp.Value { return resp.Int(int64(c.Store.Len())) }

// flushCmd accepts FLUSHALL/FLUSHDB [ASYNC|SYNC]; both flush at once.
func flushCmd(c *Ctx, args [][]byte) resp.Value {
	if len(args) > 2 || (len(args) == 2 && !eq(args[1], "sync") && !eq(args[1], "async")) {
		return errReply(resp.ErrSyntax)
	}
	if c.counting() {
		switch {
		case len(args) == 1:
			c.Freed.FlushDefault += c.Store.Len()
		case eq(args[1], "async"):
			c.Freed.FlushAsync += c.Store.Len()
		}
	}
	c.Store.Flush()
	c.flushed()
	return resp.OK()
}
