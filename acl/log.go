package acl

import (
	"slices"

	"github.com/slotraft/slotraft/resp"
)

// Context is where a denied command ran, as ACL LOG shows it.
type Context int

// The contexts, numbered as Redis numbers them.
const (
	ContextToplevel Context = 0
	ContextLua      Context = 1
	ContextMulti    Context = 2
	ContextModule   Context = 3
)

func (c Context) String() string {
	switch c {
	case ContextToplevel:
		return "toplevel"
	case ContextMulti:
		return "multi"
	case ContextLua:
		return "lua"
	case ContextModule:
		return "module"
	}
	return "unknown"
}

// LogEntry is one ACL LOG entry. Times are Unix milliseconds.
type LogEntry struct {
	Count      int64
	Reason     Reason
	Context    Context
	Object     string // command full name, key, channel, or "AUTH" for auth
	Username   string
	ClientInfo string // CLIENT LIST's line of the client
	EntryID    int64
	Created    int64 // timestamp-created
	Updated    int64 // timestamp-last-updated
}

// logGroupingMaxDelta is ACL_LOG_GROUPING_MAX_TIME_DELTA: entries 60
// seconds apart are not grouped.
const logGroupingMaxDelta = 60000

// logGroupingScan is how many recent entries Redis looks at for a match.
const logGroupingScan = 10

// DefaultLogMaxLen is acllog-max-len's default.
const DefaultLogMaxLen = 128

// Log is the ACL LOG: newest first, similar entries grouped, at most
// MaxLen entries. It holds no clock: Add and Reply take the time.
type Log struct {
	MaxLen  int
	entries []*LogEntry
	nextID  int64
}

// NewLog is an empty log of at most maxLen entries.
func NewLog(maxLen int) *Log { return &Log{MaxLen: maxLen} }

// Add is addACLLogEntry at time now (ms): an entry like one of the ten
// newest (same reason, context, object and username, within 60 s of its
// last update) bumps that one's count, client info and update time and
// moves it first; otherwise the entry is added first with the next id and
// the oldest entries beyond MaxLen are dropped.
func (l *Log) Add(reason Reason, ctx Context, object, username, clientInfo string, now int64) {
	for i, e := range l.entries[:min(len(l.entries), logGroupingScan)] {
		if e.Reason == reason && e.Context == ctx && e.Object == object &&
			e.Username == username && abs(e.Updated-now) <= logGroupingMaxDelta {
			e.Count++
			e.ClientInfo, e.Updated = clientInfo, now
			l.entries = slices.Delete(l.entries, i, i+1)
			l.entries = slices.Insert(l.entries, 0, e)
			return
		}
	}
	e := &LogEntry{Count: 1, Reason: reason, Context: ctx, Object: object, Username: username,
		ClientInfo: clientInfo, EntryID: l.nextID, Created: now, Updated: now}
	l.nextID++
	l.entries = slices.Insert(l.entries, 0, e)
	l.Trim()
}

// Trim drops the oldest entries beyond MaxLen (after acllog-max-len
// shrinks, too).
func (l *Log) Trim() {
	if len(l.entries) > max(l.MaxLen, 0) {
		l.entries = l.entries[:max(l.MaxLen, 0)]
	}
}

// Reset is ACL LOG RESET (entry ids keep counting, as in Redis).
func (l *Log) Reset() { l.entries = nil }

// Len is the number of entries.
func (l *Log) Len() int { return len(l.entries) }

// Entries are copies of the count newest entries (all when count is
// larger; none when it is negative).
func (l *Log) Entries(count int) []LogEntry {
	count = min(max(count, 0), len(l.entries))
	out := make([]LogEntry, count)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reply is ACL LOG [count]'s reply at time now (ms): count entries (10
// when the command has no argument), each a map of ten fields as Redis
// 7.2 gives them.
func (l *Log) Reply(count int, now int64) resp.Value {
	entries := l.Entries(count)
	out := make([]resp.Value, len(entries))
	for i, e := range entries {
		out[i] = resp.Map(
			resp.BulkString("count"), resp.Int(e.Count),
			resp.BulkString("reason"), resp.BulkString(e.Reason.String()),
			resp.BulkString("context"), resp.BulkString(e.Context.String()),
			resp.BulkString("object"), resp.BulkString(e.Object),
			resp.BulkString("username"), resp.BulkString(e.Username),
			resp.BulkString("age-seconds"), resp.Double(float64(now-e.Updated)/1000),
			resp.BulkString("client-info"), resp.BulkString(e.ClientInfo),
			resp.BulkString("entry-id"), resp.Int(e.EntryID),
			resp.BulkString("timestamp-created"), resp.Int(e.Created),
			resp.BulkString("timestamp-last-updated"), resp.Int(e.Updated),
		)
	}
	return resp.Array(out...)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
