package fsm

import (
	"math"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// XREAD and XREADGROUP. Their Run is the non-blocking form: with nothing to
// serve they answer a null array, which a client's command with BLOCK
// turns into a waiter (blocking.go) that is run again when an XADD (or, for
// XREADGROUP, the loss of its group) signals one of its keys.

func init() {
	register(
		streamCmd("xread", -4, fR|resp.FlagBlocking|resp.FlagMovableKeys, 0, 0, 0,
			[]string{"read", "stream", "slow", "blocking"}, "5.0.0",
			"Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise.",
			"For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.", xreadCmd(false)).blocks(xreadBlock),
		streamCmd("xreadgroup", -7, fW|resp.FlagBlocking|resp.FlagMovableKeys, 0, 0, 0,
			[]string{"write", "stream", "slow", "blocking"}, "5.0.0",
			"Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise.",
			"For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.", xreadCmd(true)).blocks(xreadGroupBlock),
	)
	registry["xread"].Meta.Keys = xreadKeyIdx(false)
	registry["xreadgroup"].Meta.Keys = xreadKeyIdx(true)
}

// xreadStreams finds the STREAMS keyword as Redis's xreadGetKeys does: the
// keys are the first half of what follows it. It returns the index of the
// first key and the number of keys (0 if malformed). group: XREADGROUP's
// options.
func xreadStreams(args [][]byte, group bool) (first, n int) {
	for i := 1; i < len(args); i++ {
		switch {
		case eq(args[i], "block") || eq(args[i], "count"):
			i++
		case group && eq(args[i], "group"):
			i += 2
		case group && eq(args[i], "noack"):
		case eq(args[i], "streams"):
			rest := len(args) - i - 1
			if rest == 0 || rest%2 != 0 {
				return 0, 0
			}
			return i + 1, rest / 2
		default:
			return 0, 0
		}
	}
	return 0, 0
}

// xreadKeyIdx is the key positions of XREAD (group false) or XREADGROUP.
func xreadKeyIdx(group bool) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		first, n := xreadStreams(args, group)
		out := make([]int, n)
		for i := range out {
			out[i] = first + i
		}
		return out
	}
}

// xreadBlockArg returns the index of XREAD's (or XREADGROUP's) BLOCK
// value, 0 if none.
func xreadBlockArg(args [][]byte, group bool) int {
	at := 0
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eq(args[i], "block") && more > 0:
			i++
			at = i
		case eq(args[i], "count") && more > 0:
			i++
		case eq(args[i], "group") && group && more >= 2:
			i += 2
		case eq(args[i], "noack"):
		default: // STREAMS or an error
			return at
		}
	}
	return at
}

// xreadTimeout parses a BLOCK value in milliseconds as Redis's
// getTimeoutFromObjectOrReply with UNIT_MILLISECONDS.
func xreadTimeout(b []byte, now int64) (int64, error) {
	t, err := resp.ParseInt(b)
	if err != nil {
		return 0, resp.NewError("ERR timeout is not an integer or out of range")
	}
	if t < 0 {
		return 0, resp.NewError("ERR timeout is negative")
	}
	if t > 0 && t > math.MaxInt64-now {
		return 0, resp.NewError("ERR timeout is out of range")
	}
	return t, nil
}

var maxID = store.MaxStreamID // ">" while parsing

// xreadCmd is XREAD (group false) or XREADGROUP.
func xreadCmd(group bool) func(c *Ctx, args [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return xread(c, args, group) }
}

func xread(c *Ctx, args [][]byte, group bool) resp.Value {
	var count int64
	streamsArg, n := 0, 0
	var groupName, consumerName []byte
	noack := false
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case eq(o, "block") && more > 0:
			i++
			if _, err := xreadTimeout(args[i], c.Now); err != nil {
				return errReply(err)
			}
		case eq(o, "count") && more > 0:
			i++
			v, err := resp.ParseInt(args[i])
			if err != nil {
				return errReply(resp.ErrNotInteger)
			}
			count = max(v, 0)
		case eq(o, "streams") && more > 0:
			streamsArg = i + 1
			n = len(args) - streamsArg
			if n%2 != 0 {
				sym, name := '$', "xread"
				if group {
					sym, name = '>', "xreadgroup"
				}
				return errf("ERR Unbalanced '%s' list of streams: for each stream key an ID or '%c' must be specified.", name, sym)
			}
			n /= 2
			i = len(args)
		case eq(o, "group") && more >= 2:
			if !group {
				return errf("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
			}
			groupName, consumerName = args[i+1], args[i+2]
			i += 2
		case eq(o, "noack"):
			if !group {
				return errf("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
			}
			noack = true
		default:
			return errReply(resp.ErrSyntax)
		}
	}
	if streamsArg == 0 {
		return errReply(resp.ErrSyntax)
	}
	if group && groupName == nil {
		return errf("ERR Missing GROUP option for XREADGROUP")
	}
	keys := args[streamsArg : streamsArg+n]
	ids := make([]store.StreamID, n)
	for i := range n {
		key, arg := keys[i], args[streamsArg+n+i]
		s, err := c.readStream(key)
		if err != nil {
			return errReply(err)
		}
		if group && (s == nil || s.Group(groupName) == nil) {
			return errf("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option", key, groupName)
		}
		switch string(arg) {
		case "$":
			if group {
				return errf("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
			}
			if s != nil {
				ids[i] = s.LastID
			}
			continue
		case ">":
			if !group {
				return errf("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
			}
			ids[i] = maxID
			continue
		}
		id, err := parseStrictID(arg)
		if err != nil {
			return errReply(err)
		}
		ids[i] = id
	}
	var out []resp.Value
	for i := range n {
		key := keys[i]
		if !group {
			s, _ := c.readStream(key)
			if s == nil {
				continue
			}
			if last, ok := s.Last(); ok && ids[i].Less(last.ID) {
				start, _ := ids[i].Incr()
				out = append(out, resp.Bulk(key), rangeReply(s, start, store.MaxStreamID, count, false))
			}
			continue
		}
		if rs, _ := c.readStream(key); rs == nil || !xreadServes(rs, groupName, ids[i]) {
			continue // as Redis: no consumer is created for nothing to serve
		}
		o, s, _ := c.writeStream(key)
		g := s.MutGroup(groupName)
		cons := c.streamConsumer(key, g, consumerName)
		if ids[i] != maxID {
			out = append(out, resp.Bulk(key), xreadHistory(c, s, g, cons, ids[i], count))
		} else if last, ok := s.Last(); ok && g.LastID.Less(last.ID) {
			start, _ := g.LastID.Incr()
			out = append(out, resp.Bulk(key), xreadNew(c, s, g, cons, start, count, noack))
		}
		c.changed(key, o)
	}
	if len(out) == 0 {
		return resp.NullArray()
	}
	return keyedReply(out)
}

// xreadNew delivers the entries from start on to a consumer of a group
// (streamReplyWithRange with a group): the group's last-delivered ID and
// read counter move on, and each entry enters the PELs unless noack.
// xreadServes reports whether XREADGROUP serves stream s now: a history
// read always does, ">" only when the group has entries not yet delivered.
func xreadServes(s *store.Stream, group []byte, id store.StreamID) bool {
	if id != maxID {
		return true
	}
	last, ok := s.Last()
	return ok && s.Group(group).LastID.Less(last.ID)
}

func xreadNew(c *Ctx, s *store.Stream, g *store.StreamGroup, cons *store.StreamConsumer,
	start store.StreamID, count int64, noack bool) resp.Value {
	var es []store.StreamEntry
	s.Range(start, store.MaxStreamID, false, func(e store.StreamEntry) bool {
		es = append(es, e)
		return count == 0 || int64(len(es)) < count
	})
	out := make([]resp.Value, len(es))
	for i, e := range es {
		if g.LastID.Less(e.ID) {
			if g.EntriesRead != -1 && !rangeHasTombstones(s, e.ID, store.MaxStreamID) {
				g.EntriesRead++
			} else if s.EntriesAdded != 0 {
				g.EntriesRead = estimateDistance(s, e.ID)
			}
			g.LastID = e.ID
		}
		out[i] = entryReply(e)
		if !noack {
			g.SetPending(store.PendingEntry{ID: e.ID, Consumer: cons.Name, DeliveryTime: c.Now, DeliveryCount: 1})
			cons.ActiveTime = c.Now
		}
	}
	return resp.Array(out...)
}

// xreadHistory serves a consumer its own pending entries from start on;
// an entry deleted since has a null instead of its fields.
func xreadHistory(c *Ctx, s *store.Stream, g *store.StreamGroup, cons *store.StreamConsumer,
	start store.StreamID, count int64) resp.Value {
	var ids []store.StreamID
	cons.Pending(start, func(id store.StreamID) bool {
		if count != 0 && int64(len(ids)) >= count {
			return false
		}
		ids = append(ids, id)
		return true
	})
	out := make([]resp.Value, len(ids))
	for i, id := range ids {
		e, ok := s.Get(id)
		if !ok {
			out[i] = resp.Array(idReply(id), resp.NullArray())
			continue
		}
		out[i] = entryReply(e)
		if p, ok := g.PendingGet(id); ok {
			p.DeliveryTime = c.Now
			p.DeliveryCount++
			g.SetPending(p)
		}
	}
	return resp.Array(out...)
}

// rangeHasTombstones is streamRangeHasTombstones.
func rangeHasTombstones(s *store.Stream, start, end store.StreamID) bool {
	if s.Length() == 0 || s.MaxDeletedID.IsZero() {
		return false
	}
	if s.MaxDeletedID.Less(s.FirstID) {
		return false
	}
	return !s.MaxDeletedID.Less(start) && !end.Less(s.MaxDeletedID)
}

// estimateDistance is streamEstimateDistanceFromFirstEverEntry: the read
// counter of id, or -1 when it cannot be known.
func estimateDistance(s *store.Stream, id store.StreamID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.Length() == 0 && id.Cmp(s.LastID) < 1 {
		return s.EntriesAdded
	}
	switch id.Cmp(s.LastID) {
	case 0:
		return s.EntriesAdded
	case 1:
		return -1
	}
	if s.MaxDeletedID.IsZero() || s.MaxDeletedID.Less(s.FirstID) {
		switch id.Cmp(s.FirstID) {
		case -1:
			return s.EntriesAdded - int64(s.Length())
		case 0:
			return s.EntriesAdded - int64(s.Length()) + 1
		}
	}
	return -1
}
