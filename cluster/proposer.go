package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
	"github.com/hashicorp/raft"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// The single place that calls raft.Apply: one proposer goroutine per hosted
// group collects the proposals waiting at that moment, encodes them as one
// fsm.Entry and applies it; a responder goroutine waits for the commits in
// order and hands each caller its slice of the replies.

const (
	maxBatchCmds   = 512
	maxBatchBytes  = 1 << 20
	maxInflight    = 16 // entries handed to Raft whose commit is not yet seen
	enqueueTimeout = 2 * time.Second
)

// The proposer's timings, next to Raft's own (raft.commitTime,
// raft.fsm.apply...) in the node's go-metrics sink: the first proposal's
// wait for the proposer, the entry's encoding, commands per entry, and
// Apply to outcome (Raft's log append, replication, commit and apply).
var (
	metricQueue  = []string{"slotraft", "propose", "queue"}
	metricEncode = []string{"slotraft", "propose", "encode"}
	metricBatch  = []string{"slotraft", "propose", "batch_cmds"}
	metricRaft   = []string{"slotraft", "propose", "raft"}
)

// proposal states: a caller may abandon a queued proposal; once handed to
// Raft its outcome can only come from Raft.
const (
	stateQueued int32 = iota
	stateHanded
	stateAbandoned
)

type proposal struct {
	queued time.Time // when the caller submitted it (metrics: queueing)
	cmds   [][][]byte
	entry  *fsm.Entry // non-nil: a special entry (expire), proposed alone
	origin uint64     // the caller's tag (WithOrigin, tracking.go); 0 for none
	user   []byte     // whom its scripts call commands as (WithScriptUser); nil: unchecked
	size   int
	state  atomic.Int32
	done   chan proposeResult // buffered 1; exactly one send
}

type proposeResult struct {
	outcomes []fsm.Outcome
	err      error
}

type inflight struct {
	f      raft.ApplyFuture
	seed   uint64 // the entry's seed, if its origins are kept (tracking.go)
	props  []*proposal
	handed time.Time // when raft.Apply took it (metrics: Raft's part)
}

// Propose proposes cmds (each a command's arguments, name first) as part of
// one log entry, batched with other callers', and returns one outcome per
// command once the entry is applied here.
//
// Errors: ErrNotLeader (wrapped) means nothing reached the log and the
// caller may redirect; an error wrapping resp.ErrOutcomeUnknown means the
// entry may have been appended and may yet commit, so it must not be
// retried on a client's behalf; ctx.Err() alone means the caller gave up
// before anything was handed to Raft.
func (g *Group) Propose(ctx context.Context, cmds [][][]byte) ([]fsm.Outcome, error) {
	if len(cmds) == 0 {
		return nil, nil
	}
	if !g.local {
		return nil, ErrNotLeader
	}
	size := 0
	for _, c := range cmds {
		for _, a := range c {
			size += len(a) + 8
		}
	}
	user := scriptUserFrom(ctx)
	size += len(user)
	return g.submit(ctx, &proposal{cmds: cmds, size: size, origin: originFrom(ctx), user: user, done: make(chan proposeResult, 1)})
}

// proposeEntry proposes a special entry (expiry, settings, slot migration)
// through the same path; the proposer sets its Now. An op the state
// machine refused is the error (it wraps fsm.ErrOpRefused).
func (g *Group) proposeEntry(ctx context.Context, e *fsm.Entry) error {
	_, err := g.proposeSpecial(ctx, e)
	return err
}

// proposeSpecial is proposeEntry returning the entry's outcomes (one per
// op), for entries whose ops answer clients (EntryFunctions).
func (g *Group) proposeSpecial(ctx context.Context, e *fsm.Entry) ([]fsm.Outcome, error) {
	if !g.local {
		return nil, ErrNotLeader
	}
	return g.submit(ctx, &proposal{entry: e, done: make(chan proposeResult, 1)})
}

func (g *Group) submit(ctx context.Context, p *proposal) ([]fsm.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.queued = time.Now()
	closed := g.ctx.Done()
	select {
	case g.propc <- p:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-closed:
		return nil, ErrNotLeader
	}
	select {
	case r := <-p.done:
		return r.outcomes, r.err
	case <-ctx.Done():
		if p.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", resp.ErrOutcomeUnknown, ctx.Err())
	case <-closed:
		if p.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return nil, ErrNotLeader
		}
		r := <-p.done // the responder answers every handed entry before Raft stops
		return r.outcomes, r.err
	}
}

// proposeLoop is the group's only caller of raft.Apply.
func (g *Group) proposeLoop() {
	defer close(g.inflight)
	var carry *proposal
	for {
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-g.propc:
			case <-g.ctx.Done():
				g.drainProposals()
				return
			}
		}
		batch := []*proposal{first}
		if first.entry == nil {
			batch, carry = g.collect(batch)
		}
		g.applyBatch(batch)
	}
}

// collect adds the proposals waiting right now to batch, within the
// limits; a proposal that does not fit is returned as carry.
func (g *Group) collect(batch []*proposal) ([]*proposal, *proposal) {
	ncmds, size := len(batch[0].cmds), batch[0].size
	for ncmds < maxBatchCmds && size < maxBatchBytes {
		select {
		case p := <-g.propc:
			if p.entry != nil || !sameUser(p.user, batch[0].user) || ncmds+len(p.cmds) > maxBatchCmds || size+p.size > maxBatchBytes {
				return batch, p
			}
			batch = append(batch, p)
			ncmds += len(p.cmds)
			size += p.size
		default:
			return batch, nil
		}
	}
	return batch, nil
}

// drainProposals answers every queued proposal at shutdown: never proposed.
func (g *Group) drainProposals() {
	for {
		select {
		case p := <-g.propc:
			p.done <- proposeResult{err: ErrNotLeader}
		default:
			return
		}
	}
}

// applyBatch encodes the live proposals of batch as one entry and hands it
// to Raft; the responder reports the outcome.
func (g *Group) applyBatch(batch []*proposal) {
	live := batch[:0]
	for _, p := range batch {
		if p.state.CompareAndSwap(stateQueued, stateHanded) {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		return
	}
	g.applyMu.Lock()
	defer g.applyMu.Unlock()
	if g.transferring || g.raft.State() != raft.Leader {
		failAll(live, ErrNotLeader)
		return
	}
	e := fsm.Entry{Type: fsm.EntryCommands, User: live[0].user}
	if live[0].entry != nil {
		e = *live[0].entry
	} else {
		for _, p := range live {
			e.Cmds = append(e.Cmds, p.cmds...)
		}
	}
	e.Now = g.nextNow()
	e.Seed = rand.Uint64()
	start := time.Now()
	metrics.MeasureSince(metricQueue, live[0].queued)
	data := e.Encode()
	metrics.MeasureSince(metricEncode, start)
	metrics.AddSample(metricBatch, float32(len(e.Cmds)))
	var kept uint64
	if live[0].entry == nil && g.origins.put(e.Seed, live) {
		kept = e.Seed // until the outcome is known (respondLoop)
	}
	f := g.raft.Apply(data, enqueueTimeout)
	g.inflightN.Add(1)
	g.inflight <- inflight{f: f, props: live, handed: start, seed: kept}
}

// nextNow is the entry time: the leader's clock, never before the time of
// an entry already proposed here or applied.
func (g *Group) nextNow() int64 {
	now := max(time.Now().UnixMilli(), g.fsm.State().LastNow(), g.lastNow)
	g.lastNow = now
	return now
}

// respondLoop waits for each handed entry's outcome, in order.
func (g *Group) respondLoop() {
	for in := range g.inflight {
		err := in.f.Error()
		if in.seed != 0 {
			g.origins.drop(in.seed) // applied here by now, or never will be as this leader's
		}
		if err != nil {
			failAll(in.props, applyError(err))
		} else {
			metrics.MeasureSince(metricRaft, in.handed)
			splitOutcomes(in.props, in.f.Response())
		}
		g.inflightN.Add(-1)
	}
}

// applyError maps a raft.Apply error to the safety rule: only errors that
// Raft returns before the entry is given a log index become ErrNotLeader.
func applyError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader),
		errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	default:
		// ErrLeadershipLost, ErrRaftShutdown, ErrAbortedByRestore, a log
		// store failure: the entry may be in the log and may commit.
		return fmt.Errorf("%w: %w", resp.ErrOutcomeUnknown, err)
	}
}

// splitOutcomes hands each proposal its outcomes from an applied entry.
func splitOutcomes(props []*proposal, response any) {
	var outcomes []fsm.Outcome
	var refused error
	switch r := response.(type) {
	case *fsm.ApplyResult:
		if r != nil {
			outcomes, refused = r.Outcomes, r.Err
		}
	case error:
		failAll(props, fmt.Errorf("%w: apply: %w", resp.ErrOutcomeUnknown, r))
		return
	}
	if len(props) == 1 && props[0].entry != nil { // a special entry: its outcomes, however many
		props[0].done <- proposeResult{outcomes: outcomes, err: refused}
		return
	}
	want := 0
	for _, p := range props {
		want += len(p.cmds)
	}
	if len(outcomes) != want {
		failAll(props, fmt.Errorf("%w: apply returned %d outcomes for %d commands", resp.ErrOutcomeUnknown, len(outcomes), want))
		return
	}
	for _, p := range props {
		n := len(p.cmds)
		p.done <- proposeResult{outcomes: outcomes[:n:n]}
		outcomes = outcomes[n:]
	}
}

func failAll(props []*proposal, err error) {
	for _, p := range props {
		p.done <- proposeResult{err: err}
	}
}
