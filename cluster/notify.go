package cluster

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
)

// Keyspace notifications (notify-keyspace-events). The state machine
// collects the events of each entry (fsm/notify.go); this file decides on
// which node they are published and publishes them.
//
// As in Redis Cluster, events are node-local: they go to the subscribers of
// the node that holds the key as master — here the leader of the key's
// group — and are not broadcast to other nodes. Only the replica whose Raft
// is leader when it applies an entry collects its events (a group's FSM
// asks notifyClasses once per entry), so every event is published once,
// whoever proposed the entry: a client's write, the leader's active expiry,
// or an entry proposed by a previous leader and applied after a change of
// leader. Around a change of leader an event may be published by both
// leaders or by neither, as pub/sub's at-most-once delivery allows.

// keyspaceEvents is a node's notification setting and the server its
// events are published on.
type keyspaceEvents struct {
	flags atomic.Uint32          // fsm.NotifyClass: notify-keyspace-events
	srv   atomic.Pointer[Server] // set by NewServer
}

// attach makes s the server that publishes this node's events.
func (k *keyspaceEvents) attach(s *Server) { k.srv.Store(s) }

func (k *keyspaceEvents) classes() fsm.NotifyClass { return fsm.NotifyClass(k.flags.Load()) }

// notifyClasses is the group FSM's question before each entry: the event
// classes to collect, none unless notifications are on and this node's
// replica is the group's leader. The flags come first so that with
// notifications off an entry costs one atomic load.
func (g *Group) notifyClasses() fsm.NotifyClass {
	c := g.node.keyspace.classes().Collected()
	if c == 0 || g.raft.State() != raft.Leader {
		return 0
	}
	return c
}

// Channel prefixes (Redis's database is always 0 here).
const (
	keyspacePrefix = "__keyspace@0__:"
	keyeventPrefix = "__keyevent@0__:"
)

// publishEvents publishes an entry's events to this node's subscribers,
// from inside Apply: publishLocal only queues messages, it never waits for
// a subscriber.
func (g *Group) publishEvents(evs []fsm.Event) {
	k := &g.node.keyspace
	s := k.srv.Load()
	if s == nil {
		return
	}
	flags := k.classes()
	var ch []byte
	for _, e := range evs {
		if flags&fsm.NotifyKeyspace != 0 {
			ch = append(append(ch[:0], keyspacePrefix...), e.Key...)
			s.publishLocal(ch, []byte(e.Name))
		}
		if flags&fsm.NotifyKeyevent != 0 {
			ch = append(append(ch[:0], keyeventPrefix...), e.Name...)
			s.publishLocal(ch, e.Key)
		}
	}
}

// The notify-keyspace-events parameter of CONFIG (config_cmd.go).

func getNotifyKeyspaceEvents(s *Server) string { return s.n.keyspace.classes().String() }

func setNotifyKeyspaceEvents(s *Server, value string) error {
	f, err := fsm.ParseNotifyClasses(value)
	if err != nil {
		return err
	}
	s.n.keyspace.flags.Store(uint32(f))
	return nil
}
