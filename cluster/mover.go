package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/cluster/meta"
	"github.com/slotraft/slotraft/fsm"
)

// The mover runs on a source group's leader and moves the slots the map
// says are migrating out of the group, one slot at a time in slot order.
// Per slot: the target clears any old out-mark of the slot ("in"), the
// source marks the slot migrating out ("out"), then batches of keys are
// frozen in the source, copied into the target through its log (import,
// fenced by the source leader's term so a deposed leader's late copy is
// refused) and deleted from the source (drop). When a linearizable read
// finds no live and no frozen key left, the owner flips in the map. Every
// step is idempotent and its state is replicated, so a new leader (or a
// restarted node) resumes where the last one stopped.

const (
	moveInterval   = 200 * time.Millisecond // how often a leader looks for work
	moveRetry      = 200 * time.Millisecond // pause after a failed step
	moveBatchKeys  = 256                    // keys frozen per batch
	moveBatchBytes = 4 << 20                // bytes per import entry (a batch may need several)
)

// errMoveLeader: this node stopped leading the source group.
var errMoveLeader = errors.New("no longer the source group's leader")

// moveLoop is started with the group; it works only while the group is
// led here, keeping up to Config.MoveParallel slots moving: a slot that finishes
// makes room for the next one at once.
func (g *Group) moveLoop() {
	tick := time.NewTicker(moveInterval)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	// busy: slots being moved; finished: slots whose finish was proposed
	// but which this node's copy of the map may still list. This
	// goroutine's only.
	busy, finished := map[uint16]bool{}, map[uint16]bool{}
	done := make(chan moveDone, g.node.cfg.MoveParallel)
	for {
		changed := g.node.meta.fsm.Changed()
		if g.raft.State() == raft.Leader {
			g.startMoves(&wg, g.pendingMoves(busy, finished), busy, done)
		}
		select {
		case <-g.ctx.Done():
			return
		case d := <-done:
			delete(busy, d.slot)
			if d.finished {
				finished[d.slot] = true
			}
		case <-changed:
		case <-tick.C:
		}
	}
}

type moveDone struct {
	slot     uint16
	finished bool
}

// pendingMoves are the map's migrations out of g that are neither moving
// nor finished; finished forgets the slots the map no longer lists.
func (g *Group) pendingMoves(busy, finished map[uint16]bool) []meta.Migration {
	migs := g.node.Map().MigrationsFrom(g.id)
	listed := map[uint16]bool{}
	var out []meta.Migration
	for _, mig := range migs {
		listed[mig.Slot] = true
		if !busy[mig.Slot] && !finished[mig.Slot] {
			out = append(out, mig)
		}
	}
	maps.DeleteFunc(finished, func(slot uint16, _ bool) bool { return !listed[slot] })
	return out
}

// startMoves starts a goroutine per migration while fewer than
// Config.MoveParallel run; each reports on done.
func (g *Group) startMoves(wg *sync.WaitGroup, migs []meta.Migration, busy map[uint16]bool, done chan<- moveDone) {
	for _, mig := range migs {
		if len(busy) == g.node.cfg.MoveParallel {
			return
		}
		busy[mig.Slot] = true
		wg.Go(func() {
			err := g.moveSlot(mig)
			if err != nil && g.ctx.Err() == nil && !errors.Is(err, errMoveLeader) {
				g.log.Info("slot migration step failed; retrying", "slot", mig.Slot, "to", mig.To, "err", err)
				select { // not at once: the target may still be electing its leader
				case <-g.ctx.Done():
				case <-time.After(moveRetry):
				}
			}
			done <- moveDone{slot: mig.Slot, finished: err == nil && !mig.Hold}
		})
	}
}

// moveSlot moves one slot's keys to the target and flips the owner (unless
// the migration is held for CLUSTER SETSLOT … NODE).
func (g *Group) moveSlot(mig meta.Migration) error {

	term := g.raft.CurrentTerm()
	if to, ok := g.fsm.State().MigratingOut(mig.Slot); !ok || to != mig.To {
		if err := g.markOut(mig); err != nil {
			return err
		}
	}
	return g.runMove(mig, term)
}

// markOut gives the target this group's function libraries, clears any old
// out-mark of the slot in the target, then marks it migrating out here (the
// target first: it must serve ASKING requests).
func (g *Group) markOut(mig meta.Migration) error {
	if err := g.copyFunctions(mig.To); err != nil {
		return fmt.Errorf("copy function libraries to group %d: %w", mig.To, err)
	}
	if err := g.node.proposeTo(g.ctx, mig.To, fsm.MigrateInEntry(mig.Slot)); err != nil {
		return fmt.Errorf("clear slot %d in group %d: %w", mig.Slot, mig.To, err)
	}
	if err := g.proposeMove(fsm.MigrateOutEntry(mig.Slot, mig.To)); err != nil {
		return fmt.Errorf("mark slot %d migrating: %w", mig.Slot, err)
	}
	return nil
}

// copyFunctions makes the target group hold every function library of this
// one (FUNCTION RESTORE … REPLACE), before the slot is marked out and so
// before any of its keys can be served there: FCALL on a moved key must
// find its library, and a group created by scale-out starts with none
// (FUNCTION changes reach only the groups that exist when they are made).
// REPLACE, not FLUSH: a target that receives slots from several groups
// keeps what each gave it. Once a target has this group's libraries, a
// later change goes to it through FUNCTION's own fan-out, so the copy is
// skipped while the libraries here stay the same (fnCopied).
func (g *Group) copyFunctions(to uint32) error {
	ctx, cancel := context.WithTimeout(g.ctx, requestTimeout)
	defer cancel()
	var dump []byte
	if err := g.Read(ctx, func(st fsm.Reader) {
		if st.LibraryCount() > 0 {
			dump = st.FunctionDump()
		}
	}); err != nil || dump == nil {
		return err
	}
	g.fnMu.Lock()
	done := g.fnCopied[to] == string(dump)
	g.fnMu.Unlock()
	if done {
		return nil
	}
	target, ok := g.node.Group(to)
	if !ok {
		return fmt.Errorf("no group %d in the map", to)
	}
	r, err := g.node.applyFunctionTo(ctx, target, [][]byte{[]byte("RESTORE"), dump, []byte("REPLACE")})
	if err != nil {
		return err
	}
	if r.Reply.IsError() && !r.Applied {
		return fmt.Errorf("group %d: %s", to, r.Reply.Str)
	}
	g.fnMu.Lock()
	if g.fnCopied == nil {
		g.fnCopied = map[uint32]string{}
	}
	g.fnCopied[to] = string(dump)
	g.fnMu.Unlock()
	return nil
}

// runMove empties the slot, then flips its owner unless the migration is held.
func (g *Group) runMove(mig meta.Migration, term uint64) error {
	for {
		if g.raft.State() != raft.Leader || g.raft.CurrentTerm() != term {
			return errMoveLeader
		}
		frozen, live, err := g.slotKeys(mig.Slot)
		if err != nil {
			return err
		}
		switch {
		case len(frozen) > 0:
			if err := g.copyFrozen(mig, term); err != nil {
				return err
			}
		case len(live) > 0:
			if err := g.proposeMove(fsm.FreezeEntry(mig.Slot, live)); err != nil {
				return fmt.Errorf("freeze %d keys of slot %d: %w", len(live), mig.Slot, err)
			}
		case mig.Hold:
			return nil // empty; CLUSTER SETSLOT … NODE flips the owner
		default:
			return g.node.finishMigration(g.ctx, mig)
		}
	}
}

// slotKeys reads, linearizably, the slot's frozen keys and up to a batch
// of its other live keys.
func (g *Group) slotKeys(slot uint16) (frozen, live [][]byte, err error) {
	ctx, cancel := context.WithTimeout(g.ctx, requestTimeout)
	defer cancel()
	err = g.Read(ctx, func(st fsm.Reader) {
		frozen = st.Frozen(slot)
		if len(frozen) == 0 {
			live = st.LiveKeysInSlot(ReadNow(st), slot, moveBatchKeys)
		}
	})
	return frozen, live, err
}

// copyFrozen copies the frozen keys into the target, then drops them here.
func (g *Group) copyFrozen(mig meta.Migration, term uint64) error {
	var frozen, recs [][]byte
	ctx, cancel := context.WithTimeout(g.ctx, requestTimeout)
	defer cancel()
	err := g.Read(ctx, func(st fsm.Reader) {
		frozen = st.Frozen(mig.Slot)
		recs = st.ExportRecords(ReadNow(st), frozen)
	})
	if err != nil {
		return err
	}
	for _, part := range splitBySize(recs, moveBatchBytes) {
		if err := g.node.proposeTo(g.ctx, mig.To, fsm.ImportEntry(mig.Slot, g.id, term, g.moveSeq.Add(1), part)); err != nil {
			return fmt.Errorf("import %d keys of slot %d into group %d: %w", len(part), mig.Slot, mig.To, err)
		}
	}
	if err := g.proposeMove(fsm.DropEntry(mig.Slot, frozen)); err != nil {
		return fmt.Errorf("drop %d keys of slot %d: %w", len(frozen), mig.Slot, err)
	}
	return nil
}

// splitBySize cuts recs into runs of at most max bytes (a record larger
// than max is a run of its own).
func splitBySize(recs [][]byte, max int) [][][]byte {
	var out [][][]byte
	start, size := 0, 0
	for i, r := range recs {
		if i > start && size+len(r) > max {
			out = append(out, recs[start:i])
			start, size = i, 0
		}
		size += len(r)
	}
	if start < len(recs) {
		out = append(out, recs[start:])
	}
	return out
}

// proposeMove proposes a migration entry to this (source) group and fails
// if any of its ops was refused.
func (g *Group) proposeMove(e *fsm.Entry) error {
	ctx, cancel := context.WithTimeout(g.ctx, requestTimeout)
	defer cancel()
	return g.proposeEntry(ctx, e)
}

// finishMigration flips the slot's owner in the map; a retry of a flip
// that already happened is not an error. The flips of slots finishing at
// the same time share one meta entry (finishLoop).
func (n *Node) finishMigration(ctx context.Context, mig meta.Migration) error {
	req := finishReq{mig: mig, done: make(chan error, 1)}
	select {
	case n.finishc <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		if err != nil {
			return fmt.Errorf("finish migration of slot %d: %w", mig.Slot, err)
		}
		n.log.Debug("slot migrated", "slot", mig.Slot, "from", mig.From, "to", mig.To)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type finishReq struct {
	mig  meta.Migration
	done chan error // buffered 1
}

// maxFinishBatch bounds the flips proposed in one meta entry.
const maxFinishBatch = 256

// finishLoop proposes the waiting flips as one FinishMigrations entry; if
// that fails, each one alone, so one bad request does not fail the others.
func (n *Node) finishLoop() {
	for {
		var reqs []finishReq
		select {
		case r := <-n.finishc:
			reqs = append(reqs, r)
		case <-n.ctx.Done():
			return
		}
	collect:
		for len(reqs) < maxFinishBatch {
			select {
			case r := <-n.finishc:
				reqs = append(reqs, r)
			default:
				break collect
			}
		}
		n.proposeFinishes(reqs)
	}
}

func (n *Node) proposeFinishes(reqs []finishReq) {
	ctx, cancel := context.WithTimeout(n.ctx, requestTimeout)
	defer cancel()
	batch := meta.FinishMigrations{}
	for _, r := range reqs {
		batch.List = append(batch.List, r.mig)
	}
	err := n.ProposeMeta(ctx, batch)
	for _, r := range reqs {
		if err != nil && len(reqs) > 1 {
			r.done <- n.ProposeMeta(ctx, meta.FinishMigration(r.mig))
			continue
		}
		r.done <- err
	}
	n.log.Info("slot migrations finished", "count", len(reqs), "err", err)
}
