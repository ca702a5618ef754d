package fsm

import (
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// Consumer groups: XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|
// HELP, XACK, XPENDING, XCLAIM, XAUTOCLAIM.

func streamSub(container, name string, arity int, flags resp.Flag, first int,
	acl []string, since, summary, complexity string, run func(*Ctx, [][]byte) resp.Value) *Command {
	return &Command{Meta: &resp.Command{
		Name: container + "|" + name, Arity: arity, Flags: flags, FirstKey: first, LastKey: first, Step: min(first, 1),
		ACL: acl, Group: "stream", Since: since, Summary: summary, Complexity: complexity,
	}, Run: run}
}

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Print this help.",
}

func helpReply(lines []string) resp.Value {
	out := make([]resp.Value, len(lines))
	for i, l := range lines {
		out[i] = resp.Status(l)
	}
	return resp.Array(out...)
}

func init() {
	ws := []string{"write", "stream", "slow"}
	// The container is flagged write (Redis reports no flags on it) so that
	// routing proposes it to the log.
	register(container(&resp.Command{
		Name: "xgroup", Arity: -2, Flags: fW, ACL: []string{"slow"}, Group: "stream", Since: "5.0.0",
		Summary: "A container for consumer groups commands.", Complexity: "Depends on subcommand.",
	},
		streamSub("xgroup", "create", -5, fW|fD, 2, ws, "5.0.0",
			"Creates a consumer group.", "O(1)", xgroupCmd(xgCreate)),
		streamSub("xgroup", "createconsumer", 5, fW|fD, 2, ws, "6.2.0",
			"Creates a consumer in a consumer group.", "O(1)", xgroupCmd(xgCreateConsumer)),
		streamSub("xgroup", "delconsumer", 5, fW, 2, ws, "5.0.0",
			"Deletes a consumer from a consumer group.", "O(1)", xgroupCmd(xgDelConsumer)),
		streamSub("xgroup", "destroy", 4, fW, 2, ws, "5.0.0",
			"Destroys a consumer group.", "O(N) where N is the number of entries in the group's pending entries list (PEL).", xgroupCmd(xgDestroy)),
		streamSub("xgroup", "help", 2, resp.FlagLoading|resp.FlagStale, 0, []string{"stream", "slow"}, "5.0.0",
			"Returns helpful text about the different subcommands.", "O(1)", func(*Ctx, [][]byte) resp.Value { return helpReply(xgroupHelp) }),
		streamSub("xgroup", "setid", -5, fW, 2, ws, "5.0.0",
			"Sets the last-delivered ID of a consumer group.", "O(1)", xgroupCmd(xgSetID)),
	))

	register(
		streamCmd("xack", -4, fW|fF, 1, 1, 1, aclWriteStreamFast, "5.0.0",
			"Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.",
			"O(1) for each message ID processed.", xackCmd),
		streamCmd("xpending", -3, fR, 1, 1, 1, aclReadStreamSlow, "5.0.0",
			"Returns the information and entries from a stream consumer group's pending entries list.",
			"O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.", xpendingCmd),
		streamCmd("xclaim", -6, fW|fF, 1, 1, 1, aclWriteStreamFast, "5.0.0",
			"Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.",
			"O(log N) with N being the number of messages in the PEL of the consumer group.", xclaimCmd),
		streamCmd("xautoclaim", -6, fW|fF, 1, 1, 1, aclWriteStreamFast, "6.2.0",
			"Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.",
			"O(1) if COUNT is small.", xautoclaimCmd),
	)
	registry["xpending"].Meta.Tips = tipsNondet
}

// subSyntaxErr is Redis's addReplySubcommandSyntaxError.
func subSyntaxErr(args [][]byte) resp.Value {
	sub := args[1]
	if len(sub) > 128 {
		sub = sub[:128]
	}
	return errf("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", sub, strings.ToUpper(string(args[0])))
}

// xgroupOp is the XGROUP subcommand that runs: one implementation, as
// Redis's xgroupCommand, shares the option parsing and the lookups.
type xgroupOp uint8

const (
	xgCreate xgroupOp = iota
	xgSetID
	xgDestroy
	xgCreateConsumer
	xgDelConsumer
)

func xgroupCmd(op xgroupOp) func(c *Ctx, args [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value { return xgroup(c, op, args) }
}

func xgroup(c *Ctx, op xgroupOp, args [][]byte) resp.Value {
	mkstream := false
	entriesRead := int64(-1)
	create, setid := op == xgCreate, op == xgSetID
	for i := 5; i < len(args); {
		switch {
		case create && eq(args[i], "mkstream"):
			mkstream = true
			i++
		case (create || setid) && eq(args[i], "entriesread") && i+1 < len(args):
			n, err := resp.ParseInt(args[i+1])
			if err != nil {
				return errReply(resp.ErrNotInteger)
			}
			if n < 0 && n != -1 {
				return errf("ERR value for ENTRIESREAD must be positive or -1")
			}
			entriesRead = n
			i += 2
		default:
			return subSyntaxErr(args)
		}
	}
	key, name := args[2], args[3]
	o, s, err := c.writeStream(key)
	if err != nil {
		return errReply(err)
	}
	if s == nil && !mkstream {
		return errf("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
	}
	var g *store.StreamGroup
	if s != nil {
		g = s.MutGroup(name)
	}
	if g == nil && (setid || op == xgCreateConsumer || op == xgDelConsumer) {
		return errf("NOGROUP No such consumer group '%s' for key name '%s'", name, key)
	}
	switch {
	case create && len(args) <= 8:
		var id store.StreamID
		if string(args[4]) == "$" {
			if s != nil {
				id = s.LastID
			}
		} else if id, err = parseStrictID(args[4]); err != nil {
			return errReply(err)
		}
		if g != nil {
			return errf("BUSYGROUP Consumer Group name already exists")
		}
		if s == nil {
			s = store.NewStream()
			o = c.newColl(key, store.TypeStream, s)
		}
		s.CreateGroup(name, id, entriesRead)
		c.changedEvent(NotifyStream, "xgroup-create", key, o)
		return resp.OK()
	case setid && (len(args) == 5 || len(args) == 7):
		var id store.StreamID
		if string(args[4]) == "$" {
			id = s.LastID
		} else if id, _, err = parseStreamID(args[4], 0, false, false); err != nil {
			return errReply(err)
		}
		g.LastID = id
		g.EntriesRead = entriesRead
		c.changedEvent(NotifyStream, "xgroup-setid", key, o)
		return resp.OK()
	case op == xgDestroy && len(args) == 4:
		if g == nil {
			return zero
		}
		s.DestroyGroup(name)
		c.changedEvent(NotifyStream, "xgroup-destroy", key, o)
		c.signalReady(key) // XREADGROUP waiters get NOGROUP
		return one
	case op == xgCreateConsumer && len(args) == 5:
		if _, created := g.CreateConsumer(args[4], c.Now); !created {
			return zero
		}
		c.changedEvent(NotifyStream, "xgroup-createconsumer", key, o)
		return one
	case op == xgDelConsumer && len(args) == 5:
		n := g.DeleteConsumer(args[4])
		if n < 0 {
			return zero
		}
		c.changedEvent(NotifyStream, "xgroup-delconsumer", key, o)
		return resp.Int(int64(n))
	}
	return subSyntaxErr(args)
}

func xackCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil || s.Group(args[2]) == nil {
		return zero
	}
	ids, err := parseStrictIDs(args[3:])
	if err != nil {
		return errReply(err)
	}
	o, s, _ := c.writeStream(args[1])
	g := s.MutGroup(args[2])
	n := 0
	for _, id := range ids {
		if g.Ack(id) {
			n++
		}
	}
	if n > 0 {
		c.changed(args[1], o)
	}
	return resp.Int(int64(n))
}

// streamConsumer returns group g's consumer name, seen now, creating it
// (with Redis's "xgroup-createconsumer" event) if g does not have it.
func (c *Ctx) streamConsumer(key []byte, g *store.StreamGroup, name []byte) *store.StreamConsumer {
	cons, created := g.CreateConsumer(name, c.Now)
	if created {
		c.notify(NotifyStream, "xgroup-createconsumer", key)
	}
	cons.SeenTime = c.Now
	return cons
}

func noGroup(key, group []byte) resp.Value {
	return errf("NOGROUP No such key '%s' or consumer group '%s'", key, group)
}

func xpendingCmd(c *Ctx, args [][]byte) resp.Value {
	justInfo := len(args) == 3
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		return errReply(resp.ErrSyntax)
	}
	var start, end store.StreamID
	var count, minIdle int64
	var consumer []byte
	if len(args) >= 6 {
		si := 3
		if eq(args[3], "idle") {
			v, err := resp.ParseInt(args[4])
			if err != nil {
				return errReply(resp.ErrNotInteger)
			}
			minIdle = v
			if len(args) < 8 {
				return errReply(resp.ErrSyntax)
			}
			si += 2
		}
		v, err := resp.ParseInt(args[si+2])
		if err != nil {
			return errReply(resp.ErrNotInteger)
		}
		count = max(v, 0)
		if start, err = parseInterval(args[si], 0, true); err != nil {
			return errReply(err)
		}
		if end, err = parseInterval(args[si+1], store.MaxStreamID.Seq, false); err != nil {
			return errReply(err)
		}
		if si+3 < len(args) {
			consumer = args[si+3]
		}
	}
	s, err := c.readStream(args[1])
	if err != nil {
		return errReply(err)
	}
	var g *store.StreamGroup
	if s != nil {
		g = s.Group(args[2])
	}
	if g == nil {
		return noGroup(args[1], args[2])
	}
	if justInfo {
		lo, hi, ok := g.PendingBounds()
		if !ok {
			return resp.Array(zero, resp.Null(), resp.Null(), resp.NullArray())
		}
		var cs []resp.Value
		g.Consumers(func(sc *store.StreamConsumer) bool {
			if n := sc.PendingLen(); n > 0 {
				cs = append(cs, resp.Array(resp.BulkString(sc.Name), resp.Bulk(itoa(int64(n)))))
			}
			return true
		})
		return resp.Array(resp.Int(int64(g.PendingLen())), idReply(lo), idReply(hi), resp.Array(cs...))
	}
	out := []resp.Value{}
	emit := func(p store.PendingEntry) bool {
		if end.Less(p.ID) || count == 0 {
			return false
		}
		idle := c.Now - p.DeliveryTime
		if minIdle != 0 && idle < minIdle {
			return true
		}
		count--
		out = append(out, resp.Array(idReply(p.ID), resp.BulkString(p.Consumer), resp.Int(max(idle, 0)), resp.Int(p.DeliveryCount)))
		return true
	}
	if consumer != nil {
		sc := g.Consumer(consumer)
		if sc == nil {
			return resp.Array()
		}
		sc.Pending(start, func(id store.StreamID) bool {
			p, _ := g.PendingGet(id)
			return emit(p)
		})
	} else {
		g.Pending(start, emit)
	}
	return resp.Array(out...)
}

func itoa(n int64) []byte { return strconv.AppendInt(nil, n, 10) }

func xclaimCmd(c *Ctx, args [][]byte) resp.Value {
	s, err := c.readStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil || s.Group(args[2]) == nil {
		return noGroup(args[1], args[2])
	}
	minIdle, err := resp.ParseInt(args[4])
	if err != nil {
		return errf("ERR Invalid min-idle-time argument for XCLAIM")
	}
	minIdle = max(minIdle, 0)
	j := 5
	var ids []store.StreamID
	for ; j < len(args); j++ {
		id, err := parseStrictID(args[j])
		if err != nil {
			break
		}
		ids = append(ids, id)
	}
	now := c.Now
	retry, delivery := int64(-1), int64(-1)
	force, justID := false, false
	var lastID store.StreamID
	for ; j < len(args); j++ {
		more := len(args) - 1 - j
		opt := args[j]
		switch {
		case eq(opt, "force"):
			force = true
		case eq(opt, "justid"):
			justID = true
		case eq(opt, "idle") && more > 0:
			j++
			v, err := resp.ParseInt(args[j])
			if err != nil {
				return errf("ERR Invalid IDLE option argument for XCLAIM")
			}
			delivery = now - v
		case eq(opt, "time") && more > 0:
			j++
			v, err := resp.ParseInt(args[j])
			if err != nil {
				return errf("ERR Invalid TIME option argument for XCLAIM")
			}
			delivery = v
		case eq(opt, "retrycount") && more > 0:
			j++
			v, err := resp.ParseInt(args[j])
			if err != nil {
				return errf("ERR Invalid RETRYCOUNT option argument for XCLAIM")
			}
			retry = v
		case eq(opt, "lastid") && more > 0:
			j++
			id, err := parseStrictID(args[j])
			if err != nil {
				return errReply(err)
			}
			lastID = id
		default:
			return errf("ERR Unrecognized XCLAIM option '%s'", opt)
		}
	}
	o, s, _ := c.writeStream(args[1])
	g := s.MutGroup(args[2])
	if g.LastID.Less(lastID) {
		g.LastID = lastID
	}
	if delivery != -1 {
		if delivery < 0 || delivery > now {
			delivery = now
		}
	} else {
		delivery = now
	}
	cons := c.streamConsumer(args[1], g, args[3])
	out := []resp.Value{}
	for _, id := range ids {
		p, pending := g.PendingGet(id)
		e, exists := s.Get(id)
		if !exists {
			if pending {
				g.Ack(id)
			}
			continue
		}
		forced := false
		if force && !pending {
			p = store.PendingEntry{ID: id}
			pending, forced = true, true
		}
		if !pending {
			continue
		}
		if !forced && minIdle != 0 && now-p.DeliveryTime < minIdle {
			continue
		}
		p.DeliveryTime = delivery
		if retry >= 0 {
			p.DeliveryCount = retry
		} else if !justID {
			p.DeliveryCount++
		}
		p.Consumer = cons.Name
		g.SetPending(p)
		if justID {
			out = append(out, idReply(id))
		} else {
			out = append(out, entryReply(e))
		}
		cons.ActiveTime = now
	}
	c.changed(args[1], o)
	return resp.Array(out...)
}

func xautoclaimCmd(c *Ctx, args [][]byte) resp.Value {
	minIdle, err := resp.ParseInt(args[4])
	if err != nil {
		return errf("ERR Invalid min-idle-time argument for XAUTOCLAIM")
	}
	minIdle = max(minIdle, 0)
	start, err := parseInterval(args[5], 0, true)
	if err != nil {
		return errReply(err)
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(args); j++ {
		more := len(args) - 1 - j
		switch {
		case eq(args[j], "count") && more > 0:
			v, err := resp.ParseInt(args[j+1])
			if err != nil || v < 1 || v > (1<<63-1)/16 {
				return errf("ERR COUNT must be > 0")
			}
			count = v
			j++
		case eq(args[j], "justid"):
			justID = true
		default:
			return errReply(resp.ErrSyntax)
		}
	}
	s, err := c.readStream(args[1])
	if err != nil {
		return errReply(err)
	}
	if s == nil || s.Group(args[2]) == nil {
		return noGroup(args[1], args[2])
	}
	o, s, _ := c.writeStream(args[1])
	g := s.MutGroup(args[2])
	now := c.Now
	cons := c.streamConsumer(args[1], g, args[3])
	attempts := count * 10
	// Collect the candidates first: the PEL changes as entries are claimed.
	var cands []store.PendingEntry
	var next store.StreamID
	g.Pending(start, func(p store.PendingEntry) bool {
		if int64(len(cands)) >= attempts {
			next = p.ID
			return false
		}
		cands = append(cands, p)
		return true
	})
	out := []resp.Value{}
	var deleted []resp.Value
	for _, p := range cands {
		if count == 0 {
			next = p.ID
			break
		}
		e, exists := s.Get(p.ID)
		if !exists {
			g.Ack(p.ID)
			deleted = append(deleted, idReply(p.ID))
			count--
			continue
		}
		if minIdle != 0 && now-p.DeliveryTime < minIdle {
			continue
		}
		p.DeliveryTime = now
		if !justID {
			p.DeliveryCount++
		}
		p.Consumer = cons.Name
		g.SetPending(p)
		if justID {
			out = append(out, idReply(p.ID))
		} else {
			out = append(out, entryReply(e))
		}
		count--
		cons.ActiveTime = now
	}
	c.changed(args[1], o)
	if deleted == nil {
		deleted = []resp.Value{}
	}
	return resp.Array(idReply(next), resp.Array(out...), resp.Array(deleted...))
}
