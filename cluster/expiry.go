package cluster

import (
	"bytes"
	"context"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/store"
)

// Active expiry: the leader of each group proposes deletions of the keys
// whose deadline has passed, as EntryExpire log entries, so every replica
// deletes the same keys at the same log position.

const (
	expireEvery   = 100 * time.Millisecond
	expireBatch   = 200
	expireRounds  = 4 // full batches proposed per tick at most
	expireTimeout = 5 * time.Second
)

func (g *Group) expiryLoop() {
	t := time.NewTicker(expireEvery)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-t.C:
		}
		for range expireRounds {
			if !g.IsLeader() || g.node.expiryPaused() || g.expireOnce() < expireBatch {
				break
			}
		}
	}
}

// expireOnce proposes one batch of expired keys; it returns the batch size.
func (g *Group) expireOnce() int {
	st := g.fsm.State()
	now := max(time.Now().UnixMilli(), st.LastNow())
	var keys [][]byte
	st.View(func(s store.Reader) {
		for _, k := range s.Expired(now, expireBatch) {
			keys = append(keys, bytes.Clone(k))
		}
	})
	if len(keys) == 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(g.ctx, expireTimeout)
	defer cancel()
	if err := g.proposeEntry(ctx, &fsm.Entry{Type: fsm.EntryExpire, Cmds: [][][]byte{keys}}); err != nil {
		g.log.Debug("active expiry not proposed", "keys", len(keys), "err", err)
		return 0
	}
	return len(keys)
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

func (n *Node) expiryPaused() bool {
	until := n.expiryPausedUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}
