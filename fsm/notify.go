package fsm

import (
	"strings"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Keyspace notifications (Redis's notify.c). Commands record the events
// Redis 7.2 emits for them with c.notify, in Redis's order, while they
// apply; the events leave Apply in ApplyResult.Events and the cluster
// layer publishes them (on the group's leader only). Apply itself never
// publishes: it stays deterministic and knows nothing of networks.
//
// Whether events are collected at all is decided per entry by
// State.notifyClasses (set through FSM.SetNotifyHook): with notifications
// off it returns 0 and c.notify is one AND and a return, so writes pay
// nothing for the feature.

// NotifyClass is a set of notification classes, with Redis's bit values
// (NOTIFY_* in server.h).
type NotifyClass uint32

// The classes and their letters in notify-keyspace-events.
const (
	NotifyKeyspace NotifyClass = 1 << 0  // K: __keyspace@0__:<key> channels
	NotifyKeyevent NotifyClass = 1 << 1  // E: __keyevent@0__:<event> channels
	NotifyGeneric  NotifyClass = 1 << 2  // g: DEL, EXPIRE, RENAME…
	NotifyString   NotifyClass = 1 << 3  // $
	NotifyList     NotifyClass = 1 << 4  // l
	NotifySet      NotifyClass = 1 << 5  // s
	NotifyHash     NotifyClass = 1 << 6  // h
	NotifyZSet     NotifyClass = 1 << 7  // z
	NotifyExpired  NotifyClass = 1 << 8  // x
	NotifyEvicted  NotifyClass = 1 << 9  // e: never emitted (no eviction)
	NotifyStream   NotifyClass = 1 << 10 // t
	NotifyKeyMiss  NotifyClass = 1 << 11 // m: never emitted (reads do not apply)
	NotifyModule   NotifyClass = 1 << 13 // d: never emitted (no modules)
	NotifyNew      NotifyClass = 1 << 14 // n: a key was created
	// NotifyCount is no Redis class and no letter: it makes an entry
	// count the expired keys it deletes and the writes it applies
	// (ApplyResult.Expired and Changes, INFO's expired_keys and
	// rdb_changes_since_last_save), which the group's leader asks for.
	NotifyCount NotifyClass = 1 << 31
	// NotifyMonitor is no Redis class either: it makes an entry keep the
	// commands its scripts run (Outcome.Calls), for MONITOR.
	NotifyMonitor NotifyClass = 1 << 30
	// NotifyAll is the A alias; like Redis it leaves out m and n.
	NotifyAll = NotifyGeneric | NotifyString | NotifyList | NotifySet | NotifyHash |
		NotifyZSet | NotifyExpired | NotifyEvicted | NotifyStream | NotifyModule
)

// ErrNotifyClasses is CONFIG SET's message for a bad notify-keyspace-events
// value (Redis's, after the "CONFIG SET failed … - " prefix).
var ErrNotifyClasses = resp.NewError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")

// ParseNotifyClasses is Redis's keyspaceEventsStringToFlags: any letter
// outside the classes fails; the empty string is no class (off).
func ParseNotifyClasses(s string) (NotifyClass, error) {
	var f NotifyClass
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			f |= NotifyAll
		case 'g':
			f |= NotifyGeneric
		case '$':
			f |= NotifyString
		case 'l':
			f |= NotifyList
		case 's':
			f |= NotifySet
		case 'h':
			f |= NotifyHash
		case 'z':
			f |= NotifyZSet
		case 'x':
			f |= NotifyExpired
		case 'e':
			f |= NotifyEvicted
		case 'K':
			f |= NotifyKeyspace
		case 'E':
			f |= NotifyKeyevent
		case 't':
			f |= NotifyStream
		case 'm':
			f |= NotifyKeyMiss
		case 'd':
			f |= NotifyModule
		case 'n':
			f |= NotifyNew
		default:
			return 0, ErrNotifyClasses
		}
	}
	return f, nil
}

// String is Redis's keyspaceEventsFlagsToString: "A" stands for NotifyAll
// (and then, as in Redis, n is not shown), then K, E and m.
func (f NotifyClass) String() string {
	var b strings.Builder
	if f&NotifyAll == NotifyAll {
		b.WriteByte('A')
	} else {
		for _, l := range []struct {
			c NotifyClass
			b byte
		}{
			{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'},
			{NotifyHash, 'h'}, {NotifyZSet, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'},
			{NotifyStream, 't'}, {NotifyModule, 'd'}, {NotifyNew, 'n'},
		} {
			if f&l.c != 0 {
				b.WriteByte(l.b)
			}
		}
	}
	if f&NotifyKeyspace != 0 {
		b.WriteByte('K')
	}
	if f&NotifyKeyevent != 0 {
		b.WriteByte('E')
	}
	if f&NotifyKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}

// Collected is the set of event classes worth collecting under the
// configuration f: none unless K or E says where to publish them.
func (f NotifyClass) Collected() NotifyClass {
	if f&(NotifyKeyspace|NotifyKeyevent) == 0 {
		return 0
	}
	return f &^ (NotifyKeyspace | NotifyKeyevent)
}

// Event is one keyspace event: what happened (Redis's event name, such as
// "set" or "lpush") to which key. Key is a copy owned by the event.
type Event struct {
	Class NotifyClass
	Name  string
	Key   []byte
}

// notify records event (of class) on key if the entry collects that class
// (Redis's notifyKeyspaceEvent, minus the publishing).
func (c *Ctx) notify(class NotifyClass, event string, key []byte) {
	if c.notifyOn&class == 0 {
		return
	}
	c.Events = append(c.Events, Event{Class: class, Name: event, Key: clone(key)})
}

// notifyWrite records, before key is written, what Redis's lookupKeyWrite
// and dbAdd report: "expired" for an expired leftover the write replaces
// and "new" when no live key was there.
func (c *Ctx) notifyWrite(key []byte) {
	if c.notifyOn&(NotifyNew|NotifyExpired|NotifyCount) == 0 {
		return
	}
	raw := c.Store.GetRaw(key)
	if raw != nil && raw.ExpiredAt(c.Now) {
		c.expiredKey(key, raw)
		raw = nil
	}
	if raw == nil {
		c.notify(NotifyNew, "new", key)
	}
}

// notifyGone records "expired" when key holds an expired leftover that is
// about to be deleted (Redis deletes it, with this event, on first access).
func (c *Ctx) notifyGone(key []byte) {
	if c.notifyOn&(NotifyExpired|NotifyCount) == 0 {
		return
	}
	if raw := c.Store.GetRaw(key); raw != nil && raw.ExpiredAt(c.Now) {
		c.expiredKey(key, raw)
	}
}

// expiredKey records the deletion of key's expired leftover: its
// "expired" event, and one more expired key when they are counted
// (Redis's deleteExpiredKeyAndPropagate counts stat_expiredkeys).
func (c *Ctx) expiredKey(key []byte, o *store.Object) {
	if c.counting() {
		c.Expired++
		c.freeing(&c.Freed.Expire, o)
	}
	c.notify(NotifyExpired, "expired", key)
}

// changedEvent is changed(key, o) that records the command's event first,
// then "del" if the change left the collection empty (the key is gone), as
// Redis's commands do.
func (c *Ctx) changedEvent(class NotifyClass, event string, key []byte, o *store.Object) {
	if c.notifyOn&^(NotifyCount|NotifyMonitor) != 0 {
		c.notify(class, event, key)
		if o.Coll.Len() == 0 {
			c.notify(NotifyGeneric, "del", key)
		}
	}
	c.changed(key, o)
}
