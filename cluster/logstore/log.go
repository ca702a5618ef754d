package logstore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble"
	"github.com/hashicorp/raft"
)

// GroupLog is one group's Raft log in the node-wide DB: a raft.LogStore.
type GroupLog struct {
	db     *DB
	prefix uint64

	// wmu orders this log's writes: the cached bounds are updated after
	// each commit, in commit order. Raft appends from its main goroutine
	// and compacts from its snapshot goroutine. Other groups' logs have
	// their own, so their commits still meet in pebble's pipeline.
	wmu         sync.Mutex
	first, last atomic.Uint64
	closed      atomic.Bool
}

var _ raft.LogStore = (*GroupLog)(nil)

// Prefix is the log's key prefix.
func (l *GroupLog) Prefix() uint64 { return l.prefix }

// Close releases the log (its entries stay); the DB stays open.
func (l *GroupLog) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.db.release(l)
	return nil
}

// enter is DB.enter, refused also once this log is closed.
func (l *GroupLog) enter() error {
	if l.closed.Load() || !l.db.enter() {
		return ErrClosed
	}
	return nil
}

// reload reads the bounds from the store (the caller holds off writers).
func (l *GroupLog) reload() error {
	first, last, err := l.db.bounds(l.prefix)
	if err != nil {
		return err
	}
	l.first.Store(first)
	l.last.Store(last)
	return nil
}

// FirstIndex is the first index stored, 0 when the log is empty.
func (l *GroupLog) FirstIndex() (uint64, error) { return l.first.Load(), nil }

// LastIndex is the last index stored, 0 when the log is empty.
func (l *GroupLog) LastIndex() (uint64, error) { return l.last.Load(), nil }

// GetLog reads the entry at index, raft.ErrLogNotFound when there is none.
func (l *GroupLog) GetLog(index uint64, out *raft.Log) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.db.leave()
	v, closer, err := l.db.pdb.Get(logKey(l.prefix, index))
	if errors.Is(err, pebble.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("logstore: log %016x: get %d: %w", l.prefix, index, err)
	}
	err = decodeLog(v, out)
	_ = closer.Close() // decodeLog copied what it keeps
	if err == nil && out.Index != index {
		err = fmt.Errorf("%w: key says index %d, entry says %d", errCorrupt, index, out.Index)
	}
	if err != nil {
		return fmt.Errorf("logstore: log %016x: get %d: %w", l.prefix, index, err)
	}
	return nil
}

// StoreLog stores one entry.
func (l *GroupLog) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

// StoreLogs stores the entries in one batch committed with a sync: when
// it returns they are on disk. Concurrent commits of other groups join the
// same WAL sync.
func (l *GroupLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	lo, hi := logs[0].Index, logs[0].Index
	for _, e := range logs {
		if e.Index == 0 {
			return fmt.Errorf("logstore: log %016x: index 0 (Raft's first index is 1)", l.prefix)
		}
		lo, hi = min(lo, e.Index), max(hi, e.Index)
	}
	fill := func(b *pebble.Batch) error {
		var buf []byte
		for _, e := range logs {
			buf = appendLog(buf[:0], e)
			if err := b.Set(logKey(l.prefix, e.Index), buf, nil); err != nil { // Set copies buf
				return err
			}
		}
		return nil
	}
	return l.write("store", lo, hi, fill, func() error {
		if first := l.first.Load(); first == 0 || lo < first {
			l.first.Store(lo)
		}
		if hi > l.last.Load() {
			l.last.Store(hi)
		}
		return nil
	})
}

// DeleteRange deletes the entries min..max (inclusive) with one range
// tombstone, committed with a sync. Raft calls it to drop the head after a
// snapshot and to drop a follower's conflicting tail before it appends the
// leader's entries: the sync makes the deletion durable before that append.
// Pebble reclaims the space in background compactions; nothing here waits
// for one.
func (l *GroupLog) DeleteRange(lo, hi uint64) error {
	if lo > hi {
		return nil
	}
	fill := func(b *pebble.Batch) error {
		return b.DeleteRange(logKey(l.prefix, lo), indexEnd(l.prefix, hi), nil)
	}
	// Two seeks afterwards: exact even if the range left a hole or missed the log.
	return l.write("delete", lo, hi, fill, l.reload)
}

// write is the one way a change reaches the log: fill builds a batch, which
// is committed with a sync, and after updates the cached bounds, both
// under the write lock so bounds and disk change together.
func (l *GroupLog) write(op string, lo, hi uint64, fill func(*pebble.Batch) error, after func() error) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.db.leave()
	b := l.db.pdb.NewBatch()
	defer b.Close()
	if err := fill(b); err != nil {
		return fmt.Errorf("logstore: log %016x: %w", l.prefix, err)
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("logstore: log %016x: %s %d-%d: %w", l.prefix, op, lo, hi, err)
	}
	return after()
}
