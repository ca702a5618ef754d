package chaos

import (
	"slices"
	"strconv"
)

// The rules of checkStream, one method per group of anomalies.

// entries: every acknowledged XADD is in the stream under its ID; every
// entry's value was sent once.
func (c *streamCheck) entries() {
	final := c.h.finals["XRANGE"]
	where := map[string]Entry{}
	for _, e := range final.Entries {
		add, sent := c.h.adds[e.Value]
		_, twice := where[e.Value]
		switch {
		case !sent:
			c.add("phantom entry", []Op{final}, "entry %s holds %q, which no XADD sent", e.ID, e.Value)
		case twice:
			c.add("duplicate entry", []Op{add, final}, "value %q is in the stream twice, as %s and %s", e.Value, where[e.Value].ID, e.ID)
		}
		where[e.Value] = e
	}
	for _, a := range c.h.acked {
		e, ok := where[a.Value]
		switch {
		case !ok:
			c.add("lost entry", []Op{a, final}, "the acknowledged XADD of %q (ID %s) is not in the stream at the end", a.Value, a.Result)
		case e.ID != a.Result:
			c.add("wrong id", []Op{a, final}, "XADD of %q returned ID %s, but the stream holds it as %s", a.Value, a.Result, e.ID)
		}
	}
}

// order: an acknowledged XADD that began after another returned has the
// greater ID. The XADDs sorted by return time give, for each call time,
// the greatest ID returned before it.
func (c *streamCheck) order() {
	byReturn := slices.Clone(c.h.acked)
	slices.SortFunc(byReturn, func(a, b Op) int { return compareInt(a.Return, b.Return) })
	byCall := slices.Clone(c.h.acked)
	slices.SortFunc(byCall, func(a, b Op) int { return compareInt(a.Call, b.Call) })
	var top Op
	var topID streamID
	i := 0
	for _, b := range byCall {
		for ; i < len(byReturn) && byReturn[i].Return < b.Call; i++ {
			if id, ok := parseID(byReturn[i].Result); ok && (top.Kind == "" || topID.less(id)) {
				top, topID = byReturn[i], id
			}
		}
		id, ok := parseID(b.Result)
		if top.Kind != "" && (!ok || !topID.less(id)) {
			c.add("id out of order", []Op{top, b}, "XADD of %q got ID %s, not above the ID %s of XADD of %q that returned before it began", b.Value, b.Result, top.Result, top.Value)
		}
	}
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// deliveredTwice: each ID is delivered once.
func (c *streamCheck) deliveredTwice() {
	first := map[string]Op{}
	for _, r := range c.h.reads {
		for _, e := range r.Entries {
			if f, ok := first[e.ID]; ok {
				c.add("delivered twice", []Op{f, r}, "entry %s was delivered with \">\" to %s and again to %s", e.ID, f.Consumer, r.Consumer)
			}
			first[e.ID] = r
		}
	}
}

// phantomDeliveries: each delivered entry is the stream's.
func (c *streamCheck) phantomDeliveries() {
	for _, r := range c.h.reads {
		for _, e := range r.Entries {
			if s, ok := c.byID[e.ID]; !ok || s.Value != e.Value {
				c.add("phantom delivery", []Op{r, c.h.finals["XRANGE"]}, "%s was delivered entry %s = %q, which the stream does not hold at the end", r.Consumer, e.ID, e.Value)
			}
		}
	}
}

// ackCount: the first acknowledged XACK of delivered IDs that no XACK
// begun before it touched counts them all.
func (c *streamCheck) ackCount() {
	touched := map[string]bool{}
	for _, a := range c.h.acks {
		fresh := !slices.ContainsFunc(a.IDs, func(id string) bool { return touched[id] })
		for _, id := range a.IDs {
			touched[id] = true
		}
		if a.Outcome == OK && fresh && a.Result != strconv.Itoa(len(a.IDs)) {
			c.add("ack count", []Op{a}, "the first XACK of %d delivered entries acknowledged %s", len(a.IDs), a.Result)
		}
	}
}

// pending: the PEL holds exactly what was delivered and not acknowledged.
func (c *streamCheck) pending() {
	pel := c.h.finals["XPENDING"]
	owner := map[string]string{}
	for _, e := range pel.Entries {
		owner[e.ID] = e.Consumer
	}
	acked, touched := map[string]Op{}, map[string]bool{}
	for _, a := range c.h.acks {
		for _, id := range a.IDs {
			touched[id] = true
			if a.Outcome == OK {
				acked[id] = a
			}
		}
	}
	for id, a := range acked {
		if _, ok := owner[id]; ok {
			c.add("pending after ack", []Op{a, pel}, "entry %s is pending at the end, though an acknowledged XACK acknowledged it", id)
		}
	}
	delivered := map[string]bool{}
	for _, r := range c.h.reads {
		for _, e := range r.Entries {
			delivered[e.ID] = true
			cons, ok := owner[e.ID]
			switch {
			case touched[e.ID]:
			case !ok:
				c.add("lost pending", []Op{r, pel}, "entry %s, delivered to %s and never acknowledged, is not pending at the end", e.ID, r.Consumer)
			case cons != r.Consumer:
				c.add("pending owner", []Op{r, pel}, "entry %s, delivered to %s, is pending with %s", e.ID, r.Consumer, cons)
			}
		}
	}
	for _, e := range pel.Entries {
		if _, ok := c.byID[e.ID]; !ok || (!delivered[e.ID] && len(c.h.unknownRd) == 0) {
			c.add("phantom pending", []Op{pel}, "entry %s is pending with %s, but it is not in the stream or no read can have delivered it", e.ID, e.Consumer)
		}
	}
}

// group: the group exists and its counters agree with what was delivered.
func (c *streamCheck) group() {
	info, pel := c.h.finals["XINFO GROUPS"], c.h.finals["XPENDING"]
	if len(c.h.created) > 0 && (info.Nil || info.Group == nil) {
		c.add("group lost", []Op{c.h.created[0], info}, "group %s is gone at the end, though its creation was acknowledged", streamGroup)
		return
	}
	c.nogroup()
	if info.Group == nil {
		return
	}
	g := info.Group
	last, _ := parseID(g.LastDeliveredID)
	delivered := map[string]bool{}
	for _, r := range c.h.reads {
		for _, e := range r.Entries {
			delivered[e.ID] = true
			if id, ok := parseID(e.ID); ok && last.less(id) {
				c.add("group lag", []Op{r, info}, "last-delivered-id %s is below %s, delivered to %s", g.LastDeliveredID, e.ID, r.Consumer)
			}
		}
	}
	c.counters(g, info, pel, last, delivered)
}

// nogroup: no read gets NOGROUP after the group's creation was
// acknowledged.
func (c *streamCheck) nogroup() {
	for _, n := range c.h.nogroup {
		if i := slices.IndexFunc(c.h.created, func(o Op) bool { return o.Return < n.Call }); i >= 0 {
			c.add("group lost", []Op{c.h.created[i], n}, "a read got NOGROUP after the group's creation was acknowledged")
			return
		}
	}
}

// counters: skipped entries, the pending count, entries-read and lag.
func (c *streamCheck) counters(g *Group, info, pel Op, last streamID, delivered map[string]bool) {
	pending := map[string]bool{}
	for _, e := range pel.Entries {
		pending[e.ID] = true
	}
	upTo := 0
	for _, e := range c.h.finals["XRANGE"].Entries {
		id, _ := parseID(e.ID)
		if last.less(id) {
			continue
		}
		upTo++
		if !delivered[e.ID] && !pending[e.ID] {
			c.add("group lag", []Op{info, pel}, "entry %s is at or below last-delivered-id %s, yet no acknowledged read delivered it and it is not pending", e.ID, g.LastDeliveredID)
		}
	}
	n := int64(len(c.h.finals["XRANGE"].Entries))
	switch {
	case g.Pending != int64(len(pel.Entries)):
		c.add("group lag", []Op{info, pel}, "XINFO GROUPS counts %d pending, XPENDING lists %d", g.Pending, len(pel.Entries))
	case g.Lag >= 0 && (g.EntriesRead+g.Lag != n || g.EntriesRead != int64(upTo)):
		c.add("group lag", []Op{info}, "entries-read %d and lag %d: the stream holds %d entries, %d of them up to last-delivered-id %s", g.EntriesRead, g.Lag, n, upTo, g.LastDeliveredID)
	}
}
