package server

import "github.com/slotraft/slotraft/fsm"

// Keyspace notifications at the front end: the node hands over the events
// of the entries its groups apply as leader (cluster.Node.HandleKeyspaceEvents),
// and they are published to this node's subscribers.

// Channel prefixes (Redis's database is always 0 here).
const (
	keyspacePrefix = "__keyspace@0__:"
	keyeventPrefix = "__keyevent@0__:"
)

// publishEvents publishes an entry's events to this node's subscribers,
// from inside Apply: publishLocal only queues messages, it never waits for
// a subscriber.
func (s *Server) publishEvents(evs []fsm.Event) {
	flags := s.n.NotifyClasses()
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
