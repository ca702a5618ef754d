package proxy

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// Commands about the whole keyspace, which a Redis Cluster node answers
// for its own slots only: the proxy asks every node that leads a group
// (each answers for the groups it leads) and merges. They are not atomic
// across nodes: a count or a key list is the sum of each node's at a
// slightly different moment, and a group whose leadership moves during
// the fan-out is asked again (the whole fan-out is; these commands are
// reads or change nothing the second time). SCAN walks the slots: its
// cursor (slot<<48 | position, as a node's) names the slot to go on from,
// which its leader scans up to the end of its group's range.

// fanout runs a kindFanout command with the pipeline drained.
func (s *session) fanout(r rule, name string, meta *resp.Command, args [][]byte) {
	s.waitWritten()
	var f []byte
	switch r.merge {
	case mergeScan:
		f = s.scan(meta, args)
	case mergeRandom:
		f = s.randomKey(meta, args)
	case mergeMin:
		f = s.waitEvery(r, meta, args)
	default:
		f = s.everyLeader(r.merge, meta, args)
	}
	if f != nil {
		s.answer(f)
	}
}

// leaderAddrs are the client addresses of the nodes that lead a group with
// slots, sorted; false while a group has no leader known.
func (p *Proxy) leaderAddrs() ([]string, bool) {
	var out []string
	for _, g := range p.n.Groups() {
		if len(g.Ranges()) == 0 {
			continue
		}
		l, ok := p.n.Leader(g)
		if !ok || l.ClientAddr == "" {
			return nil, false
		}
		if !slices.Contains(out, l.ClientAddr) {
			out = append(out, l.ClientAddr)
		}
	}
	slices.Sort(out)
	return out, len(out) > 0
}

// everyLeader sends args to every leader node and merges the replies;
// again, whole, while a leadership moves under it, until RetryFor.
func (s *session) everyLeader(m merge, meta *resp.Command, args [][]byte) []byte {
	deadline := time.Now().Add(s.p.o.RetryFor)
	for pause := time.Duration(0); ; {
		if frames, ok := s.askLeaders(meta, args); ok {
			return mergeFanout(m, s.proto(), frames)
		}
		if s.ctx.Err() != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return errFrame(resp.ErrClusterDown, s.proto())
		}
		pause = min(max(2*pause, minRetryPause), maxRetryPause)
		if !s.sleep(pause) {
			return nil
		}
	}
}

// askLeaders sends args to every leader node at once; false when a
// connection broke, a node answered as a leaderless or moving group does,
// or the leaders changed meanwhile.
func (s *session) askLeaders(meta *resp.Command, args [][]byte) ([][]byte, bool) {
	addrs, ok := s.p.leaderAddrs()
	if !ok {
		return nil, false
	}
	calls := make([]*call, len(addrs))
	for i, addr := range addrs {
		calls[i] = newCall(meta, args, -1)
		s.dispatch(calls[i], addr, false)
	}
	s.flushBackends()
	frames := make([][]byte, len(calls))
	for i, c := range calls {
		if !s.await(c) || c.err != nil {
			return nil, false
		}
		if _, redirected := parseRedirect(c.frame()); redirected {
			return nil, false
		}
		frames[i] = c.frame()
	}
	after, ok := s.p.leaderAddrs()
	return frames, ok && slices.Equal(addrs, after)
}

// mergeFanout merges every leader node's reply.
func mergeFanout(m merge, proto int, frames [][]byte) []byte {
	switch m {
	case mergeAnyOK:
		for _, f := range frames {
			if isOK(f) {
				return f
			}
		}
		return frames[0]
	case mergeAllOK:
		return allOK(frames, proto)
	}
	if f := firstError(frames); f != nil {
		return f
	}
	switch m {
	case mergeSum:
		return sumInts(frames, proto)
	case mergeConcat:
		return concatArrays(frames)
	case mergeAnd:
		return andArrays(frames, proto)
	}
	return frames[0] // mergeFirst
}

func isOK(f []byte) bool { s, ok := resp.FrameString(f); return ok && string(s) == "OK" && f[0] == '+' }

// concatArrays joins array replies (KEYS).
func concatArrays(frames [][]byte) []byte {
	var all [][]byte
	size := 16
	for _, f := range frames {
		es, _, ok := resp.FrameElems(f)
		if !ok {
			return unexpected(f)
		}
		all = append(all, es...)
		size += len(f)
	}
	out := make([]byte, 0, size)
	out = append(out, '*')
	out = appendInt(out, len(all))
	for _, e := range all {
		out = append(out, e...)
	}
	return out
}

// andArrays is 1 where every array has 1 (SCRIPT EXISTS).
func andArrays(frames [][]byte, proto int) []byte {
	var res []int64
	for i, f := range frames {
		es, _, ok := resp.FrameElems(f)
		if !ok || (i > 0 && len(es) != len(res)) {
			return unexpected(f)
		}
		if i == 0 {
			res = make([]int64, len(es))
			for j := range res {
				res[j] = 1
			}
		}
		for j, e := range es {
			if n, _ := resp.FrameInt(e); n == 0 {
				res[j] = 0
			}
		}
	}
	return intArray(res, proto)
}

func intArray(ns []int64, proto int) []byte {
	vs := make([]resp.Value, len(ns))
	for i, n := range ns {
		vs[i] = resp.Int(n)
	}
	return resp.Array(vs...).Append(nil, proto)
}

// randomKey asks the leader nodes in random order for a random key: the
// first that has one answers.
func (s *session) randomKey(meta *resp.Command, args [][]byte) []byte {
	addrs, ok := s.p.leaderAddrs()
	if !ok {
		return errFrame(resp.ErrClusterDown, s.proto())
	}
	rand.Shuffle(len(addrs), func(i, j int) { addrs[i], addrs[j] = addrs[j], addrs[i] })
	var f []byte
	for _, addr := range addrs {
		if f = s.exchange(newCall(meta, args, -1), addr); f == nil || !resp.FrameIsNull(f) {
			return f
		}
	}
	return f
}

// waitEvery runs WAIT or WAITAOF on every connection of the client (each
// waits for its own writes) and answers the smallest counts; on the home
// node when the client has none.
func (s *session) waitEvery(r rule, meta *resp.Command, args [][]byte) []byte {
	bs := s.openBackends()
	if len(bs) == 0 {
		return s.exchange(newCall(meta, args, -1), s.p.homeAddr())
	}
	calls := make([]*call, len(bs))
	for i, b := range bs {
		calls[i] = newCall(meta, args, -1)
		s.dispatch(calls[i], b.addr, false)
	}
	s.flushBackends()
	frames := make([][]byte, len(calls))
	s.watchClient(func() {
		for i, c := range calls {
			if !s.await(c) {
				return
			}
			frames[i] = c.frame()
			if c.err != nil {
				frames[i] = errFrame(resp.ErrClusterDown, s.proto())
			}
		}
	})
	if s.ctx.Err() != nil {
		return nil
	}
	if f := firstError(frames); f != nil {
		return f
	}
	return minInts(frames, s.proto())
}

// minInts is the smallest integer, or the smallest of each position of
// integer arrays (WAITAOF's local and replica counts).
func minInts(frames [][]byte, proto int) []byte {
	if n, ok := resp.FrameInt(frames[0]); ok {
		for _, f := range frames[1:] {
			m, okM := resp.FrameInt(f)
			if !okM {
				return unexpected(f)
			}
			n = min(n, m)
		}
		return resp.Int(n).Append(nil, proto)
	}
	var res []int64
	for i, f := range frames {
		es, _, ok := resp.FrameElems(f)
		if !ok || (i > 0 && len(es) != len(res)) {
			return unexpected(f)
		}
		for j, e := range es {
			n, _ := resp.FrameInt(e)
			if i == 0 {
				res = append(res, n)
			} else {
				res[j] = min(res[j], n)
			}
		}
	}
	return intArray(res, proto)
}

// scan is SCAN: the cursor's slot's leader scans from the cursor to the
// end of its group's range at most; the cursor returned goes on from the
// next range (0 after the last slot). A cursor the nodes would refuse goes
// to the home node, which answers Redis's error.
func (s *session) scan(meta *resp.Command, args [][]byte) []byte {
	cur, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil || store.CursorSlot(cur) >= slots.Count {
		return s.exchange(newCall(meta, args, -1), s.p.homeAddr())
	}
	slot := store.CursorSlot(cur)
	deadline := time.Now().Add(s.p.o.RetryFor)
	for {
		end, ok := s.rangeEnd(slot)
		c := newCall(meta, args, int(slot))
		f := s.exchange(c, "")
		if f == nil || !ok || isErrorFrame(f) || c.be == nil {
			return f
		}
		if addr, known := s.p.leaderAddr(slot); !known || addr != c.be.addr {
			// The leadership moved while it scanned: that node may have
			// skipped the range. Again, from the same cursor.
			if time.Now().After(deadline) {
				return errFrame(resp.ErrClusterDown, s.proto())
			}
			if !s.sleep(minRetryPause) {
				return nil
			}
			continue
		}
		return scanReply(f, end)
	}
}

// rangeEnd is the last slot of the range of slot's group that holds slot.
func (s *session) rangeEnd(slot uint16) (uint16, bool) {
	g := s.p.n.GroupOf(slot)
	if g == nil {
		return 0, false
	}
	for _, r := range g.Ranges() {
		if r.Contains(slot) {
			return r.End, true
		}
	}
	return 0, false
}

// scanReply is a node's SCAN reply with its cursor kept within the range
// ending at end: past it (or 0), the cursor becomes the next range's first.
func scanReply(f []byte, end uint16) []byte {
	es, _, ok := resp.FrameElems(f)
	if !ok || len(es) != 2 {
		return unexpected(f)
	}
	b, okB := resp.FrameString(es[0])
	next, err := strconv.ParseUint(string(b), 10, 64)
	if !okB || err != nil {
		return unexpected(f)
	}
	if next == 0 || store.CursorSlot(next) > end {
		next = 0
		if end < slots.Count-1 {
			next = store.SlotCursor(end + 1)
		}
	}
	cursor := strconv.FormatUint(next, 10)
	out := make([]byte, 0, len(es[1])+32)
	out = append(out, "*2\r\n$"...)
	out = appendInt(out, len(cursor))
	out = append(out, cursor...)
	out = append(out, '\r', '\n')
	return append(out, es[1]...)
}
