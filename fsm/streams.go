package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Streams: XADD XLEN XRANGE XREVRANGE XDEL XTRIM XSETID here; XREAD and
// XREADGROUP in streams_read.go; XGROUP XACK XPENDING XCLAIM XAUTOCLAIM in
// streams_groups.go; XINFO in streams_info.go. Entry IDs made with "*" come
// from the entry's time (Ctx.Now), which never goes backwards, so every
// replica generates the same IDs; delivery, seen and active times also come
// from Ctx.Now, and idle times are computed from it on reads.

var (
	streamCmd          = commandsOf("stream")
	aclReadStreamFast  = []string{"read", "stream", "fast"}
	aclReadStreamSlow  = []string{"read", "stream", "slow"}
	aclWriteStreamFast = []string{"write", "stream", "fast"}
	aclWriteStreamSlow = []string{"write", "stream", "slow"}
)

func init() {
	register(
		streamCmd("xadd", -5, fW|fD|fF, 1, 1, 1, aclWriteStreamFast, "5.0.0",
			"Appends a new message to a stream. Creates the key if it doesn't exist.",
			"O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.", xaddCmd),
		streamCmd("xlen", 2, fR|fF, 1, 1, 1, aclReadStreamFast, "5.0.0",
			"Return the number of messages in a stream.", "O(1)", xlenCmd),
		streamCmd("xrange", -4, fR, 1, 1, 1, aclReadStreamSlow, "5.0.0",
			"Returns the messages from a stream within a range of IDs.",
			"O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", xrangeCmd(false)),
		streamCmd("xrevrange", -4, fR, 1, 1, 1, aclReadStreamSlow, "5.0.0",
			"Returns the messages from a stream within a range of IDs in reverse order.",
			"O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).", xrangeCmd(true)),
		streamCmd("xdel", -3, fW|fF, 1, 1, 1, aclWriteStreamFast, "5.0.0",
			"Returns the number of messages after removing them from a stream.",
			"O(1) for each single item to delete in the stream, regardless of the stream size.", xdelCmd),
		streamCmd("xtrim", -4, fW, 1, 1, 1, aclWriteStreamSlow, "5.0.0",
			"Deletes messages from the beginning of a stream.",
			"O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.", xtrimCmd),
		streamCmd("xsetid", -3, fW|fD|fF, 1, 1, 1, aclWriteStreamFast, "5.0.0",
			"An internal command for replicating stream values.", "O(1)", xsetidCmd),
	)
}

// readStream returns the stream at key, nil if absent, or WRONGTYPE.
func (c *Ctx) readStream(key []byte) (*store.Stream, error) {
	return readColl[*store.Stream](c, key, store.TypeStream)
}

// writeStream returns the stream at key for changing in place (call
// c.changed after), nil if absent, or WRONGTYPE.
func (c *Ctx) writeStream(key []byte) (*store.Object, *store.Stream, error) {
	return writeColl[*store.Stream](c, key, store.TypeStream)
}

// addTrimArgs are XADD's and XTRIM's parsed options.
type addTrimArgs struct {
	trim       store.TrimArgs
	strategy   bool // a trimming strategy was given
	id         store.StreamID
	idGiven    bool
	seqGiven   bool
	noMkStream bool
}

// parseAddTrim is streamParseAddOrTrimArgsOrReply: it returns the index of
// the ID argument for XADD.
func parseAddTrim(c *Ctx, args [][]byte, xadd bool) (addTrimArgs, int, error) {
	var a addTrimArgs
	limitGiven := false
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		opt := args[i]
		switch {
		case xadd && string(opt) == "*":
			return a, i, a.finish(c, xadd, limitGiven)
		case (eq(opt, "maxlen") || eq(opt, "minid")) && more > 0:
			if a.strategy {
				return a, 0, resp.NewError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
			}
			minid := eq(opt, "minid")
			a.trim.Approx = false
			if next := args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				a.trim.Approx = next[0] == '~'
				i++
			}
			if minid {
				id, err := parseStrictID(args[i+1])
				if err != nil {
					return a, 0, err
				}
				a.trim.ID = id
			} else {
				n, err := resp.ParseInt(args[i+1])
				if err != nil {
					return a, 0, resp.ErrNotInteger
				}
				if n < 0 {
					return a, 0, resp.NewError("ERR The MAXLEN argument must be >= 0.")
				}
				a.trim.MaxLen = n
			}
			i++
			a.strategy, a.trim.MinID = true, minid
		case eq(opt, "limit") && more > 0:
			n, err := resp.ParseInt(args[i+1])
			if err != nil {
				return a, 0, resp.ErrNotInteger
			}
			if n < 0 {
				return a, 0, resp.NewError("ERR The LIMIT argument must be >= 0.")
			}
			a.trim.Limit = n
			limitGiven = true
			i++
		case xadd && eq(opt, "nomkstream"):
			a.noMkStream = true
		case xadd:
			id, seqGiven, err := parseStreamID(opt, 0, true, true)
			if err != nil {
				return a, 0, err
			}
			a.id, a.idGiven, a.seqGiven = id, true, seqGiven
			return a, i, a.finish(c, xadd, limitGiven)
		default:
			return a, 0, resp.ErrSyntax
		}
	}
	return a, i, a.finish(c, xadd, limitGiven)
}

func (a *addTrimArgs) finish(c *Ctx, xadd, limitGiven bool) error {
	if a.trim.Limit != 0 && !a.strategy {
		return resp.NewError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
	}
	if !xadd && !a.strategy {
		return resp.NewError("ERR syntax error, XTRIM must be called with a trimming strategy")
	}
	switch {
	case limitGiven && !a.trim.Approx:
		return resp.NewError("ERR syntax error, LIMIT cannot be used without the special ~ option")
	case limitGiven:
	case a.trim.Approx:
		// Redis's cap on an approximate trim's work: 100 nodes of
		// stream-node-max-entries, within 10,000 (none set) and 1,000,000.
		a.trim.Limit = 100 * c.Store.Limits().StreamNodeEntries
		if a.trim.Limit <= 0 {
			a.trim.Limit = 10000
		}
		a.trim.Limit = min(a.trim.Limit, 1000000)
	default:
		a.trim.Limit = 0
	}
	return nil
}

func xaddCmd(c *Ctx, args [][]byte) resp.Value {
	a, idPos, err := parseAddTrim(c, args, true)
	if err != nil {
		return errReply(err)
	}
	fieldPos := idPos + 1
	if n := len(args) - fieldPos; n < 2 || n%2 == 1 {
		return errReply(resp.ErrWrongArgs("xadd"))
	}
	if a.idGiven && a.seqGiven && a.id.IsZero() {
		return errf("ERR The ID specified in XADD must be greater than 0-0")
	}
	o, s, err := c.writeStream(args[1])
	if err != nil {
		return errReply(err)
	}
	last := store.StreamID{}
	if s != nil {
		last = s.LastID
	} else if a.noMkStream {
		return resp.Null()
	}
	if last == store.MaxStreamID {
		return errf("ERR The stream has exhausted the last possible ID, unable to add more items")
	}
	var id store.StreamID
	switch {
	case a.idGiven && a.seqGiven:
		id = a.id
	case a.idGiven:
		id = store.StreamID{Ms: a.id.Ms}
		if last.Ms == a.id.Ms {
			if last.Seq == store.MaxStreamID.Seq {
				return errf("ERR The ID specified in XADD is equal or smaller than the target stream top item")
			}
			id.Seq = last.Seq + 1
		}
	default:
		if s != nil {
			id, _ = s.NextID(c.Now)
		} else {
			id, _ = store.NewStream().NextID(c.Now)
		}
	}
	if id.Cmp(last) <= 0 {
		return errf("ERR The ID specified in XADD is equal or smaller than the target stream top item")
	}
	if s == nil {
		s = store.NewStream()
		o = c.newColl(args[1], store.TypeStream, s)
	}
	s.Add(id, args[fieldPos:])
	var trimmed int64
	if a.strategy {
		trimmed = s.Trim(a.trim)
	}
	c.changedEvent(NotifyStream, "xadd", args[1], o)
	if trimmed > 0 {
		c.notify(NotifyStream, "xtrim", args[1])
	}
	c.signalReady(args[1])
	return idReply(id)
}

func xlenCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return zero
	}
	return resp.Int(int64(s.Length()))
}

// xrangeCmd is XRANGE key start end [COUNT n] and, rev, XREVRANGE key end
// start.
func xrangeCmd(rev bool) func(c *Ctx, args [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return xrange(c, args, rev) }
}

func xrange(c *Ctx, args [][]byte, rev bool) resp.Value {
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, err := parseInterval(startArg, 0, true)
	if err != nil {
		return errReply(err)
	}
	end, err := parseInterval(endArg, store.MaxStreamID.Seq, false)
	if err != nil {
		return errReply(err)
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if eq(args[j], "count") && j+1 < len(args) {
			n, err := resp.ParseInt(args[j+1])
			if err != nil {
				return errReply(resp.ErrNotInteger)
			}
			count = max(n, 0)
			j++
		} else {
			return errReply(resp.ErrSyntax)
		}
	}
	s, err := c.readStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return resp.Array()
	}
	if count == 0 {
		return resp.NullArray()
	}
	return rangeReply(s, start, end, max(count, 0), rev)
}

func xdelCmd(c *Ctx, args [][]byte) resp.Value {
	o, s, err := c.writeStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return zero
	}
	ids, err := parseStrictIDs(args[2:])
	if err != nil {
		return errReply(err)
	}
	n := s.Delete(ids)
	if n > 0 {
		c.changedEvent(NotifyStream, "xdel", args[1], o)
	}
	return resp.Int(int64(n))
}

func xtrimCmd(c *Ctx, args [][]byte) resp.Value {
	a, _, err := parseAddTrim(c, args, false)
	if err != nil {
		return errReply(err)
	}
	o, s, err := c.writeStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return zero
	}
	n := s.Trim(a.trim)
	if n > 0 {
		c.changedEvent(NotifyStream, "xtrim", args[1], o)
	}
	return resp.Int(n)
}

func xsetidCmd(c *Ctx, args [][]byte) resp.Value {
	id, err := parseStrictID(args[2])
	if err != nil {
		return errReply(err)
	}
	var maxDel store.StreamID
	entriesAdded := int64(-1)
	for i := 3; i < len(args); i += 2 {
		more := len(args) - 1 - i
		switch {
		case eq(args[i], "entriesadded") && more > 0:
			n, err := resp.ParseInt(args[i+1])
			if err != nil {
				return errReply(resp.ErrNotInteger)
			}
			if n < 0 {
				return errf("ERR entries_added must be positive")
			}
			entriesAdded = n
		case eq(args[i], "maxdeletedid") && more > 0:
			md, err := parseStrictID(args[i+1])
			if err != nil {
				return errReply(err)
			}
			if id.Less(md) {
				return errf("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
			}
			maxDel = md
		default:
			return errReply(resp.ErrSyntax)
		}
	}
	o, s, err := c.writeStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil {
		return errReply(resp.ErrNoSuchKey)
	}
	if id.Less(s.MaxDeletedID) {
		return errf("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
	}
	if last, ok := s.Last(); ok {
		if id.Less(last.ID) {
			return errf("ERR The ID specified in XSETID is smaller than the target stream top item")
		}
		if entriesAdded != -1 && int64(s.Length()) > entriesAdded {
			return errf("ERR The entries_added specified in XSETID is smaller than the target stream length")
		}
	}
	s.LastID = id
	if entriesAdded != -1 {
		s.EntriesAdded = entriesAdded
	}
	if !maxDel.IsZero() {
		s.MaxDeletedID = maxDel
	}
	c.changedEvent(NotifyStream, "xsetid", args[1], o)
	return resp.OK()
}
