package cluster

import (
	"bytes"
	"context"
	"math"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/store"
)

// Active expiry: the leader of each group proposes deletions of the keys
// whose deadline has passed, as EntryExpire log entries, so every replica
// deletes the same keys at the same log position.

const expireTimeout = 5 * time.Second

func (g *Group) expiryLoop() {
	t := time.NewTimer(g.node.Expiry().period())
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		g.expireCycle(g.node.Expiry())
		t.Reset(g.node.Expiry().period()) // hz may have changed
	}
}

// expireCycle is one tick of active expiry on a group led here: batches
// of expired keys while the last one was full, up to the cycle's rounds
// and time; more expired keys left then is Redis's time cap reached
// (expired_time_cap_reached_count).
func (g *Group) expireCycle(c ExpiryConfig) {
	if !g.IsLeader() || g.node.expiryPaused() {
		return
	}
	start := time.Now()
	batch, rounds, budget := c.batch(), c.rounds(), c.budget()
	found, volatile := 0, 0
	for round := range rounds {
		n, v := g.expireOnce(batch)
		found += n
		if round == 0 {
			volatile = v
		}
		if n < batch {
			break
		}
		if round == rounds-1 || time.Since(start) > budget {
			g.node.expiry.capReached.Add(1)
			break
		}
		if !g.IsLeader() || g.node.expiryPaused() {
			break
		}
	}
	g.node.expiry.noteCycle(found, volatile)
}

// expireOnce proposes one batch of up to batch expired keys; it returns
// how many it proposed and how many keys of the group have a deadline.
func (g *Group) expireOnce(batch int) (int, int) {
	st := g.fsm.State()
	start := time.Now()
	now := max(start.UnixMilli(), st.LastNow())
	var keys [][]byte
	volatile := 0
	st.View(func(s store.Reader) {
		volatile = s.ExpiringLen()
		for _, k := range s.Expired(now, batch) {
			keys = append(keys, bytes.Clone(k))
		}
	})
	g.node.expiry.cycleNanos.Add(int64(time.Since(start)))
	if len(keys) == 0 {
		return 0, volatile
	}
	ctx, cancel := context.WithTimeout(g.ctx, expireTimeout)
	defer cancel()
	if err := g.proposeEntry(ctx, &fsm.Entry{Type: fsm.EntryExpire, Cmds: [][][]byte{keys}}); err != nil {
		g.log.Debug("active expiry not proposed", "keys", len(keys), "err", err)
		return 0, volatile
	}
	return len(keys), volatile
}

// expiryStats are INFO's expiry counters of a node, over the groups it
// leads. Expired keys are counted when an entry that deletes them applies
// on the group's leader (ApplyResult.Expired): active expiry's, and a
// write's that meets an expired leftover.
type expiryStats struct {
	expired    atomic.Int64  // expired_keys
	capReached atomic.Int64  // expired_time_cap_reached_count
	cycleNanos atomic.Int64  // expire_cycle_cpu_milliseconds, in ns
	stale      atomic.Uint64 // expired_stale_perc (float64 bits), 0..1
	off        atomic.Bool   // DEBUG SET-ACTIVE-EXPIRE 0
}

// noteCycle folds a cycle's share of expired keys among the keys with a
// deadline into the running average, as Redis's activeExpireCycle does
// with its samples (5% weight to the new cycle).
func (e *expiryStats) noteCycle(found, volatile int) {
	cur := 0.0
	if volatile > 0 {
		cur = min(float64(found)/float64(volatile), 1)
	}
	for {
		old := e.stale.Load()
		v := cur*0.05 + math.Float64frombits(old)*0.95
		if e.stale.CompareAndSwap(old, math.Float64bits(v)) {
			return
		}
	}
}

// ExpiryStats are INFO's expiry counters.
type ExpiryStats struct {
	ExpiredKeys    int64
	StalePerc      float64 // percent
	TimeCapReached int64
	CycleCPUMillis int64
}

// ExpiryStats returns this node's expiry counters.
func (n *Node) ExpiryStats() ExpiryStats {
	e := &n.expiry
	return ExpiryStats{ExpiredKeys: e.expired.Load(), StalePerc: 100 * math.Float64frombits(e.stale.Load()),
		TimeCapReached: e.capReached.Load(), CycleCPUMillis: e.cycleNanos.Load() / int64(time.Millisecond)}
}

// ResetExpiryStats zeroes the counters (CONFIG RESETSTAT).
func (n *Node) ResetExpiryStats() {
	e := &n.expiry
	e.expired.Store(0)
	e.capReached.Store(0)
	e.cycleNanos.Store(0)
	e.stale.Store(0)
}

// PauseExpiry stops active expiry in every group led here until the
// given time (the zero time resumes it at once), as Redis pauses expiry
// during CLIENT PAUSE: keys past their deadline stay in the state, hidden
// from reads, until the pause ends. A later call replaces the time.
func (n *Node) PauseExpiry(until time.Time) {
	if until.IsZero() {
		n.expiryPausedUntil.Store(0)
		return
	}
	n.expiryPausedUntil.Store(until.UnixNano())
}

// SetActiveExpire turns active expiry of the groups led here off or back
// on (DEBUG SET-ACTIVE-EXPIRE): while off, expired keys stay in the state,
// hidden from reads, until a write meets them or expiry is on again.
func (n *Node) SetActiveExpire(on bool) { n.expiry.off.Store(!on) }

func (n *Node) expiryPaused() bool {
	if n.expiry.off.Load() {
		return true
	}
	until := n.expiryPausedUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}
