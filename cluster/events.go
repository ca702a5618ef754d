package cluster

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

// Recent events: what this node observed happen to the cluster, kept in a
// bounded ring for operators (the dashboard's event list). Each node keeps
// its own: a node sees the leader changes of the groups it hosts, the
// gossip states of its peers as it sees them, and the map's changes as it
// applies them (joins, removals, drains, slot migrations). Nothing here is
// replicated or persisted: a restarted node starts with an empty ring.

// EventKind says what happened.
type EventKind string

const (
	EventLeader         EventKind = "leader"          // a group (or the meta group) has a new leader
	EventGossip         EventKind = "gossip"          // a peer's gossip state changed, as seen here
	EventJoin           EventKind = "join"            // a node was added to the map
	EventDrain          EventKind = "drain"           // a node is being drained
	EventRemove         EventKind = "remove"          // a node was removed from the map
	EventMigrationStart EventKind = "migration-start" // slots began moving between two groups
	EventMigrationDone  EventKind = "migration-done"  // slot moves between two groups finished
	EventGroupAdded     EventKind = "group-added"     // a slot group was created
	EventGroupRemoved   EventKind = "group-removed"   // a slot group was deleted
)

// Event is one thing this node observed. Text says it for people; the
// other fields carry the same facts for programs.
type Event struct {
	At   time.Time `json:"at"`
	Kind EventKind `json:"kind"`
	// Node is the node the event is about (a leader, a peer), "" if none.
	Node string `json:"node,omitempty"`
	// Group is the group the event is about: a leader's group
	// (MetaGroupID for the meta group), a created or deleted group.
	Group uint32 `json:"group,omitempty"`
	Term  uint64 `json:"term,omitempty"`  // EventLeader
	State string `json:"state,omitempty"` // EventGossip: alive, suspect, dead, left
	// From, To and Slots describe migrations: the groups, and the slots
	// as ranges ("0-99,200"), cut to maxEventSlots characters.
	From  uint32 `json:"from,omitempty"`
	To    uint32 `json:"to,omitempty"`
	Slots string `json:"slots,omitempty"`
	Count int    `json:"count,omitempty"` // migrations: how many slots
	Text  string `json:"text"`

	slots []uint16 // a migration's slots, for merging the next into it
}

// eventRingSize bounds the events a node keeps; older ones are dropped.
const eventRingSize = 128

// eventMergeWithin: slot moves between the same two groups that start (or
// finish) within this long of the last one are one event, so a reshard
// of a thousand slots, one map change each, does not push every other
// event out of the ring.
const eventMergeWithin = 5 * time.Second

// maxEventSlots bounds the length of an event's Slots text.
const maxEventSlots = 120

// eventRing is the node's recent events, oldest first once full.
type eventRing struct {
	mu   sync.Mutex
	buf  []Event // at most eventRingSize
	next int     // where the next event goes once buf is full
}

func (r *eventRing) add(e Event) {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if last := r.last(); last != nil && mergeable(*last, e) {
		slots := append(slices.Clip(last.slots), e.slots...) // a copy: all() handed out the old one
		*last = migrationEvent(last.Kind, last.From, last.To, slots)
		last.At = e.At
		return
	}
	if len(r.buf) < eventRingSize {
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.next] = e
	r.next = (r.next + 1) % eventRingSize
}

// last is the newest event kept, nil if none.
func (r *eventRing) last() *Event {
	switch {
	case len(r.buf) == 0:
		return nil
	case len(r.buf) < eventRingSize:
		return &r.buf[len(r.buf)-1]
	}
	return &r.buf[(r.next+eventRingSize-1)%eventRingSize]
}

// mergeable: e moves slots between the same groups as last, the same
// way, soon after it.
func mergeable(last, e Event) bool {
	return (e.Kind == EventMigrationStart || e.Kind == EventMigrationDone) && e.Kind == last.Kind &&
		e.From == last.From && e.To == last.To && e.At.Sub(last.At) <= eventMergeWithin && len(last.slots)+len(e.slots) <= slots.Count
}

// all is the events kept, oldest first.
func (r *eventRing) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.buf))
	out = append(out, r.buf[r.next:]...)
	return append(out, r.buf[:r.next]...)
}

// Events are the events this node observed recently, oldest first.
func (n *Node) Events() []Event { return n.events.all() }

// noteLeader records that this node's replica of group saw leader elected.
func (n *Node) noteLeader(group uint32, leader string, term uint64) {
	what := "group " + strconv.FormatUint(uint64(group), 10)
	if group == MetaGroupID {
		what = "meta group"
	}
	n.events.add(Event{Kind: EventLeader, Node: leader, Group: group, Term: term,
		Text: fmt.Sprintf("%s: %s is leader (term %d)", what, leader, term)})
}

// noteGossip records a peer's new gossip state.
func (n *Node) noteGossip(peer string, st GossipState) {
	n.events.add(Event{Kind: EventGossip, Node: peer, State: string(st),
		Text: fmt.Sprintf("%s is %s (gossip)", peer, st)})
}

// noteMapChange records what changed between two maps this node applied:
// nodes added, drained and removed, groups created and deleted,
// migrations started and finished.
func (n *Node) noteMapChange(old, cur *meta.Map) {
	if old == nil || !old.Initialized() || cur == old {
		return // the first map is the start, not a change
	}
	for _, e := range mapEvents(old, cur) {
		n.events.add(e)
	}
}

// mapEvents lists the changes from old to cur.
func mapEvents(old, cur *meta.Map) []Event {
	var out []Event
	for _, nd := range cur.Nodes {
		was, existed := old.Node(nd.ID)
		if existed && was.State == nd.State && was.Incarnation == nd.Incarnation {
			continue
		}
		switch nd.State {
		case meta.Active:
			if !existed || was.State == meta.Removed || was.Incarnation != nd.Incarnation {
				out = append(out, Event{Kind: EventJoin, Node: nd.ID, Text: nd.ID + " joined the cluster (" + nd.Client + ")"})
			}
		case meta.Draining:
			out = append(out, Event{Kind: EventDrain, Node: nd.ID, Text: nd.ID + " is being drained"})
		case meta.Removed:
			if existed && was.State != meta.Removed {
				out = append(out, Event{Kind: EventRemove, Node: nd.ID, Text: nd.ID + " was removed from the cluster"})
			}
		}
	}
	for _, g := range cur.Groups {
		if _, ok := old.Group(g.ID); !ok {
			out = append(out, Event{Kind: EventGroupAdded, Group: g.ID, Text: fmt.Sprintf("group %d created on %s", g.ID, strings.Join(g.Replicas, ", "))})
		}
	}
	for _, g := range old.Groups {
		if _, ok := cur.Group(g.ID); !ok {
			out = append(out, Event{Kind: EventGroupRemoved, Group: g.ID, Text: fmt.Sprintf("group %d deleted", g.ID)})
		}
	}
	out = append(out, migrationEvents(EventMigrationStart, cur.Migrations, old)...)
	return append(out, migrationEvents(EventMigrationDone, old.Migrations, cur)...)
}

// migrationEvents is one event per pair of groups for the migrations of
// ms that other does not have: started (ms is the new map's) or finished
// (ms is the old map's). A migration that left the map without its slot
// changing owner was cancelled, not finished: it is not reported.
func migrationEvents(kind EventKind, ms []meta.Migration, other *meta.Map) []Event {
	type route struct{ from, to uint32 }
	bySlots := map[route][]uint16{}
	var order []route
	for _, m := range ms {
		if o, ok := other.Migration(m.Slot); ok && o.From == m.From && o.To == m.To {
			continue
		}
		if g, ok := other.GroupOf(m.Slot); kind == EventMigrationDone && (!ok || g.ID != m.To) {
			continue
		}
		r := route{m.From, m.To}
		if _, seen := bySlots[r]; !seen {
			order = append(order, r)
		}
		bySlots[r] = append(bySlots[r], m.Slot)
	}
	out := make([]Event, 0, len(order))
	for _, r := range order {
		out = append(out, migrationEvent(kind, r.from, r.to, bySlots[r]))
	}
	return out
}

// migrationEvent is the event of slots ss moving (or moved) from group
// from to group to.
func migrationEvent(kind EventKind, from, to uint32, ss []uint16) Event {
	text := slotRangesText(ss)
	verb := "moving"
	if kind == EventMigrationDone {
		verb = "moved"
	}
	return Event{Kind: kind, From: from, To: to, Slots: text, Count: len(ss), slots: ss,
		Text: fmt.Sprintf("%s %d slot%s (%s) from group %d to group %d", verb, len(ss), plural(len(ss)), text, from, to)}
}

// slotRangesText renders slots as ranges, cut to maxEventSlots characters.
func slotRangesText(ss []uint16) string {
	ss = slices.Compact(slices.Sorted(slices.Values(ss)))
	var parts []string
	for i := 0; i < len(ss); {
		j := i
		for j+1 < len(ss) && ss[j+1] == ss[j]+1 {
			j++
		}
		parts = append(parts, slots.Range{Start: ss[i], End: ss[j]}.String())
		i = j + 1
	}
	s := strings.Join(parts, ",")
	if len(s) > maxEventSlots {
		s = s[:strings.LastIndexByte(s[:maxEventSlots], ',')] + ",…"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
