package fsm

import (
	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/store"
)

// Access metadata (store/access.go) is node-local: lookups record it on
// this node only, reads included, and nothing replicated depends on it.
// The node says, through the hook, which LFU parameters to record with and
// whether an LFU maxmemory policy is selected (OBJECT FREQ and IDLETIME
// answer only under the matching kind of policy, as in Redis).

// AccessSettings is the node's setting of the access metadata.
type AccessSettings struct {
	Params store.AccessParams // lfu-log-factor, lfu-decay-time
	LFU    bool               // an LFU maxmemory-policy is selected
}

// defaultAccess is the setting of a State whose node set none.
var defaultAccess = AccessSettings{Params: store.DefaultAccess}

// settings is the Ctx's access setting (the default for a Ctx made
// without one, as tests do).
func (c *Ctx) settings() *AccessSettings {
	if c.access == nil {
		return &defaultAccess
	}
	return c.access
}

// SetAccessHook makes the group's lookups ask fn for the access setting
// (once per entry or read). Call it before Raft starts.
func (f *FSM) SetAccessHook(fn func() *AccessSettings) { f.state.accessHook = fn }

// accessSettings is the node's current setting.
func (s *State) accessSettings() *AccessSettings {
	if s.accessHook != nil {
		if a := s.accessHook(); a != nil {
			return a
		}
	}
	return &defaultAccess
}

// withAccess makes c record accesses with the node's setting unless
// noTouch.
func (c *Ctx) withAccess(a *AccessSettings, noTouch bool) *Ctx {
	c.access = a
	if !noTouch {
		c.touch = &a.Params
	}
	return c
}

// restoreAccess applies RESTORE's IDLETIME or FREQ to the key's access
// metadata, each only under the kind of policy that tracks it, as Redis's
// objectSetLRUOrLFU does. Node-local, as all access metadata.
func (c *Ctx) restoreAccess(key []byte, opts restoreOpts) {
	a, ok := c.Store.AccessOf(key, c.Now)
	if !ok {
		return
	}
	switch lfu := c.settings().LFU; {
	case lfu && opts.freq >= 0:
		a.Counter, a.Last = uint8(opts.freq), c.Now
	case !lfu && opts.idle >= 0:
		a.Last = c.Now - min(opts.idle, c.Now/1000)*1000
	default:
		return
	}
	c.Store.SetAccess(key, a)
}

// ReadOpts are a read's options.
type ReadOpts struct {
	// NoTouch: the read does not record accesses (CLIENT NO-TOUCH; TOUCH
	// still does).
	NoTouch bool
	// Tracked, if set, receives the keys the read's read-only commands
	// read (tracking.go), possibly none, while the read lock is still
	// held: no entry applies between the read and the call, so whatever
	// the caller remembers is invalidated by every later change.
	Tracked func(keys [][]byte)
	// Monitor: keep the commands a script calls (Outcome.Calls), for
	// MONITOR.
	Monitor bool
	// User is whom the read's scripts call commands as (script_acl.go);
	// nil for a user allowed everything.
	User *acl.User
}
