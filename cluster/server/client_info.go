package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
)

// CLIENT LIST and CLIENT INFO lines. A line is rendered on whichever
// goroutine runs the command, but most of what it shows (the transaction,
// the query buffer, the reply buffer) belongs to the client's own
// connection goroutine; that goroutine copies it into client.pub (under
// client.mu) after each command and before it renders its own line.

// blockKind is why a connection waits (flag b).
type blockKind uint8

const (
	notBlocked    blockKind = iota
	blockedOnKeys           // a blocking command (BLPOP, XREAD BLOCK…) waits in its group
	blockedPaused           // CLIENT PAUSE holds the command back
)

// published is the connection goroutine's state as CLIENT LIST shows it.
type published struct {
	multi    int // commands queued in MULTI, -1 outside MULTI
	multiMem int // their arguments' bytes plus a pointer each, as Redis's argv_len_sums
	argvMem  int
	qbuf     int // bytes in the query buffer
	qbufFree int
	rbs      int // reply buffer capacity
	obl      int // reply bytes queued and not written
	watches  []fsm.Watch
	closing  bool
}

// publish copies the connection goroutine's state into c.pub; only that
// goroutine calls it: after each pipeline it answered, before it waits
// (blocked or paused) and before it renders its own line. While a command
// runs, its bytes are still in the query buffer, as in Redis.
func (c *client) publish() {
	p := published{multi: -1, argvMem: c.argvMem, closing: c.closing}
	if inMulti(c) {
		p.multi = len(c.tx.queued)
		for _, q := range c.tx.queued {
			p.multiMem += argvLen(q.args) + 8*len(q.args)
		}
	}
	p.qbuf, p.qbufFree = c.conn.rd.Sizes()
	if c.argvMem == 0 { // between commands: what was read and not parsed yet
		p.qbuf = c.conn.rd.Buffered()
	}
	p.rbs, p.obl = cap(c.conn.out), len(c.conn.out)
	if c.tx != nil {
		p.watches = c.tx.watches // appended to, never changed: the prefix stays valid
	}
	if c.conn.io != nil {
		c.conn.io.peakIn.note(p.qbuf + p.qbufFree)
	}
	c.mu.Lock()
	c.pub = p
	c.mu.Unlock()
}

// publishWritten updates what publish showed of the output buffer once
// the connection goroutine wrote it.
func (c *client) publishWritten() {
	c.mu.Lock()
	c.pub.rbs, c.pub.obl = cap(c.conn.out), len(c.conn.out)
	c.mu.Unlock()
}

// argvLen is the bytes of a command's arguments (Redis's argv_len_sum).
func argvLen(args [][]byte) int {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	return n
}

// setBlocked records why c waits (notBlocked when it stops) and counts
// INFO's blocked_clients.
func (s *Server) setBlocked(c *client, k blockKind) {
	c.mu.Lock()
	was := c.blocked
	c.blocked = k
	c.mu.Unlock()
	switch {
	case was == notBlocked && k != notBlocked:
		s.blockedN.Add(1)
	case was != notBlocked && k == notBlocked:
		s.blockedN.Add(-1)
	}
}

// flagsLocked are the flags of CLIENT LIST in Redis's order (O P x b t R B
// d c u A U r e T, N when none); those of replicas and Unix sockets never
// apply here. dirty: a watched key changed (d). c.mu is held.
func (c *client) flagsLocked(dirty bool) string {
	var f []byte
	if c.monitoring {
		f = append(f, 'O')
	}
	if c.sub != nil && c.sub.subscribed() {
		f = append(f, 'P')
	}
	if c.pub.multi >= 0 {
		f = append(f, 'x')
	}
	if c.blocked != notBlocked {
		f = append(f, 'b')
	}
	f = c.trackFlags(f) // t R B (tracking_cmd.go)
	if dirty {
		f = append(f, 'd')
	}
	if c.pub.closing {
		f = append(f, 'c')
	}
	if c.readonly {
		f = append(f, 'r')
	}
	if c.noEvict {
		f = append(f, 'e')
	}
	if c.noTouch {
		f = append(f, 'T')
	}
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}

// watchesChanged reports whether a watched key of ws changed since WATCH,
// as Redis's CLIENT_DIRTY_CAS says (EXEC would fail): read on this node's
// replica of each key's group; a group not hosted here (the slot moved)
// counts as changed.
func (s *Server) watchesChanged(ws []fsm.Watch) bool {
	seen := map[uint32]bool{}
	for _, w := range ws {
		if seen[w.Group] {
			continue
		}
		seen[w.Group] = true
		g, ok := s.n.Group(w.Group)
		if !ok || !g.Local() {
			return true
		}
		hold := false
		if err := g.ReadStale(func(st fsm.Reader) { hold = st.WatchesHold(cluster.ReadNow(st), ws) }); err != nil || !hold {
			return true
		}
	}
	return false
}

// info renders the client as one CLIENT LIST / CLIENT INFO line, with
// Redis 7.2's fields in its order. fd is -1 (Go owns the sockets);
// tot-mem adds up the buffers and arguments measured here.
func (c *client) info(now time.Time, changed func([]fsm.Watch) bool) string {
	c.mu.Lock()
	ws := c.pub.watches
	c.mu.Unlock()
	dirty := len(ws) > 0 && changed(ws) // reads the groups: not under c.mu
	c.mu.Lock()
	defer c.mu.Unlock()
	var subs [numKinds]int64
	omem, oll := 0, 0
	if c.sub != nil {
		for k := range subs {
			subs[k] = c.sub.counts[k].Load()
		}
		if omem = c.sub.out.pending(); omem > 0 {
			oll = 1
		}
	}
	p := c.pub
	tot := p.qbuf + p.qbufFree + p.argvMem + p.multiMem + p.rbs + omem
	var b strings.Builder
	field := func(name, v string) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name)
		b.WriteByte('=')
		b.WriteString(v)
	}
	num := func(name string, v int64) { field(name, strconv.FormatInt(v, 10)) }
	num("id", int64(c.id))
	field("addr", c.addr)
	field("laddr", c.laddr)
	num("fd", -1)
	field("name", c.name)
	num("age", int64(now.Sub(c.created)/time.Second))
	num("idle", int64(now.Sub(c.lastAt)/time.Second))
	field("flags", c.flagsLocked(dirty))
	num("db", 0)
	num("sub", subs[kindChannel])
	num("psub", subs[kindPattern])
	num("ssub", subs[kindShard])
	for _, f := range []struct {
		name string
		v    int
	}{{"multi", p.multi}, {"qbuf", p.qbuf}, {"qbuf-free", p.qbufFree}, {"argv-mem", p.argvMem},
		{"multi-mem", p.multiMem}, {"rbs", p.rbs}, {"rbp", p.rbs}, {"obl", p.obl}, {"oll", oll},
		{"omem", omem}, {"tot-mem", tot}} {
		num(f.name, int64(f.v))
	}
	field("events", "r")
	field("cmd", c.lastCmd)
	field("user", c.acl.name)
	num("redir", c.redirField())
	num("resp", int64(c.proto))
	field("lib-name", c.libName)
	field("lib-ver", c.libVer)
	return b.String()
}

// clientType is the class CLIENT LIST TYPE and CLIENT KILL TYPE match
// (Redis's getClientType): pubsub while subscribed, else normal (no
// replication links are clients here, so never master or slave).
func clientType(c *client) string {
	c.mu.Lock()
	sub := c.sub
	c.mu.Unlock()
	if sub.subscribed() {
		return "pubsub"
	}
	return "normal"
}

// parseClientType is Redis's getClientTypeByName: the class a TYPE
// argument names (replica and slave are one), ok false if none.
func parseClientType(b []byte) (string, bool) {
	switch strings.ToLower(string(b)) {
	case "normal":
		return "normal", true
	case "slave", "replica":
		return "slave", true
	case "pubsub":
		return "pubsub", true
	case "master":
		return "master", true
	}
	return "", false
}
