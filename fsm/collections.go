package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Typed access to collection keys (lists, hashes, sets, sorted sets,
// streams), shared by every collection command so that WRONGTYPE, empty
// collections and copy-on-write are handled in one place.

// getColl returns the live object at key if it holds type t, nil if the key
// is absent, or WRONGTYPE. The object must not be changed: use mutColl.
func (c *Ctx) getColl(key []byte, t store.Type) (*store.Object, error) {
	o := c.get(key)
	if o != nil && o.Type != t {
		return nil, resp.ErrWrongType
	}
	return o, nil
}

// mutColl returns the object at key for changing its collection in place
// (store.Mutable: cloned first if a snapshot shares it), nil if absent, or
// WRONGTYPE. After changing it call c.changed(key, o).
func (c *Ctx) mutColl(key []byte, t store.Type) (*store.Object, error) {
	o := c.get(key)
	if o == nil {
		return nil, nil
	}
	if o.Type != t {
		return nil, resp.ErrWrongType
	}
	return c.Store.Mutable(key, c.Now), nil
}

// readColl is getColl with the collection as its concrete type: the zero
// T (nil) if the key is absent, or WRONGTYPE.
func readColl[T store.Collection](c *Ctx, key []byte, t store.Type) (T, error) {
	var zero T
	o, err := c.getColl(key, t)
	if o == nil || err != nil {
		return zero, err
	}
	return o.Coll.(T), nil
}

// writeColl is mutColl with the collection as its concrete type (nil
// object and zero T if absent), or WRONGTYPE.
func writeColl[T store.Collection](c *Ctx, key []byte, t store.Type) (*store.Object, T, error) {
	var zero T
	o, err := c.mutColl(key, t)
	if o == nil || err != nil {
		return nil, zero, err
	}
	return o, o.Coll.(T), nil
}

// numkeysKeysAt returns the key positions of a command whose numkeys
// argument is at index at, followed by the keys (LMPOP, SINTERCARD, ZMPOP,
// ZUNION…), plus fixed keys before it (ZUNIONSTORE's destination); nil
// when numkeys is not a valid count of the arguments that follow (the
// command then fails with its own error).
func numkeysKeysAt(at int, fixed ...int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if at >= len(args) {
			return nil
		}
		n, err := resp.ParseInt(args[at])
		if err != nil || n < 1 || n > int64(len(args)-at-1) {
			return nil
		}
		out := append([]int(nil), fixed...)
		for i := range int(n) {
			out = append(out, at+1+i)
		}
		return out
	}
}

// newColl stores a new collection at key and returns its object, ready
// for in-place changes in this entry (it belongs to no snapshot yet).
func (c *Ctx) newColl(key []byte, t store.Type, coll store.Collection) *store.Object {
	o := &store.Object{Type: t, Coll: coll}
	c.put(key, o)
	return o
}

// changed records an in-place change of key's collection: the version and
// time move on, and a collection left empty deletes its key, as in Redis.
func (c *Ctx) changed(key []byte, o *store.Object) {
	c.modified(key)
	if o.Coll.Len() == 0 {
		c.Store.Delete(key)
		return
	}
	o.Version = c.Index
	o.Touched = c.Now
	c.Store.Account(key, o) // the dataset's size (store/dataset.go)
}

// signalReady records that key (a list, sorted set or stream) gained
// elements in this entry, so that clients blocked on it can be served
// (Redis's signalKeyAsReady).
func (c *Ctx) signalReady(key []byte) {
	c.Ready = append(c.Ready, clone(key))
}
