package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// DUMP and RESTORE; the payload format is in rdb.go.

func init() {
	dump := genCmd("dump", 2, fR, 1, 1, 1, aclKeyReadSlow, "2.6.0",
		"Returns a serialized representation of the value stored at a key.",
		"O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
		dumpCmd)
	dump.Meta.Tips = tipsNondet
	restore := genCmd("restore", -4, fW|fD, 1, 1, 1, []string{"keyspace", "write", "slow", "dangerous"}, "2.6.0",
		"Creates a key from the serialized representation of a value.",
		"O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
		restoreCmd)
	register(dump, restore, restoreAsking(restore))
}

// restoreAsking is RESTORE-ASKING, what MIGRATE sends to a cluster node:
// RESTORE flagged asking, so that it is served for a slot being imported
// as if the client had sent ASKING first.
func restoreAsking(restore *Command) *Command {
	m := *restore.Meta
	m.Name, m.Group, m.Since = "restore-asking", "server", "3.0.0"
	m.Summary = "An internal command for migrating keys in a cluster."
	m.Flags |= resp.FlagAsking
	return &Command{Meta: &m, Run: restore.Run}
}

func dumpCmd(c *Ctx, args [][]byte) resp.Value {
	o := c.get(args[1])
	if o == nil {
		return resp.Null()
	}
	v, ok := dumpValue(o)
	if !ok {
		return errf("ERR DUMP of a %s value is not supported", o.Type)
	}
	return resp.Bulk(rdbDump(v))
}

// dumpValue converts a stored value to its neutral form.
func dumpValue(o *store.Object) (*rdbValue, bool) {
	v := &rdbValue{typ: o.Type}
	switch o.Type {
	case store.TypeString:
		v.str = o.Str
	case store.TypeList:
		listWalk(o.Coll, 0, false, func(e []byte) bool {
			v.elems = append(v.elems, e)
			return true
		})
	case store.TypeSet:
		o.Coll.(*store.Set).Ascend(func(m []byte) bool {
			v.elems = append(v.elems, m)
			return true
		})
	case store.TypeHash:
		o.Coll.(*store.Hash).Ascend(func(f, val []byte) bool {
			v.elems = append(v.elems, f, val)
			return true
		})
	case store.TypeZSet:
		o.Coll.(*store.ZSet).Ascend(0, func(m string, s float64) bool {
			v.elems = append(v.elems, []byte(m))
			v.scores = append(v.scores, s)
			return true
		})
	case store.TypeStream:
		v.stream = o.Coll.(*store.Stream)
	default:
		return nil, false
	}
	return v, true
}

// restoreValue builds a new stored value from its neutral form; the
// collections copy what they keep.
func restoreValue(lim *store.Limits, v *rdbValue) *store.Object {
	o := &store.Object{Type: v.typ}
	switch v.typ {
	case store.TypeString:
		o.Str = clone(v.str)
	case store.TypeList:
		o.Coll = newListOf(lim, v.elems)
	case store.TypeSet:
		s := store.NewSet(lim, v.elems[0], len(v.elems))
		for _, m := range v.elems {
			s.Add(m)
		}
		o.Coll = s
	case store.TypeHash:
		h := store.NewHash(lim)
		maxLen := 0
		for _, e := range v.elems {
			maxLen = max(maxLen, len(e))
		}
		h.Prepare(len(v.elems)/2, maxLen)
		for i := 0; i < len(v.elems); i += 2 {
			h.Set(v.elems[i], v.elems[i+1])
		}
		o.Coll = h
	case store.TypeZSet:
		maxLen := 0
		for _, e := range v.elems {
			maxLen = max(maxLen, len(e))
		}
		z := store.NewZSetHint(lim, len(v.elems), maxLen)
		for i, m := range v.elems {
			z.Add(m, v.scores[i])
		}
		o.Coll = z
	case store.TypeStream:
		o.Coll = v.stream // built for this RESTORE alone
	}
	return o
}

type restoreOpts struct {
	replace, absTTL bool
	idle            int64 // -1: not given
	freq            int64 // -1: not given
}

func parseRestoreOpts(args [][]byte) (restoreOpts, error) {
	o := restoreOpts{idle: -1, freq: -1}
	for j := 0; j < len(args); j++ {
		more := len(args) - j - 1
		switch {
		case eq(args[j], "replace"):
			o.replace = true
		case eq(args[j], "absttl"):
			o.absTTL = true
		case eq(args[j], "idletime") && more >= 1 && o.freq == -1:
			n, err := resp.ParseInt(args[j+1])
			if err != nil {
				return o, resp.ErrNotInteger
			}
			if n < 0 {
				return o, resp.NewError("ERR Invalid IDLETIME value, must be >= 0")
			}
			o.idle = n
			j++
		case eq(args[j], "freq") && more >= 1 && o.idle == -1:
			n, err := resp.ParseInt(args[j+1])
			if err != nil {
				return o, resp.ErrNotInteger
			}
			if n < 0 || n > 255 {
				return o, resp.NewError("ERR Invalid FREQ value, must be >= 0 and <= 255")
			}
			o.freq = n
			j++
		default:
			return o, resp.ErrSyntax
		}
	}
	return o, nil
}

// restoreCmd is Redis's restoreCommand. FREQ is accepted and ignored (no
// LFU); IDLETIME sets the time OBJECT IDLETIME counts from.
func restoreCmd(c *Ctx, args [][]byte) resp.Value {
	opts, err := parseRestoreOpts(args[4:])
	if err != nil {
		return errReply(err)
	}
	key := args[1]
	if !opts.replace && c.get(key) != nil {
		return errf("BUSYKEY Target key name already exists.")
	}
	ttl, err := resp.ParseInt(args[2])
	if err != nil {
		return errReply(resp.ErrNotInteger)
	}
	if ttl < 0 {
		return errf("ERR Invalid TTL value, must be >= 0")
	}
	v, err := rdbParsePayload(args[3])
	if err == nil {
		err = v.check()
	}
	if err != nil {
		return errReply(err)
	}
	deleted := opts.replace && c.del(key)
	if ttl != 0 && !opts.absTTL {
		ttl += c.Now
	}
	if store.DeadlinePassed(ttl, c.Now) {
		if deleted {
			c.notify(NotifyGeneric, "del", key)
		}
		return resp.OK() // already expired: nothing is created
	}
	o := restoreValue(c.Store.Limits(), v)
	o.ExpireAt = ttl
	c.put(key, o)
	c.notify(NotifyGeneric, "restore", key)
	c.restoreAccess(key, opts)
	c.signalIfBlockable(key, o)
	return resp.OK()
}

// --- lists ---------------------------------------------------------------

// listWalk calls fn for a list's elements from position from towards the
// tail (or the head if reverse) until fn returns false.
func listWalk(coll store.Collection, from int, reverse bool, fn func([]byte) bool) {
	coll.(*store.List).Walk(from, reverse, fn)
}

// newListOf returns a list holding elems (already owned by the caller).
func newListOf(lim *store.Limits, elems [][]byte) store.Collection {
	return store.NewListOf(lim, elems)
}
