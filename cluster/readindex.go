package cluster

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
)

// Linearizable reads, the read-index recipe on hashicorp/raft: a leader
// serves reads only after a Barrier committed in its current term has been
// applied (so its state holds everything committed before it was elected),
// and only after a VerifyLeader round started after the read arrived (so a
// deposed leader in a minority never answers). One VerifyLeader serves
// every read waiting at that moment.

const maxReadBatch = 4096

// ReadNow is the time a read of st runs at: the leader's clock, never
// before the time of the last applied entry (so a key the log already
// expired stays expired).
func ReadNow(st fsm.Reader) int64 {
	return max(time.Now().UnixMilli(), st.LastNow())
}

type readWaiter struct {
	done chan error // buffered 1
}

// Read runs fn against the group's state once this node is known to be the
// leader with every committed entry applied. ErrNotLeader (wrapped) if it is
// not; ctx.Err() if the caller gave up first.
func (g *Group) Read(ctx context.Context, fn func(st fsm.Reader)) error {
	if !g.local {
		return ErrNotLeader
	}
	closed := g.ctx.Done()
	w := &readWaiter{done: make(chan error, 1)}
	select {
	case g.readc <- w:
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return ErrNotLeader
	}
	select {
	case err := <-w.done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return ErrNotLeader
	}
	fn(g.fsm.State())
	return nil
}

// ReadRounds is how many read-index rounds the group ran here: each one
// served every read waiting when it started.
func (g *Group) ReadRounds() uint64 { return g.readRounds.Load() }

// readLoop confirms leadership once per batch of waiting reads.
func (g *Group) readLoop() {
	batch := make([]*readWaiter, 0, 64)
	for {
		select {
		case w := <-g.readc:
			batch = append(batch[:0], w)
		case <-g.ctx.Done():
			g.drainReads()
			return
		}
	collect:
		for len(batch) < maxReadBatch {
			select {
			case w := <-g.readc:
				batch = append(batch, w)
			default:
				break collect
			}
		}
		err := g.readIndex()
		g.readRounds.Add(1)
		for _, w := range batch {
			w.done <- err
		}
		clear(batch)
	}
}

func (g *Group) drainReads() {
	for {
		select {
		case w := <-g.readc:
			w.done <- ErrNotLeader
		default:
			return
		}
	}
}

// readIndex returns nil when reads may be served from the local state now.
func (g *Group) readIndex() error {
	if plantSkipReadIndex && g.raft.State() == raft.Leader {
		return nil // the planted bug of `-tags plantbug`: no barrier, no VerifyLeader
	}
	return confirmLeader(g.raft, &g.barrier)
}

// confirmLeader returns nil when r leads and its state machine holds
// everything committed until now: a Barrier of its current term is applied
// (once per term; barrier records the term), so is everything committed
// before it was elected, and a VerifyLeader round started after the call
// succeeded, so a deposed leader in a minority never passes. Else an error
// wrapping ErrNotLeader.
func confirmLeader(r *raft.Raft, barrier *atomic.Uint64) error {
	for range 3 {
		if r.State() != raft.Leader {
			return ErrNotLeader
		}
		term := r.CurrentTerm()
		if barrier.Load() != term {
			if err := r.Barrier(0).Error(); err != nil {
				return fmt.Errorf("%w: barrier: %w", ErrNotLeader, err)
			}
			barrier.Store(term)
		}
		if err := r.VerifyLeader().Error(); err != nil {
			return fmt.Errorf("%w: verify leader: %w", ErrNotLeader, err)
		}
		// Leadership verified in some term between the two reads of the
		// term; if that is the barrier's term, the state is complete.
		if r.CurrentTerm() == term {
			return nil
		}
	}
	return ErrNotLeader
}
