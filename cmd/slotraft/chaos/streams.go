package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
)

// streams: XADD (auto IDs) of unique field values to a few streams of
// every group; one consumer group per stream, created by each process
// before it first reads the stream (XGROUP CREATE … 0 MKSTREAM; BUSYGROUP
// means another did); consumers, one per process, read new entries with
// XREADGROUP … > (half of them with BLOCK) and XACK what an acknowledged
// read delivered, retrying the XACK until it is acknowledged (XACK is
// idempotent). XCLAIM and XAUTOCLAIM are not used, so an entry is
// delivered with ">" at most once. After healing, XRANGE, XPENDING (the
// extended form) and XINFO GROUPS of each stream are checked
// (checkStream):
//   - lost entry / wrong id: an acknowledged XADD's value is not in the
//     stream, or under another ID than the one XADD returned;
//   - phantom entry / duplicate entry: the stream holds a value no XADD
//     sent, or a value twice;
//   - id out of order: an acknowledged XADD that began after another
//     returned got a smaller ID;
//   - delivered twice / phantom delivery: an acknowledged XREADGROUP
//     delivered an ID that another delivered too, or an ID or value that is
//     not the stream's;
//   - pending after ack: an ID acknowledged by an acknowledged XACK is in
//     the PEL; ack count: the first acknowledged XACK of delivered IDs that
//     no earlier XACK touched did not count them all;
//   - lost pending / pending owner: an ID an acknowledged XREADGROUP
//     delivered and no XACK (acknowledged or unknown) acknowledged is not
//     in the PEL, or pending with another consumer; phantom pending: a
//     pending ID that is not in the stream, or that no read (acknowledged,
//     or unknown) can have delivered;
//   - group lag: last-delivered-id is below an ID an acknowledged read
//     delivered; an entry at or below it that no acknowledged read
//     delivered is not pending (only an unknown read can have delivered
//     it, and its entries are never XACKed); the pending count differs from
//     the PEL; entries-read and lag (when the server knows the lag) do not
//     add up to the stream's length, or entries-read is not the number of
//     entries up to last-delivered-id (no entry is ever deleted);
//   - group lost: the group is gone at the end, or a read got NOGROUP,
//     after its creation was acknowledged.
//
// What it cannot see: which consumer got the entries of an unknown read,
// the order in which one consumer's reads deliver, idle times and
// delivery counts.

// streamsPerGroup is how many streams each group holds.
const streamsPerGroup = 2

type streams struct{ keys []string }

// consumerState is what a process knows of each stream: whether the group
// exists, and the IDs it has yet to XACK.
type consumerState struct {
	ready map[string]bool
	toAck map[string][]string
}

func (w *streams) Name() string { return "streams" }

func (w *streams) Setup(k *keyPicker) { w.keys = k.spread("x", streamsPerGroup) }

func consumerOf(p *process) *consumerState {
	if p.state == nil {
		p.state = &consumerState{ready: map[string]bool{}, toAck: map[string][]string{}}
	}
	return p.state.(*consumerState)
}

// Next: the group first; then XACK of what is delivered; then half XADD,
// half XREADGROUP (half of those blocking).
func (w *streams) Next(rng *rand.Rand, p *process) Op {
	key, cs := w.keys[rng.IntN(len(w.keys))], consumerOf(p)
	switch {
	case !cs.ready[key]:
		return Op{Kind: "XGROUP CREATE", Key: key}
	case len(cs.toAck[key]) > 0:
		return Op{Kind: "XACK", Key: key, IDs: slices.Clone(cs.toAck[key])}
	case rng.IntN(2) == 0:
		return Op{Kind: "XADD", Key: key, Value: p.unique()}
	}
	op := Op{Kind: "XREADGROUP", Key: key, Consumer: "c" + strconv.Itoa(p.id)}
	if rng.IntN(2) == 0 {
		op.Block = p.block.Milliseconds()
	}
	return op
}

// observe keeps the process's state: a group that exists, entries to ack.
func (w *streams) observe(p *process, op *Op) {
	cs := consumerOf(p)
	switch {
	case op.Kind == "XREADGROUP" && op.ErrKind == "error reply NOGROUP":
		cs.ready[op.Key] = false // the checker says whether it may be gone
	case op.Outcome != OK:
	case op.Kind == "XGROUP CREATE":
		cs.ready[op.Key] = true
	case op.Kind == "XREADGROUP":
		for _, e := range op.Entries {
			cs.toAck[op.Key] = append(cs.toAck[op.Key], e.ID)
		}
	case op.Kind == "XACK":
		cs.toAck[op.Key] = slices.DeleteFunc(cs.toAck[op.Key], func(id string) bool { return slices.Contains(op.IDs, id) })
	}
}

func (w *streams) Finals() []Op {
	var ops []Op
	for _, k := range w.keys {
		ops = append(ops, Op{Kind: "XRANGE", Key: k}, Op{Kind: "XPENDING", Key: k}, Op{Kind: "XINFO GROUPS", Key: k})
	}
	return ops
}

func (w *streams) Check(_ context.Context, ops []Op, _ []Event) Verdict {
	v := Verdict{Workload: w.Name(), Result: "ok"}
	byKey := streamsOf(ops)
	for _, key := range w.keys {
		sh := streamOps(byKey[key])
		if len(sh.finals) != 3 { // the rules that need no final read still hold
			v.Notes = append(v.Notes, key+": no final reads")
			v.Anomalies = append(v.Anomalies, checkStreamPrefix(key, sh)...)
			continue
		}
		v.Anomalies = append(v.Anomalies, checkStream(key, sh)...)
	}
	return v.settle("some streams were not read at the end")
}

// CheckPrefix applies the rules that need no final read (checkStreamPrefix).
func (w *streams) CheckPrefix(_ context.Context, ops []Op) Verdict {
	v := Verdict{Workload: w.Name(), Result: "ok"}
	byKey := streamsOf(ops)
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		v.Anomalies = append(v.Anomalies, checkStreamPrefix(key, streamOps(byKey[key]))...)
	}
	return v.settle("")
}

func (w *streams) LiveRules() (live, pending string) {
	return "an entry delivered twice, XADD ids out of order, XACK counts, NOGROUP after the group's creation",
		"lost, phantom and duplicate entries, wrong ids, phantom deliveries, the PEL and the group's counters (the final reads)"
}

// streamsOf sorts the streams workload's operations that did not fail by key.
func streamsOf(ops []Op) map[string][]Op {
	return groupOps(ops, "streams", func(op Op) string { return op.Key })
}

// streamHistory is one stream's operations, sorted out.
type streamHistory struct {
	adds      map[string]Op // value → its XADD (acknowledged or unknown)
	acked     []Op          // acknowledged XADDs
	reads     []Op          // acknowledged XREADGROUPs that delivered
	unknownRd []Op          // XREADGROUPs whose outcome is unknown
	acks      []Op          // XACKs, acknowledged or unknown
	created   []Op          // acknowledged XGROUP CREATEs (BUSYGROUP included)
	nogroup   []Op          // reads refused with NOGROUP
	finals    map[string]Op // kind → final read
}

func streamOps(ops []Op) streamHistory {
	h := streamHistory{adds: map[string]Op{}, finals: map[string]Op{}}
	for _, op := range ops {
		switch {
		case op.Final:
			h.finals[op.Kind] = op
		case op.ErrKind == "error reply NOGROUP":
			h.nogroup = append(h.nogroup, op)
		case op.Kind == "XADD":
			h.adds[op.Value] = op
			if op.Outcome == OK {
				h.acked = append(h.acked, op)
			}
		case op.Kind == "XREADGROUP" && op.Outcome == Unknown:
			h.unknownRd = append(h.unknownRd, op)
		case op.Kind == "XREADGROUP" && len(op.Entries) > 0:
			h.reads = append(h.reads, op)
		case op.Kind == "XACK":
			h.acks = append(h.acks, op)
		case op.Kind == "XGROUP CREATE" && op.Outcome == OK:
			h.created = append(h.created, op)
		}
	}
	return h
}

// checkStream applies every rule of the workload to one stream.
func checkStream(key string, h streamHistory) []Anomaly {
	c := &streamCheck{key: key, h: h, byID: map[string]Entry{}}
	for _, e := range h.finals["XRANGE"].Entries {
		c.byID[e.ID] = e
	}
	c.entries()
	c.order()
	c.deliveredTwice()
	c.phantomDeliveries()
	c.ackCount()
	c.pending()
	c.group()
	return c.out
}

// checkStreamPrefix applies the rules that hold on a prefix of the
// history: no final read, and nothing a later operation could explain.
func checkStreamPrefix(key string, h streamHistory) []Anomaly {
	c := &streamCheck{key: key, h: h, byID: map[string]Entry{}}
	c.order()
	c.deliveredTwice()
	c.ackCount()
	c.nogroup()
	return c.out
}

// streamCheck gathers one stream's anomalies.
type streamCheck struct {
	key  string
	h    streamHistory
	byID map[string]Entry // the final XRANGE
	out  []Anomaly
}

func (c *streamCheck) add(kind string, ops []Op, format string, args ...any) {
	for i := range ops { // final reads name many entries
		if ops[i].Final && len(ops[i].Entries) > maxListed {
			ops[i].Result, ops[i].Entries = fmt.Sprintf("%d entries", len(ops[i].Entries)), nil
		}
	}
	c.out = append(c.out, Anomaly{Workload: "streams", Kind: kind, Key: c.key, Ops: firstOps(ops),
		Text: fmt.Sprintf("stream %s: ", c.key) + fmt.Sprintf(format, args...)})
}
