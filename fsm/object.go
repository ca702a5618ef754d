package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// OBJECT ENCODING|REFCOUNT|IDLETIME|FREQ|HELP.

func objSub(name string, arity int, flags resp.Flag, first int, acl []string, since, summary string,
	run func(*Ctx, [][]byte) resp.Value) *Command {
	return &Command{Meta: &resp.Command{
		Name: "object|" + name, Arity: arity, Flags: flags, FirstKey: first, LastKey: first, Step: min(first, 1),
		ACL: acl, Group: "generic", Since: since, Summary: summary, Complexity: "O(1)",
	}, Run: run}
}

func init() {
	freq := objSub("freq", 3, fR, 2, aclKeyReadSlow, "4.0.0", "Returns the logarithmic access frequency counter of a Redis object.", objFreq)
	idle := objSub("idletime", 3, fR, 2, aclKeyReadSlow, "2.2.3", "Returns the time since the last access to a Redis object.", objIdletime)
	freq.Meta.Tips, idle.Meta.Tips = tipsNondet, tipsNondet
	register(container(&resp.Command{
		Name: "object", Arity: -2, ACL: []string{"slow"}, Group: "generic", Since: "2.2.3",
		Summary: "A container for object introspection commands.", Complexity: "Depends on subcommand.",
	},
		objSub("encoding", 3, fR, 2, aclKeyReadSlow, "2.2.3", "Returns the internal encoding of a Redis object.", objEncoding),
		freq,
		objSub("help", 2, resp.FlagLoading|resp.FlagStale, 0, []string{"keyspace", "slow"}, "6.2.0",
			"Returns helpful text about the different subcommands.", objHelp),
		idle,
		objSub("refcount", 3, fR, 2, aclKeyReadSlow, "2.2.3", "Returns the reference count of a value of a key.", objRefcount),
	))
}

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS: 0..9999 are shared objects
// whose refcount is OBJ_SHARED_REFCOUNT (INT_MAX).
const sharedIntegers = 10000

// encoding decides a string's encoding as Redis's tryObjectEncoding does
// for a value stored by SET: "int" if it reads as a 64-bit integer (at most
// 20 bytes, string2l syntax), "embstr" up to 44 bytes, else "raw".
func encoding(s []byte) string {
	if len(s) <= 20 {
		if _, err := resp.ParseInt(s); err == nil {
			return "int"
		}
	}
	if len(s) <= 44 {
		return "embstr"
	}
	return "raw"
}

func objEncoding(c *Ctx, args [][]byte) resp.Value {
	o := c.peek(args[2])
	if o == nil {
		return resp.Null()
	}
	return resp.BulkString(EncodingOf(o))
}

// EncodingOf is OBJECT ENCODING's answer for o.
func EncodingOf(o *store.Object) string {
	if o.Type != store.TypeString {
		if e, ok := o.Coll.(interface{ Encoding() string }); ok {
			return e.Encoding()
		}
		return typeEncoding(o.Type)
	}
	return encoding(o.Str)
}

// SerializedLength is the length of o's value in Redis's RDB form (what
// DUMP writes, without its type byte, version and checksum), as DEBUG
// OBJECT's serializedlength; 0 for a value DUMP cannot write (a stream).
func SerializedLength(o *store.Object) int {
	v, ok := dumpValue(o)
	if !ok {
		return 0
	}
	return len(rdbDump(v)) - 11
}

// typeEncoding is the encoding reported for a collection that does not
// tell its own (Redis's choice for small values).
func typeEncoding(t store.Type) string {
	if t == store.TypeStream {
		return "stream"
	}
	return "listpack"
}

func objRefcount(c *Ctx, args [][]byte) resp.Value {
	o := c.peek(args[2])
	if o == nil {
		return resp.Null()
	}
	if o.Type == store.TypeString && encoding(o.Str) == "int" {
		if n, _ := resp.ParseInt(o.Str); n >= 0 && n < sharedIntegers {
			return resp.Int(1<<31 - 1)
		}
	}
	return one
}

// objIdletime is the seconds since this node last saw the key read or
// written (node-local, store/access.go); refused under an LFU policy, as
// Redis does.
func objIdletime(c *Ctx, args [][]byte) resp.Value {
	a, ok := c.accessOf(args[2])
	if !ok {
		return resp.Null()
	}
	if c.settings().LFU {
		return errf("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
	return resp.Int(a.IdleMs(c.Now) / 1000)
}

// objFreq is the key's decayed LFU counter; refused unless an LFU policy
// is selected, as Redis does.
func objFreq(c *Ctx, args [][]byte) resp.Value {
	a, ok := c.accessOf(args[2])
	if !ok {
		return resp.Null()
	}
	if !c.settings().LFU {
		return errf("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
	return resp.Int(int64(a.Freq(c.Now, c.settings().Params)))
}

// accessOf is OBJECT's lookup: no access recorded (LOOKUP_NOTOUCH), but
// counted as a hit or miss.
func (c *Ctx) accessOf(key []byte) (store.Access, bool) {
	a, ok := c.Store.AccessOf(key, c.Now)
	c.looked(ok)
	return a, ok
}

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Print this help.",
}

func objHelp(*Ctx, [][]byte) resp.Value {
	out := make([]resp.Value, len(objectHelp))
	for i, l := range objectHelp {
		out[i] = resp.Status(l)
	}
	return resp.Array(out...)
}
