package server

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//
// The connection queues commands after Redis Cluster's checks (unknown
// command, arity, CROSSSLOT within a command, MOVED for a slot not led
// here; each flags the transaction so EXEC answers EXECABORT). EXEC checks
// that every queued key and every watched key are in one slot (else
// CROSSSLOT, as Redis Cluster does at EXEC), and that this node still leads
// the slot's group (else MOVED: nothing was proposed, so the client may
// retry). The data commands then go to the group as one fsm "exec" command
// of one log entry, with the watches, applied atomically on every replica
// (fsm/multi.go). Node commands (PING, ECHO, CLIENT…) and keyless reads run
// on this node after the entry applied, and their replies take their places
// in the EXEC array.

var (
	errNotInMulti = resp.NewError("ERR Command not allowed inside a transaction")
)

// txState is a connection's MULTI and WATCH state (client.tx).
type txState struct {
	multi   bool
	dirty   bool // a command was refused while queuing: EXEC aborts
	queued  []queuedCmd
	watches []fsm.Watch
}

// queuedCmd is one command queued in MULTI, its arguments copied (the connection loop
// reuses its buffers).
type queuedCmd struct {
	cmd  *command
	args [][]byte
	slot int // -1: no key
}

// txOf returns c's transaction state, creating it.
func txOf(c *client) *txState {
	if c.tx == nil {
		c.tx = &txState{}
	}
	return c.tx
}

func inMulti(c *client) bool { return c.tx != nil && c.tx.multi }

// queueInMulti queues cmd when c is in MULTI and cmd is not one of the
// commands that act at once (flagged now: EXEC, DISCARD, MULTI, WATCH,
// QUIT, RESET); it reports whether it answered cmd.
func (s *Server) queueInMulti(c *client, cmd resp.Request) bool {
	if !inMulti(c) || len(cmd.Args) == 0 {
		return false
	}
	args := cmd.Args
	found := s.table.lookup(args[0])
	if found != nil && found.now {
		return false
	}
	tx := c.tx
	s.received(c, cmd, route{cmd: found}, time.Now())
	reply := s.checkQueued(c, found, args)
	if reply.IsError() {
		tx.dirty = true
		s.rejected(found, args)
		s.send(c, reply)
		return true
	}
	q := queuedCmd{cmd: found, args: make([][]byte, len(args)), slot: -1}
	for i, a := range args {
		q.args[i] = bytes.Clone(a)
		if q.args[i] == nil {
			q.args[i] = []byte{}
		}
	}
	if found.data != nil {
		if keys := found.meta.KeysOf(args); len(keys) > 0 {
			q.slot = int(slots.Of(keys[0]))
		}
	}
	tx.queued = append(tx.queued, q)
	s.send(c, resp.Queued())
	return true
}

// checkQueued is Redis Cluster's check of a command about to be queued:
// +QUEUED, or the error that flags the transaction.
func (s *Server) checkQueued(c *client, cmd *command, args [][]byte) resp.Value {
	if cmd == nil {
		return resp.Err(resp.ErrUnknownCommand(args[0], args[1:]))
	}
	if !cmd.meta.ArityOK(len(args)) {
		return resp.Err(resp.ErrWrongArgs(cmd.meta.Name))
	}
	if cmd.meta.Is(resp.FlagNoMulti) {
		return resp.Err(errNotInMulti)
	}
	if v := s.aclQueued(c, cmd, args); v != nil { // NOPERM (acl_multi.go)
		return *v
	}
	if cmd.isNode() {
		return s.queuedUnlessOOM()
	}
	keys := cmd.meta.KeysOf(args)
	if len(keys) == 0 {
		// Only plain reads may run outside the entry (EVAL with no keys,
		// for one, must not).
		if !cmd.meta.Is(resp.FlagReadOnly) {
			return resp.Err(resp.Errorf("ERR '%s' has no key to route by and is not supported in cluster mode", cmd.meta.Name))
		}
		return resp.Queued()
	}
	slot := slots.Of(keys[0])
	for _, k := range keys[1:] {
		if slots.Of(k) != slot {
			return resp.Err(resp.ErrCrossSlot)
		}
	}
	g := s.n.GroupOf(slot)
	if !g.IsLeader() {
		return s.redirect(c, g, slot)
	}
	if err := s.busyErr(g, cmd); err != nil { // as Redis: refused, and EXEC will abort (busy.go)
		return resp.Err(err)
	}
	return s.queuedUnlessOOM()
}

func multiCommands() []*command {
	tx := func(name string, arity int, flags resp.Flag, acl, since, summary, complexity string, run nodeHandler) *command {
		return &command{meta: &resp.Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "transaction"},
			Group: "transactions", Since: since, Summary: summary, Complexity: complexity}, node: run, now: true}
	}
	quick := resp.FlagNoScript | resp.FlagLoading | resp.FlagStale | resp.FlagFast | resp.FlagAllowBusy
	watch := tx("watch", -2, quick, "fast", "2.2.0", "Monitors changes to keys to determine the execution of a transaction.",
		"O(1) for every key.", cmdWatch)
	watch.meta.FirstKey, watch.meta.LastKey, watch.meta.Step = 1, -1, 1
	unwatch := tx("unwatch", 1, quick, "fast", "2.2.0", "Forgets about watched keys of a transaction.", "O(1)", cmdUnwatch)
	unwatch.now = false // queued, as in Redis
	return []*command{
		tx("multi", 1, quick, "fast", "1.2.0", "Starts a transaction.", "O(1)", cmdMulti),
		tx("exec", 1, resp.FlagNoScript|resp.FlagLoading|resp.FlagStale|resp.FlagSkipSlowlog, "slow", "1.2.0",
			"Executes all commands in a transaction.", "Depends on commands in the transaction", cmdExec),
		tx("discard", 1, quick, "fast", "2.0.0", "Discards a transaction.",
			"O(N), when N is the number of queued commands", cmdDiscard),
		watch,
		unwatch,
	}
}

func cmdMulti(_ *Server, c *client, _ [][]byte) resp.Value {
	if inMulti(c) {
		return resp.Err(resp.ErrMultiNested)
	}
	txOf(c).multi = true
	return resp.OK()
}

func cmdDiscard(_ *Server, c *client, _ [][]byte) resp.Value {
	if !inMulti(c) {
		return resp.Err(resp.ErrDiscardWithoutMulti)
	}
	c.tx = nil // DISCARD unwatches too
	return resp.OK()
}

func cmdUnwatch(_ *Server, c *client, _ [][]byte) resp.Value {
	if c.tx != nil {
		c.tx.watches = nil
	}
	return resp.OK()
}

// cmdWatch records what each key is on the leader's applied state, through a
// linearizable read. The keys of one WATCH must share a slot led here.
func cmdWatch(s *Server, c *client, args [][]byte) resp.Value {
	if inMulti(c) {
		return resp.Err(resp.ErrWatchInMulti)
	}
	keys := args[1:]
	slot := slots.Of(keys[0])
	for _, k := range keys[1:] {
		if slots.Of(k) != slot {
			return resp.Err(resp.ErrCrossSlot)
		}
	}
	g := s.n.GroupOf(slot)
	if !g.IsLeader() {
		return s.redirect(c, g, slot)
	}
	ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
	defer cancel()
	var ws []fsm.Watch
	if err := g.Read(ctx, func(st fsm.Reader) { ws = st.Observe(cluster.ReadNow(st), keys) }); err != nil {
		if errors.Is(err, cluster.ErrNotLeader) {
			return s.redirect(c, g, slot)
		}
		return resp.Err(err)
	}
	tx := txOf(c)
next:
	for _, w := range ws {
		for _, old := range tx.watches {
			if bytes.Equal(old.Key, w.Key) {
				continue next // the first WATCH of a key counts, as in Redis
			}
		}
		tx.watches = append(tx.watches, w)
	}
	return resp.OK()
}

// cmdExec runs the queued transaction (see the top of this file).
func cmdExec(s *Server, c *client, _ [][]byte) resp.Value {
	if !inMulti(c) {
		return resp.Err(resp.ErrExecWithoutMulti)
	}
	start := time.Now()
	tx := c.tx
	c.tx = nil // EXEC ends the transaction and unwatches, whatever happens
	if err := s.txBusy(tx); err != nil {
		return resp.Err(err)
	}
	if tx.dirty {
		return resp.Err(resp.ErrExecAbort)
	}
	if s.txOutOfMemory(tx) {
		return resp.Err(errExecAbortOOM)
	}
	slot := -1
	for _, w := range tx.watches {
		if !sameSlot(&slot, int(slots.Of(w.Key))) {
			return resp.Err(resp.ErrCrossSlot)
		}
	}
	replies := make([]resp.Value, len(tx.queued))
	denied := s.aclExecDenied(c, tx.queued, replies) // the rules changed since queuing (acl_multi.go)
	var data [][][]byte
	var at []int
	for i, q := range tx.queued {
		if q.slot < 0 || denied[i] {
			continue
		}
		if !sameSlot(&slot, q.slot) {
			return resp.Err(resp.ErrCrossSlot)
		}
		data = append(data, q.args)
		at = append(at, i)
	}
	if slot >= 0 {
		g := s.n.GroupOf(uint16(slot))
		if !g.IsLeader() {
			// Leadership moved since the commands were queued: nothing was
			// proposed, so the client may retry the transaction there.
			return s.redirect(c, g, uint16(slot))
		}
		if !watchedIn(tx.watches, g.ID()) {
			return resp.NullArray() // a watched key's slot moved to another group: it changed
		}
		v := s.proposeExec(c, g, uint16(slot), fsm.ExecCommand(tx.watches, data))
		if v.Kind == resp.KindNullArray || v.IsError() {
			return v // a watched key changed (nothing ran), or the entry's fate
		}
		c.noteWrite(g)
		if v.Kind != resp.KindArray || len(v.Elems) != len(data) {
			return resp.Err(errors.New("ERR internal error: transaction reply of the wrong shape"))
		}
		for j, i := range at {
			replies[i] = v.Elems[j]
		}
	}
	c.inExec = true // queued node commands do not block (WAIT), as in Redis
	defer func() { c.inExec = false }()
	for i, q := range tx.queued {
		switch {
		case q.slot >= 0 || denied[i]:
		case q.cmd.isNode():
			replies[i] = s.runNode(c, q.cmd, q.args)
		default:
			replies[i] = s.keyless(q.cmd, q.args)
		}
	}
	s.accountExec(c, tx.queued, replies, start)
	return resp.Array(replies...)
}

// accountExec counts the commands a transaction ran, as Redis's call()
// does for each command EXEC runs: a call each (failed when it answered
// an error), every error reply in errorstats, the slow log and the
// latency monitor. They ran as one log entry, so the transaction's time
// is shared equally among them.
func (s *Server) accountExec(c *client, queued []queuedCmd, replies []resp.Value, start time.Time) {
	if len(queued) == 0 {
		return
	}
	s.stats.commands.Add(int64(len(queued)))
	each := time.Since(start) / time.Duration(len(queued))
	track := s.statsCfg.tracking.Load()
	for i, q := range queued {
		s.cstats.called(s.cstats.of(q.cmd.meta, q.args), each, replies[i], track)
		s.afterCall(c, q.cmd.meta, q.args, each)
		if replies[i].IsError() {
			s.cstats.errorReply(replies[i])
		}
	}
}

// watchedIn reports whether every watch was taken in group gid: a watch's
// version counts in its own group's log only, so one taken before the
// key's slot moved to another group cannot be checked there.
func watchedIn(ws []fsm.Watch, gid uint32) bool {
	for _, w := range ws {
		if w.Group != gid {
			return false
		}
	}
	return true
}

// proposeExec proposes a transaction: cluster.ErrNotLeader (never reached the log)
// redirects; any other error, such as an unknown outcome, is the reply.
func (s *Server) proposeExec(c *client, g *cluster.Group, slot uint16, exec [][]byte) resp.Value {
	batch := [][][]byte{exec}
	ctx, cancel := context.WithTimeout(withScriptUser(proposeCtx(s.ctx, c), c, batch), requestTimeout)
	defer cancel()
	outcomes, err := g.Propose(ctx, batch)
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		return s.redirect(c, g, slot)
	case err != nil:
		return resp.Err(err)
	case len(outcomes) != 1:
		return resp.Err(errors.New("ERR internal error: proposal returned a wrong number of outcomes"))
	}
	s.noteScriptDenials(c, outcomes[0])
	return s.reply(nil, g, outcomes[0], exec) // never blocks: a transaction runs with NoBlock
}

// sameSlot sets *slot to s if unset and reports whether they agree.
func sameSlot(slot *int, s int) bool {
	if *slot < 0 {
		*slot = s
	}
	return *slot == s
}
