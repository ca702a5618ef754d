package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/slots"
)

// eventsMap is a map of nodes ids (state by id) and groups owning ranges.
func eventsMap(nodes map[string]meta.NodeState, groups map[uint32][]slots.Range, migs ...meta.Migration) *meta.Map {
	m := &meta.Map{Migrations: migs}
	for _, id := range []string{"node1", "node2", "node3", "node4"} {
		if st, ok := nodes[id]; ok {
			m.Nodes = append(m.Nodes, meta.Node{ID: id, Client: "127.0.0.1:7001", State: st, Incarnation: 1})
		}
	}
	for id := uint32(1); id <= 4; id++ {
		if rs, ok := groups[id]; ok {
			m.Groups = append(m.Groups, meta.Group{ID: id, Ranges: rs, Replicas: []string{"node1", "node2"}})
		}
	}
	return m
}

func TestMapEvents(t *testing.T) {
	three := map[string]meta.NodeState{"node1": meta.Active, "node2": meta.Active, "node3": meta.Active}
	two := map[uint32][]slots.Range{1: {{Start: 0, End: 8191}}, 2: {{Start: 8192, End: 16383}}}
	moved := map[uint32][]slots.Range{1: {{Start: 0, End: 8189}}, 2: {{Start: 8190, End: 16383}}}
	mig := func(s uint16) meta.Migration { return meta.Migration{Slot: s, From: 1, To: 2} }
	tests := []struct {
		name     string
		old, cur *meta.Map
		want     []string // kind: text
	}{
		{"nothing changed", eventsMap(three, two), eventsMap(three, two), nil},
		{"a node joins",
			eventsMap(three, two),
			eventsMap(map[string]meta.NodeState{"node1": meta.Active, "node2": meta.Active, "node3": meta.Active, "node4": meta.Active}, two),
			[]string{"join: node4 joined the cluster (127.0.0.1:7001)"}},
		{"a node drains, then is removed",
			eventsMap(map[string]meta.NodeState{"node1": meta.Active, "node2": meta.Active, "node3": meta.Draining}, two),
			eventsMap(map[string]meta.NodeState{"node1": meta.Active, "node2": meta.Active, "node3": meta.Removed}, two),
			[]string{"remove: node3 was removed from the cluster"}},
		{"drain starts",
			eventsMap(three, two),
			eventsMap(map[string]meta.NodeState{"node1": meta.Active, "node2": meta.Active, "node3": meta.Draining}, two),
			[]string{"drain: node3 is being drained"}},
		{"a group is created",
			eventsMap(three, map[uint32][]slots.Range{1: {{Start: 0, End: 16383}}}),
			eventsMap(three, two),
			[]string{"group-added: group 2 created on node1, node2"}},
		{"migrations start, one event per pair of groups",
			eventsMap(three, two),
			eventsMap(three, two, mig(8190), mig(8191), meta.Migration{Slot: 9000, From: 2, To: 1}),
			[]string{"migration-start: moving 2 slots (8190-8191) from group 1 to group 2",
				"migration-start: moving 1 slot (9000) from group 2 to group 1"}},
		{"migrations finish",
			eventsMap(three, two, mig(8190), mig(8191)),
			eventsMap(three, moved),
			[]string{"migration-done: moved 2 slots (8190-8191) from group 1 to group 2"}},
		{"a cancelled migration is not a move",
			eventsMap(three, two, mig(8191)),
			eventsMap(three, two),
			nil},
		{"a migration in flight stays quiet",
			eventsMap(three, two, mig(8191)),
			eventsMap(three, two, mig(8191)),
			nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range mapEvents(tc.old, tc.cur) {
				got = append(got, string(e.Kind)+": "+e.Text)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestSlotRangesTextBounded(t *testing.T) {
	var ss []uint16
	for s := uint16(0); s < 2000; s += 2 { // a thousand ranges of one slot
		ss = append(ss, s)
	}
	got := slotRangesText(ss)
	if len(got) > maxEventSlots+len(",…") || !strings.HasPrefix(got, "0,2,4,") || !strings.HasSuffix(got, ",…") {
		t.Errorf("slotRangesText of 1000 ranges = %q (%d bytes)", got, len(got))
	}
	if got := slotRangesText([]uint16{5, 3, 4, 9}); got != "3-5,9" {
		t.Errorf("slotRangesText(5,3,4,9) = %q, want 3-5,9", got)
	}
}

func TestEventRingKeepsTheLatest(t *testing.T) {
	var r eventRing
	for i := range eventRingSize + 10 {
		r.add(Event{Kind: EventGossip, Text: fmt.Sprint(i)})
	}
	all := r.all()
	if len(all) != eventRingSize {
		t.Fatalf("%d events kept, want %d", len(all), eventRingSize)
	}
	if all[0].Text != "10" || all[len(all)-1].Text != fmt.Sprint(eventRingSize+9) {
		t.Errorf("kept %s … %s, want 10 … %d", all[0].Text, all[len(all)-1].Text, eventRingSize+9)
	}
	if all[0].At.IsZero() {
		t.Error("an event without a time got none")
	}
}

// TestEventsOfAFailover: the survivors of a stopped node record the new
// leader of the group it led (with its term) and its gossip state, and
// every node records the meta group's leader.
func TestEventsOfAFailover(t *testing.T) {
	c := NewTestCluster(t, 3, 3)
	c.LeadersSpread()
	old := c.Leader(1)
	c.Stop(old)
	survivor := c.Nodes[(old+1)%3]
	gone := c.Peers[old].ID
	PollUntil(t, "the new leader and the gossip state in the survivor's events", func() bool {
		var leader, gossip, metaLeader bool
		for _, e := range survivor.Events() {
			leader = leader || e.Kind == EventLeader && e.Group == 1 && e.Node != gone && e.Term > 1 && strings.HasPrefix(e.Text, "group 1: ")
			gossip = gossip || e.Kind == EventGossip && e.Node == gone && (e.State == string(GossipDead) || e.State == string(GossipLeft))
			metaLeader = metaLeader || e.Kind == EventLeader && e.Group == MetaGroupID && strings.HasPrefix(e.Text, "meta group: ")
		}
		return leader && gossip && metaLeader
	})
}

// TestEventRingMergesSlotMoves: slot moves between the same two groups,
// one map change each, in quick succession, are one event.
func TestEventRingMergesSlotMoves(t *testing.T) {
	var r eventRing
	t0 := time.Now()
	add := func(kind EventKind, from, to uint32, slot uint16, after time.Duration) {
		e := migrationEvent(kind, from, to, []uint16{slot})
		e.At = t0.Add(after)
		r.add(e)
	}
	for i := range 100 {
		add(EventMigrationStart, 1, 2, uint16(100+i), time.Duration(i)*100*time.Millisecond)
	}
	add(EventMigrationStart, 2, 1, 7, 10*time.Second)                   // another route
	add(EventMigrationStart, 2, 1, 8, 20*time.Second)                   // too late to merge
	add(EventMigrationDone, 2, 1, 8, 20*time.Second+time.Millisecond)   // another kind
	r.add(Event{Kind: EventGossip, Text: "node3 is dead (gossip)"})     // not a move
	add(EventMigrationDone, 2, 1, 9, 20*time.Second+2*time.Millisecond) // after another event
	var got []string
	for _, e := range r.all() {
		got = append(got, e.Text)
	}
	want := []string{
		"moving 100 slots (100-199) from group 1 to group 2",
		"moving 1 slot (7) from group 2 to group 1",
		"moving 1 slot (8) from group 2 to group 1",
		"moved 1 slot (8) from group 2 to group 1",
		"node3 is dead (gossip)",
		"moved 1 slot (9) from group 2 to group 1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
