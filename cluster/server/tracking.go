package server

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// Client-side caching: the tracking table and the invalidations (Redis's
// tracking.c). The commands are in tracking_cmd.go.
//
// A node remembers the keys its tracking clients read, and tells them when
// such a key changes. What changes is learnt from the state machine: every
// replica hosted here reports, from inside Apply, the keys each entry
// changed (cluster.Node.HandleTrackedKeys); enqueue only queues the report
// and a goroutine of the tracker (run) works through the queue. So a key
// changed by a write proposed on any node, by active expiry, eviction, a
// slot migration or a flush, invalidates the clients of every node that
// hosts a replica of its group once that replica applies it — and only
// those nodes can have served the key: to a READONLY client from a
// follower, or as the group's leader.
//
// Remembering and invalidating are ordered with the applies. A read made
// outside the log remembers its keys while it still holds the group's read
// lock (fsm.ReadOpts.Tracked): an entry applied after it is queued after,
// so it finds the keys in the table. The keys read inside the log (a
// transaction's, a script's, a blocking read's) come in the reports
// themselves, at their place, with the origin of the proposal that ran
// them (cluster.WithOrigin).
//
// An invalidation for a client that is running commands waits until their
// replies are written (client.pending), as Redis sends the invalidations
// due to the current client after its reply.
//
// A flush (FLUSHALL, FLUSHDB, a restore from a snapshot) is a group's: a
// FLUSHALL on this node flushes every group it leads, one entry each. A
// client gets Redis's null invalidation ("everything") at the first of
// them, and at a later one only if it read something since (or since it
// turned tracking on): a client that read nothing since its last null
// holds nothing it could have cached.

// Tracking constants.
const (
	invalidateChannel = "__redis__:invalidate" // RESP2 redirection's channel
	limitEffort       = 100                    // keys one limit round may evict, times its rounds
	limitEvery        = 100 * time.Millisecond // the table's limit is also checked this often
)

// tracker is a server's tracking table and broadcast state.
type tracker struct {
	s *Server

	mu    sync.Mutex
	table map[string]map[uint64]struct{} // key -> IDs of the clients that may cache it
	items int                            // IDs in the table, all keys summed
	// prefixes are the BCAST prefixes with a client ("" for every key).
	prefixes map[string]*bcastState
	clients  map[uint64]*tracked // the clients with tracking on
	rounds   int                 // limit rounds in a row that stayed over the limit

	maxKeys atomic.Int64 // tracking-table-max-keys (0: no limit)

	qmu   sync.Mutex
	queue []trackItem
	// pushed and processed count the queue's items; progress is closed
	// (and replaced) when run has processed more (drain).
	pushed, processed uint64
	progress          chan struct{}
	wake              chan struct{} // buffered 1: the queue has something
	done              chan struct{} // closed when run returns
}

// bcastState is one BCAST prefix: the keys that matched it since the last
// broadcast, each with the ID of the client that changed it last (0 for
// none), and its clients.
type bcastState struct {
	keys    map[string]uint64
	clients map[*client]struct{}
}

// trackItem is one item of the tracker's queue: an entry's report, or the
// keys a read outside the log made a client remember (read, by client ID).
type trackItem struct {
	ev   cluster.TrackEvent
	read uint64
	keys [][]byte
}

// tracked is the tracker's part of a tracking client.
type tracked struct {
	c *client
	// dirty: the client may hold cached values it got since the last null
	// it was sent (a flush sends another null only then).
	dirty bool
}

func newTracker(s *Server) *tracker {
	t := &tracker{s: s, table: map[string]map[uint64]struct{}{}, prefixes: map[string]*bcastState{},
		clients: map[uint64]*tracked{}, wake: make(chan struct{}, 1), done: make(chan struct{}),
		progress: make(chan struct{})}
	t.maxKeys.Store(1000000)
	return t
}

// enqueue takes an entry's report from inside Apply: it only queues it.
func (t *tracker) enqueue(ev cluster.TrackEvent) { t.push(trackItem{ev: ev}) }

func (t *tracker) push(it trackItem) {
	t.qmu.Lock()
	t.queue = append(t.queue, it)
	t.pushed++
	t.qmu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// run works through the queue until ctx ends. Each pass is one of Redis's
// event loop iterations: the reports queued so far, then the broadcasts of
// the BCAST keys they changed.
func (t *tracker) run(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(limitEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			t.mu.Lock()
			if len(t.clients) > 0 {
				t.limit()
			}
			t.mu.Unlock()
			continue
		case <-t.wake:
		}
		t.qmu.Lock()
		q := t.queue
		t.queue = nil
		t.qmu.Unlock()
		t.mu.Lock()
		for i := range q {
			if it := &q[i]; it.read != 0 {
				t.rememberLocked(it.read, it.keys)
			} else {
				t.process(&it.ev)
			}
		}
		t.broadcast()
		t.mu.Unlock()
		t.qmu.Lock()
		t.processed += uint64(len(q))
		close(t.progress)
		t.progress = make(chan struct{})
		t.qmu.Unlock()
	}
}

// drainWait bounds how long drain waits for the tracker.
const drainWait = time.Second

// drain waits until what was queued before it is in the table (or
// drainWait passed, or the tracker stopped): INFO then counts the keys of
// reads that were answered before it.
func (t *tracker) drain() {
	t.qmu.Lock()
	target := t.pushed
	t.qmu.Unlock()
	timeout := time.NewTimer(drainWait)
	defer timeout.Stop()
	for {
		t.qmu.Lock()
		done, progress := t.processed >= target, t.progress
		t.qmu.Unlock()
		if done {
			return
		}
		select {
		case <-progress:
		case <-timeout.C:
			return
		case <-t.done:
			return
		}
	}
}

// process applies one entry's report. t.mu is held.
func (t *tracker) process(ev *cluster.TrackEvent) {
	for _, k := range ev.Touched {
		origin := ev.OriginOf(k)
		switch k.Kind {
		case fsm.KeyRead:
			if origin&originReads != 0 {
				t.rememberLocked(origin>>1, [][]byte{k.Key})
			}
		case fsm.KeyModified:
			t.invalidate(k.Key, origin>>1, true)
		case fsm.KeysFlushed:
			t.flush()
		}
	}
}

// Origins: a tracking client's proposals carry its ID shifted left by
// one, with originReads set when the keys its commands read are to be
// remembered (not BCAST, OPTIN/OPTOUT allowing).
const originReads = 1

// remember records that client c may cache keys (a read it made); it is
// called under the read lock of the group the keys were read from, so it
// is queued after the reports of the entries applied before the read and
// before those applied after it: the table takes it in that order (a
// change applied before the read never invalidates what it read).
func (t *tracker) remember(c *client, keys [][]byte) {
	own := make([][]byte, len(keys))
	for i, k := range keys {
		own[i] = append([]byte(nil), k...) // the read's buffers are reused
	}
	t.push(trackItem{read: c.id, keys: own})
}

func (t *tracker) rememberLocked(id uint64, keys [][]byte) {
	tc := t.clients[id]
	if tc == nil {
		return // tracking went off meanwhile
	}
	tc.dirty = true
	tc.c.mu.Lock()
	bcast := tc.c.trk.bcast
	tc.c.mu.Unlock()
	if bcast {
		return
	}
	for _, k := range keys {
		ids := t.table[string(k)]
		if ids == nil {
			ids = map[uint64]struct{}{}
			t.table[string(k)] = ids
		}
		if _, ok := ids[id]; !ok {
			ids[id] = struct{}{}
			t.items++
		}
	}
	t.limit()
}

// invalidate is Redis's trackingInvalidateKey: key changed (by the client
// changer, 0 for none): it is queued for the BCAST prefixes it matches
// (bcast), and every client that may cache it is sent an invalidation, but
// a NOLOOP client for its own change; then nobody tracks it any more but
// that NOLOOP client, as in Redis: a read of the key that follows the
// change is queued after it (remember), so it is not forgotten here.
// t.mu is held.
func (t *tracker) invalidate(key []byte, changer uint64, bcast bool) {
	if bcast && len(t.prefixes) > 0 {
		for p, bs := range t.prefixes {
			if bytes.HasPrefix(key, []byte(p)) {
				bs.keys[string(key)] = changer
			}
		}
	}
	ids, ok := t.table[string(key)]
	if !ok {
		return
	}
	var payload []byte
	kept := false
	for id := range ids {
		tc := t.clients[id]
		if tc == nil {
			continue // gone, or tracking went off
		}
		tc.c.mu.Lock()
		bcastNow, own := tc.c.trk.bcast, tc.c.trk.noloop && id == changer
		tc.c.mu.Unlock()
		if own {
			kept = true
			continue
		}
		if bcastNow {
			continue
		}
		if payload == nil {
			payload = appendKeysArray(nil, [][]byte{key})
		}
		t.send(tc.c, payload)
	}
	if kept {
		t.items -= len(ids) - 1
		t.table[string(key)] = map[uint64]struct{}{changer: {}}
		return
	}
	t.items -= len(ids)
	delete(t.table, string(key))
}

// flush is Redis's trackingInvalidateKeysOnFlush for one group's flush:
// a null invalidation to every tracking client that may hold something
// (see dirty), and an empty table. t.mu is held.
func (t *tracker) flush() {
	for _, tc := range t.clients {
		if !tc.dirty {
			continue
		}
		tc.dirty = false // until it reads again (rememberLocked)
		// The null is spelt in the tracking client's protocol, even when it
		// goes to another client, as Redis does.
		null := []byte("$-1\r\n")
		if tc.c.protocol() >= resp.RESP3 {
			null = []byte("_\r\n")
		}
		t.send(tc.c, null)
	}
	t.table = map[string]map[uint64]struct{}{}
	t.items = 0
}

// broadcast sends each BCAST prefix's keys changed since the last pass to
// its clients, one message per prefix and client, the keys in order; a
// NOLOOP client is not sent the keys it changed itself. t.mu is held.
func (t *tracker) broadcast() {
	var names []string
	for p, bs := range t.prefixes {
		if len(bs.keys) > 0 {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	for _, p := range names {
		bs := t.prefixes[p]
		keys := make([]string, 0, len(bs.keys))
		for k := range bs.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var all []byte
		for c := range bs.clients {
			c.mu.Lock()
			noloop := c.trk.noloop
			c.mu.Unlock()
			if !noloop {
				if all == nil {
					all = appendKeyStrings(nil, keys, func(string) bool { return true })
				}
				t.send(c, all)
				continue
			}
			if own := appendKeyStrings(nil, keys, func(k string) bool { return bs.keys[k] != c.id }); own != nil {
				t.send(c, own)
			}
		}
		bs.keys = map[string]uint64{}
	}
}

// limit is Redis's trackingLimitUsedSlots: over tracking-table-max-keys,
// keys are dropped from the table, each with an invalidation to its
// clients as if it changed, up to an effort that grows with every round
// that ends still over the limit. t.mu is held.
func (t *tracker) limit() {
	max := int(t.maxKeys.Load())
	if max == 0 || len(t.table) <= max {
		t.rounds = 0
		return
	}
	effort := limitEffort * (t.rounds + 1)
	for k := range t.table { // Go's map order: a random walk
		if effort == 0 {
			break
		}
		effort--
		t.invalidate([]byte(k), 0, false)
		if len(t.table) <= max {
			t.rounds = 0
			return
		}
	}
	t.rounds++
}

// send is Redis's sendTrackingMessage: payload (an array of keys, or a
// null) goes to c as an invalidate push (RESP3), or to the client c
// redirects to: a push if it speaks RESP3, a message on
// __redis__:invalidate if it is subscribed (to any channel, as Redis),
// else nothing. A redirection to a client that is gone marks c broken and
// tells it so (RESP3). t.mu is held.
func (t *tracker) send(c *client, payload []byte) {
	c.mu.Lock()
	redirect, proto := c.trk.redirect, c.proto
	c.mu.Unlock()
	dest, redirected := c, false
	if redirect != 0 {
		r := t.s.clientByID(int64(redirect))
		if r == nil {
			c.mu.Lock()
			c.trk.broken = true
			c.mu.Unlock()
			if proto >= resp.RESP3 {
				b := appendPushHeader(nil, proto, 2)
				b = appendBulkBytes(b, []byte("tracking-redir-broken"))
				b = strconv.AppendUint(append(b, ':'), redirect, 10)
				t.s.pushTo(c, append(b, '\r', '\n'))
			}
			return
		}
		dest, redirected = r, true
	}
	dest.mu.Lock()
	dproto, subscribed := dest.proto, dest.sub.subscribed()
	dest.mu.Unlock()
	var b []byte
	switch {
	case dproto >= resp.RESP3:
		b = appendPushHeader(nil, dproto, 2)
		b = appendBulkBytes(b, []byte("invalidate"))
	case redirected && subscribed:
		b = appendPushHeader(nil, dproto, 3)
		b = appendBulkBytes(b, []byte("message"))
		b = appendBulkBytes(b, []byte(invalidateChannel))
	default:
		return // RESP2 without a subscribed redirection: no way to tell it
	}
	t.s.pushTo(dest, append(b, payload...))
}

// appendKeysArray renders keys as a RESP array of bulk strings.
func appendKeysArray(b []byte, keys [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(keys)), 10)
	b = append(b, '\r', '\n')
	for _, k := range keys {
		b = appendBulkBytes(b, k)
	}
	return b
}

// appendKeyStrings renders the keys keep accepts as a RESP array; nil if
// none.
func appendKeyStrings(b []byte, keys []string, keep func(string) bool) []byte {
	var kept [][]byte
	for _, k := range keys {
		if keep(k) {
			kept = append(kept, []byte(k))
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return appendKeysArray(b, kept)
}

// enable is Redis's enableTracking: c tracks with these options; BCAST
// prefixes add to those it had. t.mu is taken.
func (t *tracker) enable(c *client, o trackOptions) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.mu.Lock()
	st := &c.trk
	wasOn := st.on
	st.on, st.broken, st.bcast, st.noloop = true, false, o.bcast, o.noloop
	st.optin, st.optout = o.optin, o.optout
	st.redirect = o.redirect
	var added []string
	if o.bcast {
		ps := o.prefixes
		if len(ps) == 0 {
			ps = []string{""}
		}
		for _, p := range ps {
			if !slices.Contains(st.prefixes, p) {
				st.prefixes = append(st.prefixes, p)
				added = append(added, p)
			}
		}
		slices.Sort(st.prefixes)
	}
	c.mu.Unlock()
	for _, p := range added {
		bs := t.prefixes[p]
		if bs == nil {
			bs = &bcastState{keys: map[string]uint64{}, clients: map[*client]struct{}{}}
			t.prefixes[p] = bs
		}
		bs.clients[c] = struct{}{}
	}
	if !wasOn {
		t.clients[c.id] = &tracked{c: c, dirty: true}
		t.s.n.SetTracking(true)
	}
}

// disable is Redis's disableTracking: c's table entries stay until their
// keys change (they are not found then), as in Redis.
func (t *tracker) disable(c *client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c.mu.Lock()
	st := &c.trk
	prefixes := st.prefixes
	on := st.on
	*st = trackState{redirect: st.redirect}
	c.mu.Unlock()
	for _, p := range prefixes {
		if bs := t.prefixes[p]; bs != nil {
			delete(bs.clients, c)
			if len(bs.clients) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	if on {
		delete(t.clients, c.id)
		if len(t.clients) == 0 {
			t.s.n.SetTracking(false)
		}
	}
}

// setMaxKeys is CONFIG SET tracking-table-max-keys: the new limit applies
// at once.
func (t *tracker) setMaxKeys(n int64) {
	t.maxKeys.Store(n)
	t.mu.Lock()
	t.rounds = 0
	if len(t.clients) > 0 {
		t.limit()
	}
	t.mu.Unlock()
}

// trackingStats are INFO's numbers: tracking clients, keys in the table,
// client IDs in it, BCAST prefixes.
func (t *tracker) stats() (clients, keys, items, prefixes int) {
	t.drain()
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients), len(t.table), t.items, len(t.prefixes)
}

// prefixOverlap is Redis's checkPrefixCollisionsOrReply: the error of the
// first prefix that overlaps one c has or one given after it, nil if none.
func prefixOverlap(have, given []string) error {
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range given {
		for _, h := range have {
			if overlap(h, p) {
				return resp.Errorf("ERR Prefix '%s' overlaps with an existing prefix '%s'. "+
					"Prefixes for a single client must not overlap.", p, h)
			}
		}
		for _, q := range given[i+1:] {
			if overlap(p, q) {
				return resp.Errorf("ERR Prefix '%s' overlaps with another provided prefix '%s'. "+
					"Prefixes for a single client must not overlap.", p, q)
			}
		}
	}
	return nil
}
