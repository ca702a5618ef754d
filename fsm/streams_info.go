package fsm

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// XINFO STREAM|GROUPS|CONSUMERS|HELP. Idle and inactive times are computed
// from Ctx.Now.

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Print this help.",
}

func init() {
	rs := aclReadStreamSlow
	consumers := streamSub("xinfo", "consumers", 4, fR, 2, rs, "5.0.0",
		"Returns a list of the consumers in a consumer group.", "O(1)", xinfoConsumers)
	consumers.Meta.Tips = tipsNondet
	register(container(&resp.Command{
		Name: "xinfo", Arity: -2, Flags: fR, ACL: []string{"slow"}, Group: "stream", Since: "5.0.0",
		Summary: "A container for stream introspection commands.", Complexity: "Depends on subcommand.",
	},
		consumers,
		streamSub("xinfo", "groups", 3, fR, 2, rs, "5.0.0",
			"Returns a list of the consumer groups of a stream.", "O(1)", xinfoGroups),
		streamSub("xinfo", "help", 2, resp.FlagLoading|resp.FlagStale, 0, []string{"stream", "slow"}, "5.0.0",
			"Returns helpful text about the different subcommands.", "O(1)", func(*Ctx, [][]byte) resp.Value { return helpReply(xinfoHelp) }),
		streamSub("xinfo", "stream", -3, fR, 2, rs, "5.0.0",
			"Returns information about a stream.", "O(1)", xinfoStream),
	))
}

func (c *Ctx) xinfoStreamOf(key []byte) (*store.Stream, resp.Value, bool) {
	s, err := c.readStream(key)
	if err != nil {
		return nil, errReply(err), false
	}
	if s == nil {
		return nil, errReply(resp.ErrNoSuchKey), false
	}
	return s, resp.Value{}, true
}

func bs(s string) resp.Value { return resp.BulkString(s) }

// entriesReadReply is a group's read counter, null when unknown.
func entriesReadReply(g *store.StreamGroup) resp.Value {
	if g.EntriesRead == -1 {
		return resp.Null()
	}
	return resp.Int(g.EntriesRead)
}

// lagReply is streamReplyWithCGLag.
func lagReply(s *store.Stream, g *store.StreamGroup) resp.Value {
	switch {
	case s.EntriesAdded == 0:
		return zero
	case g.EntriesRead != -1 && !rangeHasTombstones(s, g.LastID, store.MaxStreamID):
		return resp.Int(s.EntriesAdded - g.EntriesRead)
	}
	if er := estimateDistance(s, g.LastID); er != -1 {
		return resp.Int(s.EntriesAdded - er)
	}
	return resp.Null()
}

func xinfoConsumers(c *Ctx, args [][]byte) resp.Value {
	s, errv, ok := c.xinfoStreamOf(args[2])
	if !ok {
		return errv
	}
	g := s.Group(args[3])
	if g == nil {
		return errf("NOGROUP No such consumer group '%s' for key name '%s'", args[3], args[2])
	}
	out := []resp.Value{}
	g.Consumers(func(sc *store.StreamConsumer) bool {
		inactive := int64(-1)
		if sc.ActiveTime != -1 {
			inactive = c.Now - sc.ActiveTime
		}
		out = append(out, resp.Map(
			bs("name"), bs(sc.Name),
			bs("pending"), resp.Int(int64(sc.PendingLen())),
			bs("idle"), resp.Int(max(c.Now-sc.SeenTime, 0)),
			bs("inactive"), resp.Int(inactive)))
		return true
	})
	return resp.Array(out...)
}

func xinfoGroups(c *Ctx, args [][]byte) resp.Value {
	s, errv, ok := c.xinfoStreamOf(args[2])
	if !ok {
		return errv
	}
	out := []resp.Value{}
	s.Groups(func(g *store.StreamGroup) bool {
		out = append(out, resp.Map(
			bs("name"), bs(g.Name),
			bs("consumers"), resp.Int(int64(g.NumConsumers())),
			bs("pending"), resp.Int(int64(g.PendingLen())),
			bs("last-delivered-id"), idReply(g.LastID),
			bs("entries-read"), entriesReadReply(g),
			bs("lag"), lagReply(s, g)))
		return true
	})
	return resp.Array(out...)
}

func xinfoStream(c *Ctx, args [][]byte) resp.Value {
	full := false
	count := int64(10)
	switch opts := args[3:]; len(opts) {
	case 0:
	case 1, 3:
		if !eq(opts[0], "full") {
			return subSyntaxErr(args)
		}
		full = true
		if len(opts) == 3 {
			if !eq(opts[1], "count") {
				return subSyntaxErr(args)
			}
			n, err := resp.ParseInt(opts[2])
			if err != nil {
				return errReply(resp.ErrNotInteger)
			}
			if n < 0 {
				n = 10
			}
			count = n
		}
	default:
		return subSyntaxErr(args)
	}
	s, errv, ok := c.xinfoStreamOf(args[2])
	if !ok {
		return errv
	}
	kv := []resp.Value{
		bs("length"), resp.Int(int64(s.Length())),
		bs("radix-tree-keys"), resp.Int(int64(s.Nodes())),
		bs("radix-tree-nodes"), resp.Int(int64(s.RaxNodes())),
		bs("last-generated-id"), idReply(s.LastID),
		bs("max-deleted-entry-id"), idReply(s.MaxDeletedID),
		bs("entries-added"), resp.Int(s.EntriesAdded),
		bs("recorded-first-entry-id"), idReply(s.FirstID),
	}
	if !full {
		first, last := resp.Null(), resp.Null()
		if e, ok := s.First(); ok {
			first = entryReply(e)
		}
		if e, ok := s.Last(); ok {
			last = entryReply(e)
		}
		kv = append(kv, bs("groups"), resp.Int(int64(s.NumGroups())),
			bs("first-entry"), first, bs("last-entry"), last)
		return resp.Map(kv...)
	}
	kv = append(kv, bs("entries"), rangeReply(s, store.StreamID{}, store.MaxStreamID, count, false))
	groups := []resp.Value{}
	s.Groups(func(g *store.StreamGroup) bool {
		pel := []resp.Value{}
		g.Pending(store.StreamID{}, func(p store.PendingEntry) bool {
			if count != 0 && int64(len(pel)) >= count {
				return false
			}
			pel = append(pel, resp.Array(idReply(p.ID), bs(p.Consumer), resp.Int(p.DeliveryTime), resp.Int(p.DeliveryCount)))
			return true
		})
		cons := []resp.Value{}
		g.Consumers(func(sc *store.StreamConsumer) bool {
			cp := []resp.Value{}
			sc.Pending(store.StreamID{}, func(id store.StreamID) bool {
				if count != 0 && int64(len(cp)) >= count {
					return false
				}
				p, _ := g.PendingGet(id)
				cp = append(cp, resp.Array(idReply(id), resp.Int(p.DeliveryTime), resp.Int(p.DeliveryCount)))
				return true
			})
			cons = append(cons, resp.Map(
				bs("name"), bs(sc.Name),
				bs("seen-time"), resp.Int(sc.SeenTime),
				bs("active-time"), resp.Int(sc.ActiveTime),
				bs("pel-count"), resp.Int(int64(sc.PendingLen())),
				bs("pending"), resp.Array(cp...)))
			return true
		})
		groups = append(groups, resp.Map(
			bs("name"), bs(g.Name),
			bs("last-delivered-id"), idReply(g.LastID),
			bs("entries-read"), entriesReadReply(g),
			bs("lag"), lagReply(s, g),
			bs("pel-count"), resp.Int(int64(g.PendingLen())),
			bs("pending"), resp.Array(pel...),
			bs("consumers"), resp.Array(cons...)))
		return true
	})
	kv = append(kv, bs("groups"), resp.Array(groups...))
	return resp.Map(kv...)
}
