package chaos

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what a client knows of an operation once it returned.
type Outcome string

const (
	// OK: the operation happened, and Result is what it returned.
	OK Outcome = "ok"
	// Fail: the operation certainly did not happen (refused before it
	// reached a log: MOVED, CLUSTERDOWN, TRYAGAIN, a dial that failed), or
	// a read that failed (it observed nothing).
	Fail Outcome = "fail"
	// Unknown: a write that may or may not have happened (a timeout, a
	// connection lost after sending, "write outcome unknown"): Jepsen's
	// :info. The checkers let it take effect at any time after its call,
	// or never.
	Unknown Outcome = "unknown"
)

// Op is one operation of the history. Times are nanoseconds on the
// monotonic clock since the run began.
type Op struct {
	Workload string   `json:"workload"`
	Process  int      `json:"process"` // the client goroutine that ran it
	Client   int      `json:"client"`  // porcupine's client id: a process takes a new one after an Unknown
	Kind     string   `json:"kind"`    // a key of opKinds: GET, SET, CAS, INCRBY, SADD, LPUSH, XADD, …
	Key      string   `json:"key"`
	To       string   `json:"to,omitempty"`       // LMOVE's destination
	Value    string   `json:"value,omitempty"`    // SET's value, CAS's new value, SADD's, LPUSH's element, XADD's field value
	Old      string   `json:"old,omitempty"`      // CAS's expected value
	N        int64    `json:"n,omitempty"`        // INCRBY's increment
	Block    int64    `json:"block_ms,omitempty"` // a blocking command's timeout
	Consumer string   `json:"consumer,omitempty"` // XREADGROUP's consumer
	IDs      []string `json:"ids,omitempty"`      // XACK's entry IDs
	Call     int64    `json:"call"`
	Return   int64    `json:"return"`
	Outcome  Outcome  `json:"outcome"`
	Result   string   `json:"result,omitempty"`  // GET's value, CAS "1"/"0", INCRBY's new value, SADD "1"/"0", a popped element, XADD's ID, XACK's count
	Nil      bool     `json:"nil,omitempty"`     // GET found no key, a pop found nothing, a final stream read found no stream or group
	Members  []string `json:"members,omitempty"` // SMEMBERS, LRANGE
	Entries  []Entry  `json:"entries,omitempty"` // XREADGROUP, XRANGE, XPENDING
	Group    *Group   `json:"group,omitempty"`   // XINFO GROUPS: the workload's group
	ErrKind  string   `json:"err_kind,omitempty"`
	Err      string   `json:"err,omitempty"`
	Final    bool     `json:"final,omitempty"` // a read after every fault was healed
	Attempts int      `json:"attempts,omitempty"`

	flight int64 // its entry among the history's writes in flight, 0 if none
}

// Entry is a stream entry: its ID, the workload's one field's value, and
// for XPENDING the consumer it is pending with.
type Entry struct {
	ID       string `json:"id"`
	Value    string `json:"value,omitempty"`
	Consumer string `json:"consumer,omitempty"`
}

// Group is what XINFO GROUPS says of a consumer group. Lag is -1 when the
// server does not know it (nil).
type Group struct {
	Name            string `json:"name"`
	Pending         int64  `json:"pending"`
	LastDeliveredID string `json:"last_delivered_id"`
	EntriesRead     int64  `json:"entries_read"`
	Lag             int64  `json:"lag"`
}

// write reports whether op changes state when it happens.
func (op *Op) write() bool {
	return kindOf(op).write
}

// Event is a fault's injection and healing, or something the run saw
// (a node that exited by itself).
type Event struct {
	Kind    string   `json:"kind"`
	Desc    string   `json:"desc"`
	Targets []string `json:"targets,omitempty"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"` // 0 while active
	Err     string   `json:"err,omitempty"`
}

// history collects operations and events from concurrent goroutines.
type history struct {
	start   time.Time
	clients atomic.Int64

	mu     sync.Mutex
	ops    []Op
	events []Event
	errs   map[errAt]int // every failed attempt, retried or not
	// inflight holds the writes sent and not yet recorded (by flight id):
	// a live check must count them as of unknown outcome, or a read that
	// saw one of them would look like a read of a value never written.
	inflight map[int64]Op
	flights  int64
}

// errAt is a second of the run and an error kind.
type errAt struct {
	sec  int64
	kind string
}

func newHistory() *history {
	return &history{start: time.Now(), errs: map[errAt]int{}, inflight: map[int64]Op{}}
}

// noteErr counts a failed attempt of kind, now.
func (h *history) noteErr(kind string) {
	t := h.now() / int64(time.Second)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs[errAt{sec: t, kind: kind}]++
}

// errCounts copies the failed attempts' counts.
func (h *history) errCounts() map[errAt]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.errs)
}

// now is the time since the history began, monotonic.
func (h *history) now() int64 { return int64(time.Since(h.start)) }

// newClient hands out a fresh porcupine client id.
func (h *history) newClient() int { return int(h.clients.Add(1) - 1) }

// call notes that op, whose Call is set, is on its way. Only writes of
// the workloads are noted: a read in flight constrains nothing, and the
// final reads are not checked live.
func (h *history) call(op *Op) {
	if op.Final || !op.write() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.flights++
	op.flight = h.flights
	h.inflight[op.flight] = *op
}

// add records a finished operation; a write leaves the writes in flight
// at the same instant, so a live check sees it in one place or the other.
func (h *history) add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.inflight, op.flight)
	op.flight = 0
	h.ops = append(h.ops, op)
}

// since returns, at one instant, the operations recorded from index from
// on (in the order recorded), the writes in flight, and the time.
func (h *history) since(from int) (ops, inflight []Op, now int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops = slices.Clone(h.ops[from:])
	inflight = slices.Collect(maps.Values(h.inflight))
	return ops, inflight, h.now()
}

// eventsNow copies the events.
func (h *history) eventsNow() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

// begin records an event starting now and returns its index for end.
func (h *history) begin(e Event) int { return h.beginAt(e, h.now()) }

// beginAt records an event that started at t.
func (h *history) beginAt(e Event, t int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.Start = t
	h.events = append(h.events, e)
	return len(h.events) - 1
}

// end closes event i, with err if healing it failed.
func (h *history) end(i int, desc string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := &h.events[i]
	e.End = h.now()
	if desc != "" {
		e.Desc = desc
	}
	if err != nil {
		e.Err = err.Error()
	}
}

// snapshot returns copies of the operations (sorted by call time) and events.
func (h *history) snapshot() ([]Op, []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops := slices.Clone(h.ops)
	slices.SortStableFunc(ops, func(a, b Op) int {
		switch {
		case a.Call < b.Call:
			return -1
		case a.Call > b.Call:
			return 1
		}
		return 0
	})
	return ops, slices.Clone(h.events)
}
