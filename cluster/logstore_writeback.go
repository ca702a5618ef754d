package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// writeBackInterval is how long appended entries stay in memory only, in
// the planted-bug build (logstore_plantbug_ack.go).
const writeBackInterval = 250 * time.Millisecond

// writeBackLogs is the planted bug's log store: StoreLogs returns once the
// entries are queued in memory, and a goroutine writes the queue to the
// real store every writeBackInterval. Reads see the queue, so Raft works
// normally until the process dies without a clean shutdown. Only builds
// with -tags plantbug_ack use it.
type writeBackLogs struct {
	raft.LogStore
	log *slog.Logger

	mu      sync.Mutex
	pending []*raft.Log // contiguous indexes, after the real store's last
	err     error       // the first failed background write

	stop chan struct{}
	done chan struct{}
}

func newWriteBackLogs(s raft.LogStore, log *slog.Logger) *writeBackLogs {
	w := &writeBackLogs{LogStore: s, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	log.Warn("planted bug (plantbug_ack): log appends are acknowledged before they are written")
	go w.flushLoop()
	return w
}

func (w *writeBackLogs) flushLoop() {
	defer close(w.done)
	t := time.NewTicker(writeBackInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			w.mu.Lock()
			w.flushLocked()
			w.mu.Unlock()
		case <-w.stop:
			return
		}
	}
}

// flushLocked writes the queue to the real store; a failure is kept and
// returned by the next StoreLogs, as a late write error would be.
func (w *writeBackLogs) flushLocked() {
	if len(w.pending) == 0 {
		return
	}
	if err := w.LogStore.StoreLogs(w.pending); err != nil && w.err == nil {
		w.err = fmt.Errorf("write-back log: %w", err)
		w.log.Error("write-back log", "err", err)
	}
	w.pending = nil
}

// StoreLogs queues logs; a batch that does not follow the queue (Raft
// overwrites only after DeleteRange, which flushes) flushes it first.
func (w *writeBackLogs) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if n := len(w.pending); n > 0 && w.pending[n-1].Index+1 != logs[0].Index {
		w.flushLocked()
	}
	w.pending = append(w.pending, logs...)
	return nil
}

// IsMonotonic passes on the real store's answer: raft-wal is monotonic,
// and raft must then drop its whole log when it installs a snapshot.
func (w *writeBackLogs) IsMonotonic() bool {
	m, ok := w.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (w *writeBackLogs) StoreLog(l *raft.Log) error { return w.StoreLogs([]*raft.Log{l}) }

func (w *writeBackLogs) GetLog(index uint64, out *raft.Log) error {
	w.mu.Lock()
	if n := len(w.pending); n > 0 && index >= w.pending[0].Index && index <= w.pending[n-1].Index {
		*out = *w.pending[index-w.pending[0].Index]
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	return w.LogStore.GetLog(index, out)
}

func (w *writeBackLogs) FirstIndex() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	first, err := w.LogStore.FirstIndex()
	if err == nil && first == 0 && len(w.pending) > 0 {
		first = w.pending[0].Index
	}
	return first, err
}

func (w *writeBackLogs) LastIndex() (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.pending); n > 0 {
		return w.pending[n-1].Index, nil
	}
	return w.LogStore.LastIndex()
}

// DeleteRange flushes first, so that deletions and appends reach the real
// store in the order Raft made them.
func (w *writeBackLogs) DeleteRange(lo, hi uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return errors.Join(w.err, w.LogStore.DeleteRange(lo, hi))
}

// close stops the background writer and writes what is queued: only a
// process that dies without closing loses entries.
func (w *writeBackLogs) close() error {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	return w.err
}
