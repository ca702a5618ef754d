package server

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// The registry of this node's subscriptions: who listens to which channel,
// pattern and shard channel. Subscribing, unsubscribing and delivering all
// queue their pushes on the subscriber's output (pubsub_output.go) while
// holding the registry's lock (delivery holds it shared), so a client never
// sees a message on a channel before its subscribe confirmation, nor after
// its unsubscribe confirmation, exactly as in Redis where both happen on
// the one event-loop thread. Lock order: registry, then a subscriber's
// output; never the other way.

// subKind is one of the three subscription namespaces.
type subKind uint8

const (
	kindChannel subKind = iota // SUBSCRIBE
	kindPattern                // PSUBSCRIBE
	kindShard                  // SSUBSCRIBE
	numKinds
)

// kindWords are the push names of each kind, as Redis spells them.
var kindWords = [numKinds]struct{ sub, unsub, msg string }{
	kindChannel: {"subscribe", "unsubscribe", "message"},
	kindPattern: {"psubscribe", "punsubscribe", "pmessage"},
	kindShard:   {"ssubscribe", "sunsubscribe", "smessage"},
}

// subscriber is the pub/sub side of one client connection. It exists from
// the connection's first subscribe-family command until it closes.
type subscriber struct {
	c   *client
	out *outQueue

	// names[k] are the connection's subscriptions of kind k; registry.mu.
	names [numKinds]map[string]struct{}
	// counts mirror len(names[k]) for readers that do not take the
	// registry's lock (CLIENT LIST, the subscribed-state gate).
	counts [numKinds]atomic.Int64
	// monitoring: the connection is in MONITOR mode (monitor.go); its
	// output queue is limited as a subscriber's.
	monitoring atomic.Bool
}

// confirmCount is the count a confirmation of kind k carries: channels
// plus patterns for SUBSCRIBE and PSUBSCRIBE, shard channels for SSUBSCRIBE
// (Redis 7 counts shard subscriptions apart).
func (sub *subscriber) confirmCount(k subKind) int64 {
	if k == kindShard {
		return sub.counts[kindShard].Load()
	}
	return sub.counts[kindChannel].Load() + sub.counts[kindPattern].Load()
}

// subscribed reports whether the connection is in subscribed state (Redis's
// CLIENT_PUBSUB flag): at least one subscription of any kind.
func (sub *subscriber) subscribed() bool {
	return sub != nil && sub.counts[kindChannel].Load()+sub.counts[kindPattern].Load()+sub.counts[kindShard].Load() > 0
}

// nameSubs are the subscribers of one channel, pattern or shard channel.
type nameSubs struct {
	name []byte
	subs map[*subscriber]struct{}
}

// registry indexes the subscribers of this node.
type registry struct {
	mu     sync.RWMutex
	byName [numKinds]map[string]*nameSubs
	slots  map[uint16]map[string]struct{} // shard channels with subscribers, by slot
	// clients counts the subscribers in subscribed state (INFO pubsub_clients).
	clients atomic.Int64
}

func newRegistry() *registry {
	r := &registry{slots: map[uint16]map[string]struct{}{}}
	for k := range r.byName {
		r.byName[k] = map[string]*nameSubs{}
	}
	return r
}

// add subscribes sub to name; false if it already was. r.mu is held.
func (r *registry) add(sub *subscriber, k subKind, name string) bool {
	if sub.names[k] == nil {
		sub.names[k] = map[string]struct{}{}
	}
	if _, ok := sub.names[k][name]; ok {
		return false
	}
	if !sub.subscribed() {
		r.clients.Add(1)
	}
	sub.names[k][name] = struct{}{}
	sub.counts[k].Add(1)
	ns := r.byName[k][name]
	if ns == nil {
		ns = &nameSubs{name: []byte(name), subs: map[*subscriber]struct{}{}}
		r.byName[k][name] = ns
		if k == kindShard {
			slot := slots.Of(ns.name)
			if r.slots[slot] == nil {
				r.slots[slot] = map[string]struct{}{}
			}
			r.slots[slot][name] = struct{}{}
		}
	}
	ns.subs[sub] = struct{}{}
	return true
}

// remove unsubscribes sub from name; false if it was not subscribed. r.mu is held.
func (r *registry) remove(sub *subscriber, k subKind, name string) bool {
	if _, ok := sub.names[k][name]; !ok {
		return false
	}
	delete(sub.names[k], name)
	sub.counts[k].Add(-1)
	if !sub.subscribed() {
		r.clients.Add(-1)
	}
	ns := r.byName[k][name]
	delete(ns.subs, sub)
	if len(ns.subs) == 0 {
		// Forget empty names so a flood of one-off channels costs nothing.
		delete(r.byName[k], name)
		if k == kindShard {
			slot := slots.Of(ns.name)
			delete(r.slots[slot], name)
			if len(r.slots[slot]) == 0 {
				delete(r.slots, slot)
			}
		}
	}
	return true
}

// subscribe adds names of kind k to sub and queues one confirmation per
// name, in argument order.
func (r *registry) subscribe(sub *subscriber, k subKind, names [][]byte) {
	proto := sub.c.protocol()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, name := range names {
		r.add(sub, k, string(name))
		sub.out.pushValue(confirmation(kindWords[k].sub, name, sub.confirmCount(k)), proto)
	}
}

// unsubscribe removes names of kind k from sub (all of them when names is
// empty) and queues one confirmation per name; with nothing to remove it
// still confirms once, with a null name, as Redis does.
func (r *registry) unsubscribe(sub *subscriber, k subKind, names [][]byte) {
	proto := sub.c.protocol()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(names) == 0 {
		for _, name := range sortedNames(sub.names[k]) {
			names = append(names, []byte(name))
		}
		if len(names) == 0 {
			sub.out.pushValue(confirmation(kindWords[k].unsub, nil, sub.confirmCount(k)), proto)
			return
		}
	}
	for _, name := range names {
		r.remove(sub, k, string(name))
		sub.out.pushValue(confirmation(kindWords[k].unsub, name, sub.confirmCount(k)), proto)
	}
}

// removeAll forgets every subscription of sub without telling it (the
// connection closed, or RESET).
func (r *registry) removeAll(sub *subscriber) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range numKinds {
		for name := range sub.names[k] {
			r.remove(sub, k, name)
		}
	}
}

// dropShardSlots unsubscribes every client from the shard channels of the
// given slots and tells each with an sunsubscribe push, as Redis 7 does
// when a slot leaves its node, so clients resubscribe where it went.
func (r *registry) dropShardSlots(drop []uint16) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, slot := range drop {
		for _, name := range sortedNames(r.slots[slot]) {
			ns := r.byName[kindShard][name]
			if ns == nil {
				continue
			}
			for sub := range ns.subs {
				r.remove(sub, kindShard, name)
				sub.out.pushValue(confirmation(kindWords[kindShard].unsub, ns.name, sub.confirmCount(kindShard)), sub.c.protocol())
				n++
			}
		}
	}
	return n
}

// shardSlots lists the slots that have shard subscribers.
func (r *registry) shardSlots() []uint16 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]uint16, 0, len(r.slots))
	for slot := range r.slots {
		out = append(out, slot)
	}
	return out
}

// publish delivers message on channel to its subscribers of kind k
// (kindChannel or kindShard) and, for kindChannel, to the subscribers of
// every matching pattern. It returns the number of deliveries, counted as
// Redis counts them: a client subscribed to the channel and to two
// matching patterns counts three times.
func (r *registry) publish(k subKind, channel, message []byte) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	if ns := r.byName[k][string(channel)]; ns != nil {
		var m [2][]byte // rendered once per protocol
		for sub := range ns.subs {
			proto := sub.c.protocol()
			i := protoIndex(proto)
			if m[i] == nil {
				m[i] = appendMessage(nil, proto, kindWords[k].msg, channel, message)
			}
			sub.out.push(m[i])
			n++
		}
	}
	if k != kindChannel {
		return n // shard pub/sub ignores patterns
	}
	for _, ns := range r.byName[kindPattern] {
		if !fsm.Match(ns.name, channel) {
			continue
		}
		var m [2][]byte
		for sub := range ns.subs {
			proto := sub.c.protocol()
			i := protoIndex(proto)
			if m[i] == nil {
				m[i] = appendPMessage(nil, proto, ns.name, channel, message)
			}
			sub.out.push(m[i])
			n++
		}
	}
	return n
}

// counts are the numbers INFO and PUBSUB NUMPAT report: distinct channels,
// patterns and shard channels with at least one subscriber.
func (r *registry) counts() (channels, patterns, shard int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.byName[kindChannel]), len(r.byName[kindPattern]), len(r.byName[kindShard])
}

// list returns the names of kind k that match pattern (all when pattern is
// nil), sorted.
func (r *registry) list(k subKind, pattern []byte) [][]byte {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out [][]byte
	for _, ns := range r.byName[k] {
		if pattern == nil || fsm.Match(pattern, ns.name) {
			out = append(out, ns.name)
		}
	}
	slices.SortFunc(out, func(a, b []byte) int { return compareBytes(a, b) })
	return out
}

// numSubs is how many clients subscribe to name of kind k.
func (r *registry) numSubs(k subKind, name []byte) int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if ns := r.byName[k][string(name)]; ns != nil {
		return len(ns.subs)
	}
	return 0
}

func sortedNames(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func compareBytes(a, b []byte) int {
	switch sa, sb := string(a), string(b); {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}

// confirmation is a (un)subscribe confirmation: kind, name (null when nil),
// count. It is a push in RESP3 and an array in RESP2.
func confirmation(kind string, name []byte, count int64) resp.Value {
	n := resp.Null()
	if name != nil {
		n = resp.Bulk(name)
	}
	return resp.Push(resp.BulkString(kind), n, resp.Int(count))
}

// protoIndex indexes a message rendered once per protocol, so a publish
// renders it at most twice whatever the number of subscribers.
func protoIndex(proto int) int {
	if proto >= resp.RESP3 {
		return 1
	}
	return 0
}

// appendMessage renders ["message"|"smessage", channel, message].
func appendMessage(b []byte, proto int, kind string, channel, message []byte) []byte {
	b = appendPushHeader(b, proto, 3)
	b = appendBulkBytes(b, []byte(kind))
	b = appendBulkBytes(b, channel)
	return appendBulkBytes(b, message)
}

// appendPMessage renders ["pmessage", pattern, channel, message].
func appendPMessage(b []byte, proto int, pattern, channel, message []byte) []byte {
	b = appendPushHeader(b, proto, 4)
	b = appendBulkBytes(b, []byte("pmessage"))
	b = appendBulkBytes(b, pattern)
	b = appendBulkBytes(b, channel)
	return appendBulkBytes(b, message)
}

func appendPushHeader(b []byte, proto, n int) []byte {
	if proto >= resp.RESP3 {
		b = append(b, '>')
	} else {
		b = append(b, '*')
	}
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulkBytes(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}
