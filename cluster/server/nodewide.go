package server

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Node-wide commands: KEYS, SCAN, DBSIZE, RANDOMKEY, FLUSHALL and FLUSHDB
// answer for the keyspace this node serves as master — the groups it leads —
// as a Redis Cluster master answers for its own slots.

var errInvalidCursor = resp.NewError("ERR invalid cursor")

func nodewideCommands() []*command {
	return []*command{
		fsmNode("keys", cmdKeys), fsmNode("scan", cmdScan), fsmNode("dbsize", cmdDBSize),
		fsmNode("randomkey", cmdRandomKey), fsmNode("flushall", cmdFlush), fsmNode("flushdb", cmdFlush),
	}
}

// viewLed runs fn on the store of every group led here, in slot order,
// each after a linearizable read barrier.
func (s *Server) viewLed(fn func(g *cluster.Group, st fsm.Reader)) error {
	for _, g := range s.ledGroups() {
		if err := s.viewGroup(g, func(st fsm.Reader) { fn(g, st) }); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) viewGroup(g *cluster.Group, fn func(st fsm.Reader)) error {
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	err := g.Read(ctx, fn)
	if errors.Is(err, cluster.ErrNotLeader) {
		return resp.ErrClusterDown // leadership moved while we went through the groups: retry
	}
	return err
}

func cmdKeys(s *Server, _ *client, args [][]byte) resp.Value {
	var keys []resp.Value
	err := s.viewLed(func(_ *cluster.Group, st fsm.Reader) {
		v := st.Read(cluster.ReadNow(st), fsm.Lookup(args[0]), args).Reply // no key: never redirected
		keys = append(keys, v.Elems...)
	})
	if err != nil {
		return resp.Err(err)
	}
	return resp.Array(keys...)
}

func cmdDBSize(s *Server, _ *client, args [][]byte) resp.Value {
	var n int64
	err := s.viewLed(func(_ *cluster.Group, st fsm.Reader) {
		n += st.Read(cluster.ReadNow(st), fsm.Lookup(args[0]), args).Reply.Int
	})
	if err != nil {
		return resp.Err(err)
	}
	return resp.Int(n)
}

func cmdRandomKey(s *Server, _ *client, args [][]byte) resp.Value {
	groups := s.ledGroups()
	rand.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	for _, g := range groups {
		var v resp.Value
		err := s.viewGroup(g, func(st fsm.Reader) { v = st.Read(cluster.ReadNow(st), fsm.Lookup(args[0]), args).Reply })
		if err != nil {
			return resp.Err(err)
		}
		if v.Kind != resp.KindNull {
			return v
		}
	}
	return resp.Null()
}

// cmdFlush proposes FLUSHALL/FLUSHDB [ASYNC|SYNC] to every group led here.
func cmdFlush(s *Server, _ *client, args [][]byte) resp.Value {
	if len(args) > 2 || (len(args) == 2 && !resp.EqualFold(args[1], "async") && !resp.EqualFold(args[1], "sync")) {
		return resp.Err(resp.ErrSyntax)
	}
	for _, g := range s.ledGroups() {
		if v := s.propose(nil, g, [][][]byte{args})[0]; v.IsError() {
			return v
		}
	}
	return resp.OK()
}

// ledRange is one slot range of a group led here.
type ledRange struct {
	r slots.Range
	g *cluster.Group
}

func (s *Server) ledRanges() []ledRange {
	var out []ledRange
	for _, g := range s.ledGroups() {
		for _, r := range g.Ranges() {
			out = append(out, ledRange{r, g})
		}
	}
	sortRanges(out)
	return out
}

func sortRanges(rs []ledRange) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].r.Start < rs[j-1].r.Start; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// scanArgs are SCAN's options.
type scanArgs struct {
	cursor  uint64
	count   int
	match   []byte
	typ     string
	hasType bool
}

func parseScan(args [][]byte) (scanArgs, error) {
	a := scanArgs{count: 10}
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		return a, errInvalidCursor
	}
	a.cursor = cur
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, resp.ErrSyntax
		}
		switch {
		case resp.EqualFold(args[i], "count"):
			n, err := resp.ParseInt(args[i+1])
			if err != nil {
				return a, err
			}
			if n < 1 {
				return a, resp.ErrSyntax
			}
			a.count = int(min(n, 1<<20))
		case resp.EqualFold(args[i], "match"):
			a.match = args[i+1]
			if len(a.match) == 1 && a.match[0] == '*' {
				a.match = nil
			}
		case resp.EqualFold(args[i], "type"):
			a.typ, a.hasType = strings.ToLower(string(args[i+1])), true
		default:
			return a, resp.ErrSyntax
		}
	}
	return a, nil
}

// cmdScan is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The
// store cursor is slot<<48|hash48, so it says which slot — and so which
// led range — to continue in; each range is scanned in its group's store,
// and when a range is done the cursor moves to the first slot of the next
// led range; 0 after the last one.
func cmdScan(s *Server, _ *client, args [][]byte) resp.Value {
	a, err := parseScan(args)
	if err != nil {
		return resp.Err(err)
	}
	ranges := s.ledRanges()
	i, cur := scanStart(ranges, a.cursor)
	var keys [][]byte
	visited := 0
	for i < len(ranges) && visited < a.count {
		lr := ranges[i]
		var next uint64
		err := s.viewGroup(lr.g, func(st fsm.Reader) {
			now := cluster.ReadNow(st)
			st.View(func(kv store.Reader) {
				next = kv.Scan(cur, a.count-visited, func(key []byte, o *store.Object) {
					if !lr.r.Contains(slots.Of(key)) {
						return
					}
					visited++
					if o.ExpiredAt(now) || (a.hasType && o.Type.String() != a.typ) || (a.match != nil && !fsm.Match(a.match, key)) {
						return
					}
					keys = append(keys, key)
				})
			})
		})
		if err != nil {
			return resp.Err(err)
		}
		if next == 0 || store.CursorSlot(next) > lr.r.End {
			i++
			if i < len(ranges) {
				next = store.SlotCursor(ranges[i].r.Start)
			}
		}
		cur = next
	}
	if i >= len(ranges) {
		cur = 0
	}
	return resp.Array(resp.BulkString(strconv.FormatUint(cur, 10)), resp.BulkArray(keys))
}

// scanStart finds the led range a cursor continues in and the store cursor
// to continue from; a cursor in a slot not led here moves to the next led range.
func scanStart(ranges []ledRange, cursor uint64) (int, uint64) {
	if len(ranges) == 0 {
		return 0, 0
	}
	if cursor == 0 {
		return 0, store.SlotCursor(ranges[0].r.Start)
	}
	slot := store.CursorSlot(cursor)
	for i, lr := range ranges {
		if lr.r.End < slot {
			continue
		}
		if lr.r.Start > slot {
			return i, store.SlotCursor(lr.r.Start)
		}
		return i, cursor
	}
	return len(ranges), 0
}
