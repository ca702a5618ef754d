package cluster

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
)

// Keyspace notifications (notify-keyspace-events). The state machine
// collects the events of each entry (fsm/notify.go); this file decides on
// which node they are published, and hands them to the front end, which
// publishes them.
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

// keyspaceEvents is a node's notification setting and where its events go.
type keyspaceEvents struct {
	flags   atomic.Uint32                         // fsm.NotifyClass: notify-keyspace-events
	publish atomic.Pointer[func(evs []fsm.Event)] // set by the front end (HandleKeyspaceEvents)
}

func (k *keyspaceEvents) classes() fsm.NotifyClass { return fsm.NotifyClass(k.flags.Load()) }

// NotifyClasses is the notify-keyspace-events setting of this node.
func (n *Node) NotifyClasses() fsm.NotifyClass { return n.keyspace.classes() }

// SetNotifyClasses sets notify-keyspace-events for this node (a per-node
// setting, as in Redis Cluster).
func (n *Node) SetNotifyClasses(c fsm.NotifyClass) { n.keyspace.flags.Store(uint32(c)) }

// HandleKeyspaceEvents sets fn to publish the keyspace events of the
// entries applied by the groups this node leads. fn runs inside Apply: it
// must only queue messages, never wait.
func (n *Node) HandleKeyspaceEvents(fn func(evs []fsm.Event)) { n.keyspace.publish.Store(&fn) }

// notifyClasses is the group FSM's question before each entry: the event
// classes to collect, none unless this node's replica is the group's
// leader; there, the expired keys the entry deletes are counted too
// (INFO's expired_keys, counted once, by the leader, as events are
// published).
func (g *Group) notifyClasses() fsm.NotifyClass {
	if r := g.raftReady.Load(); r == nil || r.State() != raft.Leader {
		return 0
	}
	classes := g.node.keyspace.classes().Collected() | fsm.NotifyCount
	if g.node.monitoring.Load() {
		classes |= fsm.NotifyMonitor
	}
	return classes
}

// SetMonitoring says whether the front end has MONITOR clients: the
// groups led here then keep the commands their scripts call.
func (n *Node) SetMonitoring(on bool) { n.monitoring.Store(on) }

// publishEvents hands an entry's events to the front end, from inside
// Apply.
func (g *Group) publishEvents(evs []fsm.Event) {
	if publish := g.node.keyspace.publish.Load(); publish != nil {
		(*publish)(evs)
	}
}
