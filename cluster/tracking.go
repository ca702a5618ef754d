package cluster

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/slotraft/slotraft/fsm"
)

// Client-side caching (CLIENT TRACKING). The state machine reports the
// keys each entry touched — changed, or read by a read-only command that
// ran in the log (fsm/tracking.go) — and this file hands them to the front
// end, which keeps the tracking table and sends the invalidations.
//
// Unlike keyspace events, every replica reports, leader or follower: a
// node serves reads of the groups it leads and, to READONLY clients, of
// every group it hosts, and each hosted replica applies every write of
// its group, whoever proposed it, so what its own clients may have cached
// is invalidated by its own applies. Nothing crosses the network.
//
// Collecting costs nothing while no client of the node tracks keys: the
// group's FSM asks trackingOn, one atomic load, before each entry.
//
// An entry's commands come from many callers (the proposer batches). A
// caller may tag its proposal with an origin (WithOrigin): the front end
// uses its client's ID, to skip a NOLOOP client's own changes and to
// remember the keys its commands read in the log. The proposer keeps the
// origins of each entry it hands to Raft, by the entry's random seed,
// until the entry's outcome is known; Apply on this node finds them there.
// Followers, and a leader that lost an entry's outcome, have none.

// TrackEvent is what one entry touched, as the front end receives it.
type TrackEvent struct {
	Group   uint32
	Touched []fsm.TouchedKey
	// Origins, when the entry was proposed here with tagged proposals, is
	// the origin of each of its commands (0: untagged), by position.
	Origins []uint64
}

// OriginOf is the origin of t (0 when none).
func (e *TrackEvent) OriginOf(t fsm.TouchedKey) uint64 {
	if t.Pos < 0 || int(t.Pos) >= len(e.Origins) {
		return 0
	}
	return e.Origins[t.Pos]
}

// keyTracking is a node's switch and handler.
type keyTracking struct {
	on     atomic.Bool
	handle atomic.Pointer[func(TrackEvent)]
}

// SetTracking turns the collection of touched keys on (some client of the
// node tracks keys) or off.
func (n *Node) SetTracking(on bool) { n.tracking.on.Store(on) }

// HandleTrackedKeys sets fn to receive what the entries applied by every
// hosted replica touched, while tracking is on. fn runs inside Apply: it
// must only queue, never wait.
func (n *Node) HandleTrackedKeys(fn func(TrackEvent)) { n.tracking.handle.Store(&fn) }

// trackingOn is the group FSM's question before each entry.
func (g *Group) trackingOn() bool { return g.node.tracking.on.Load() }

// trackKeys hands an entry's touched keys to the front end, from inside
// Apply, with the origins of its commands if it was proposed here.
func (g *Group) trackKeys(seed uint64, touched []fsm.TouchedKey) {
	fn := g.node.tracking.handle.Load()
	if fn == nil {
		return
	}
	(*fn)(TrackEvent{Group: g.id, Touched: touched, Origins: g.origins.get(seed)})
}

// untracked tells the front end, when the node stops hosting g, that the
// group's keys may now change unseen here: as after a flush, its tracking
// clients are told to drop everything they cached.
func (g *Group) untracked() {
	if g.trackingOn() {
		g.trackKeys(0, []fsm.TouchedKey{{Kind: fsm.KeysFlushed, Pos: -1}})
	}
}

type originKey struct{}

// WithOrigin tags the proposals made with ctx with origin (not 0).
func WithOrigin(ctx context.Context, origin uint64) context.Context {
	return context.WithValue(ctx, originKey{}, origin)
}

func originFrom(ctx context.Context) uint64 {
	o, _ := ctx.Value(originKey{}).(uint64)
	return o
}

// entryOrigins are the origins of the entries in flight that have some,
// by seed.
type entryOrigins struct {
	mu sync.Mutex
	m  map[uint64][]uint64
}

// put records the origins of the commands of batch, if any is tagged, for
// the entry with seed; it reports whether it recorded them.
func (o *entryOrigins) put(seed uint64, batch []*proposal) bool {
	tagged := false
	for _, p := range batch {
		tagged = tagged || p.origin != 0
	}
	if !tagged {
		return false
	}
	var per []uint64
	for _, p := range batch {
		for range p.cmds {
			per = append(per, p.origin)
		}
	}
	o.mu.Lock()
	if o.m == nil {
		o.m = map[uint64][]uint64{}
	}
	o.m[seed] = per
	o.mu.Unlock()
	return true
}

func (o *entryOrigins) get(seed uint64) []uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[seed]
}

func (o *entryOrigins) drop(seed uint64) {
	o.mu.Lock()
	delete(o.m, seed)
	o.mu.Unlock()
}
