package proxy

import (
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Pub/sub through the proxy. SUBSCRIBE and PSUBSCRIBE go to the home node:
// every node's PUBLISH reaches every node's subscribers (cluster.Node
// forwards it), so one node's connection hears every channel. SSUBSCRIBE
// goes to the leader of the shard channel's slot, as a Redis Cluster
// client's would; messages of every connection are fanned in to the
// client. A node that stops leading a shard's slot unsubscribes its
// subscribers with an sunsubscribe push (as Redis does when a slot moves),
// which the client gets; so does a node connection that breaks. The
// subscription counts in shard confirmations are the client's total over
// its connections, as one Redis node would count them.
//
// Each subscribe-family command runs with the pipeline drained, and
// messages are held back until its confirmations are written: a message
// never comes before the confirmation of its channel.

// subscriptions are the client's channels, patterns and shard channels
// (under session.mu: the backends' readers change them too).
type subscriptions struct {
	channels, patterns map[string]bool
	shards             map[string]*backend // shard channel -> its node's connection
}

func (ss *subscriptions) init() {
	ss.channels, ss.patterns, ss.shards = map[string]bool{}, map[string]bool{}, map[string]*backend{}
}

func (ss *subscriptions) total() int { return len(ss.channels) + len(ss.patterns) + len(ss.shards) }

// note applies a confirmation of kind for channel from b.
func (ss *subscriptions) note(kind string, channel []byte, b *backend) {
	ch := string(channel)
	switch kind {
	case "subscribe":
		ss.channels[ch] = true
	case "unsubscribe":
		delete(ss.channels, ch)
	case "psubscribe":
		ss.patterns[ch] = true
	case "punsubscribe":
		delete(ss.patterns, ch)
	case "ssubscribe":
		ss.shards[ch] = b
	case "sunsubscribe":
		if ss.shards[ch] == b || b == nil {
			delete(ss.shards, ch)
		}
	}
}

// subscribedRESP2 reports whether the client is in RESP2's subscribed
// state, where only the subscribe family, PING, QUIT and RESET may run.
func (s *session) subscribedRESP2() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.proto == resp.RESP2 && s.subs.total() > 0
}

// subscribedAddr is a node holding the client's subscriptions, which
// answers PING in subscribed state as Redis does.
func (s *session) subscribedAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.subs.channels)+len(s.subs.patterns) == 0 {
		for _, b := range s.subs.shards {
			return b.addr
		}
	}
	return s.p.homeAddr()
}

// subscribe runs a subscribe-family command.
func (s *session) subscribe(name string, meta *resp.Command, args [][]byte) {
	s.waitWritten()
	s.pushes.hold()
	var out []byte
	switch name {
	case "ssubscribe":
		out = s.subscribeShard(meta, args)
	case "sunsubscribe":
		out = s.unsubscribeShards(meta, args)
	default:
		out = s.subscribeHome(name, meta, args)
	}
	s.enqueue(&entry{out: out, openPushes: true})
}

// subscribeHome runs (P)SUBSCRIBE and (P)UNSUBSCRIBE on the home node. An
// unsubscription from everything names the client's channels (or
// patterns): the node answers one confirmation per argument, so the proxy
// knows when its reply is complete (or one "none" confirmation for none).
func (s *session) subscribeHome(name string, meta *resp.Command, args [][]byte) []byte {
	if len(args) == 1 && (name == "unsubscribe" || name == "punsubscribe") {
		s.mu.Lock()
		held := s.subs.channels
		if name == "punsubscribe" {
			held = s.subs.patterns
		}
		for ch := range held {
			args = append(args, []byte(ch))
		}
		s.mu.Unlock()
	}
	c := newCall(meta, args, -1)
	c.sub = &expectSub{kind: name, channels: args[1:], count: 1}
	if len(args) == 1 {
		c.sub.channels = nil
	}
	return s.runSub(c, s.p.homeAddr())
}

// subscribeShard runs SSUBSCRIBE on the leader of the channels' slot (its
// CROSSSLOT if they hash to several).
func (s *session) subscribeShard(meta *resp.Command, args [][]byte) []byte {
	c := newCall(meta, args, int(slots.Of(args[1])))
	c.sub = &expectSub{kind: "ssubscribe", channels: args[1:]}
	return s.runSub(c, "")
}

// unsubscribeShards runs SUNSUBSCRIBE on the connections that hold the
// channels, in the channels' order; a channel held nowhere is confirmed
// here, as a node confirms one it never had.
func (s *session) unsubscribeShards(meta *resp.Command, args [][]byte) []byte {
	s.mu.Lock()
	chans := args[1:]
	if len(chans) == 0 { // every shard channel, named: one confirmation each
		for ch := range s.subs.shards {
			chans = append(chans, []byte(ch))
		}
	}
	var runs []shardRun // one SUNSUBSCRIBE per node connection and slot (a node's CROSSSLOT otherwise)
	for _, ch := range chans {
		b := s.subs.shards[string(ch)]
		if n := len(runs); n > 0 && runs[n-1].b == b && b != nil && slots.Of(runs[n-1].channels[0]) == slots.Of(ch) {
			runs[n-1].channels = append(runs[n-1].channels, ch)
			continue
		}
		runs = append(runs, shardRun{b: b, channels: [][]byte{ch}})
	}
	s.mu.Unlock()
	if len(runs) == 0 { // subscribed to no shard channel: one "none" confirmation
		return s.confirmLocally("sunsubscribe", nil)
	}
	var out []byte
	for _, r := range runs {
		if r.b == nil {
			for _, ch := range r.channels {
				out = append(out, s.confirmLocally("sunsubscribe", ch)...)
			}
			continue
		}
		c := newCall(meta, append([][]byte{args[0]}, r.channels...), -1)
		c.sub = &expectSub{kind: "sunsubscribe", channels: r.channels}
		out = append(out, s.runSub(c, r.b.addr)...)
	}
	return out
}

// shardRun is one SUNSUBSCRIBE for one node connection.
type shardRun struct {
	b        *backend
	channels [][]byte
}

// runSub runs a subscribe-family call on addr ("" for its slot's leader)
// and returns its confirmations as the client gets them, having applied
// them to the client's subscriptions.
func (s *session) runSub(c *call, addr string) []byte {
	if s.exchange(c, addr) == nil {
		return nil
	}
	proto := s.proto()
	var out []byte
	for _, f := range c.frames {
		kind, channel, ok := confirmation(f)
		if !ok { // an error (NOPERM, CROSSSLOT…)
			out = append(out, f...)
			continue
		}
		s.mu.Lock()
		s.subs.note(kind, channel, c.be)
		n := s.countFor(kind)
		s.mu.Unlock()
		if kind == "ssubscribe" || kind == "sunsubscribe" {
			f = confirmFrame(kind, channel, n, proto)
		}
		out = append(out, f...)
	}
	return out
}

// countFor is the count a confirmation of kind reports: channels and
// patterns, or shard channels (under s.mu).
func (s *session) countFor(kind string) int {
	if kind == "ssubscribe" || kind == "sunsubscribe" {
		return len(s.subs.shards)
	}
	return len(s.subs.channels) + len(s.subs.patterns)
}

// confirmLocally is a node's confirmation of an unsubscription from a
// channel the client does not hold (nil: from nothing at all).
func (s *session) confirmLocally(kind string, channel []byte) []byte {
	s.mu.Lock()
	n := s.countFor(kind)
	proto := s.state.proto
	s.mu.Unlock()
	return confirmFrame(kind, channel, n, proto)
}

// confirmFrame renders a confirmation as a node sends it.
func confirmFrame(kind string, channel []byte, count, proto int) []byte {
	ch := resp.Null()
	if channel != nil {
		ch = resp.Bulk(channel)
	}
	return resp.Push(resp.BulkString(kind), ch, resp.Int(int64(count))).Append(nil, proto)
}

// confirmation reads a confirmation frame.
func confirmation(f []byte) (kind string, channel []byte, ok bool) {
	elems, _, okE := resp.FrameElems(f)
	if !okE || len(elems) != 3 {
		return "", nil, false
	}
	k, okK := resp.FrameString(elems[0])
	if !okK || !isConfirmation(string(k)) {
		return "", nil, false
	}
	channel, _ = resp.FrameString(elems[1])
	return string(k), channel, true
}

// push takes a message or an unsolicited confirmation from b for the
// client; a confirmation is applied to the client's subscriptions and
// rendered with its count.
func (s *session) push(b *backend, frame []byte, kind string, channel []byte) {
	if isConfirmation(kind) {
		s.mu.Lock()
		s.subs.note(kind, channel, b)
		frame = confirmFrame(kind, channel, s.countFor(kind), s.state.proto)
		s.mu.Unlock()
	}
	if !s.pushes.add(frame) {
		s.p.log.Warn("closing a client over the pub/sub output limit", "limit_bytes", maxPushData, "client", s.nc.RemoteAddr().String())
		s.cancel()
		_ = s.nc.Close()
	}
}

// lostSub is a subscription that ended with its connection.
type lostSub struct {
	kind    string
	channel []byte
}

// subsLost tells the client of the subscriptions a broken connection
// held: an unsubscribe confirmation each, as when a node drops them.
func (s *session) subsLost(b *backend) {
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	var lost []lostSub
	if b.addr == s.p.homeAddr() {
		for ch := range s.subs.channels {
			lost = append(lost, lostSub{"unsubscribe", []byte(ch)})
		}
		for ch := range s.subs.patterns {
			lost = append(lost, lostSub{"punsubscribe", []byte(ch)})
		}
	}
	for ch, sb := range s.subs.shards {
		if sb == b {
			lost = append(lost, lostSub{"sunsubscribe", []byte(ch)})
		}
	}
	s.mu.Unlock()
	for _, l := range lost {
		s.push(b, nil, l.kind, l.channel)
	}
}
