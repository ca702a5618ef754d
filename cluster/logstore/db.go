package logstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
)

// ErrClosed is returned by a GroupLog whose log or DB was closed.
var ErrClosed = errors.New("logstore: closed")

// Sizes kept modest: tests run dozens of in-process nodes, each with its
// own DB. A Raft log is written once and read back mostly from raft's
// LogCache, so a big block cache would buy little.
const (
	memTableSize  = 4 << 20
	blockCacheSz  = 8 << 20
	maxOpenFiles  = 256
	maxPrefixScan = 1 << 20 // Prefixes' bound: far more groups than a node hosts
)

// kindLog is the first key byte of log entries; other kinds of node-wide
// records would get other bytes.
const kindLog byte = 0x01

// DB is the node-wide log store: one pebble instance whose key space holds
// one log per group prefix.
type DB struct {
	pdb *pebble.DB
	log *slog.Logger

	// mu guards closed and open. Every operation holds it for reading,
	// so Close waits for writes in flight: pebble panics on a closed DB.
	mu     sync.RWMutex
	closed bool
	open   map[uint64]*GroupLog
}

// Open opens (creating) the store in dir. Pebble's own messages go to
// logger: informational ones at debug level, since it reports every
// flush and compaction.
func Open(dir string, logger *slog.Logger) (*DB, error) {
	return openFS(dir, logger, vfs.Default)
}

// openFS is Open on a given file system (tests count its syncs).
func openFS(dir string, logger *slog.Logger, fs vfs.FS) (*DB, error) {
	if logger == nil {
		logger = slog.Default()
	}
	cache := pebble.NewCache(blockCacheSz)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		FS:                 fs,
		Cache:              cache,
		MemTableSize:       memTableSize,
		MaxOpenFiles:       maxOpenFiles,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{logger},
		EventListener:      eventListener(logger),
	}
	pdb, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	return &DB{pdb: pdb, log: logger, open: map[uint64]*GroupLog{}}, nil
}

// eventListener reports what an operator should see (pebble's defaults
// log background errors at info level, and nothing for stalls).
func eventListener(log *slog.Logger) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) { log.Error("raft log store: background error", "err", err) },
		DiskSlow: func(info pebble.DiskSlowInfo) {
			log.Warn("raft log store: slow disk", "path", info.Path, "op", info.OpType.String(), "duration", info.Duration)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			log.Warn("raft log store: write stall", "reason", info.Reason)
		},
		WriteStallEnd: func() { log.Info("raft log store: write stall ended") },
	}
}

// pebbleLogger routes pebble's logger to slog.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
	}
}

// Fatalf must not return (pebble calls it on broken invariants, such as a
// corrupt manifest): it logs, then panics.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := "pebble: " + fmt.Sprintf(format, args...)
	l.log.Error(msg)
	panic(msg)
}

// Close closes the store. Open GroupLogs answer ErrClosed from then on.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	if err := db.pdb.Close(); err != nil {
		return fmt.Errorf("logstore: close: %w", err)
	}
	return nil
}

// enter takes the read side of mu unless the DB is closed.
func (db *DB) enter() bool {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return false
	}
	return true
}

func (db *DB) leave() { db.mu.RUnlock() }

// Log opens the log of prefix, computing its first and last index. A
// prefix is opened once at a time: two handles would cache different
// bounds.
func (db *DB) Log(prefix uint64) (*GroupLog, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, ErrClosed
	}
	if db.open[prefix] != nil {
		return nil, fmt.Errorf("logstore: log %016x is already open", prefix)
	}
	l := &GroupLog{db: db, prefix: prefix}
	if err := l.reload(); err != nil {
		return nil, err
	}
	db.open[prefix] = l
	return l, nil
}

// release forgets an open log (GroupLog.Close).
func (db *DB) release(l *GroupLog) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.open[l.prefix] == l {
		delete(db.open, l.prefix)
	}
}

// DropLog deletes the whole log of prefix with one range tombstone; pebble
// reclaims the space in its background compactions.
func (db *DB) DropLog(prefix uint64) error {
	// The write lock: no Log(prefix) may open it meanwhile. Drops are
	// rare (the sweep at a node's start), so blocking the other logs for
	// one sync is cheap.
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return ErrClosed
	}
	if db.open[prefix] != nil {
		return fmt.Errorf("logstore: drop log %016x: it is open", prefix)
	}
	b := db.pdb.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(logKey(prefix, 0), prefixEnd(prefix), nil); err != nil {
		return fmt.Errorf("logstore: drop log %016x: %w", prefix, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("logstore: drop log %016x: %w", prefix, err)
	}
	return nil
}

// HasLog reports whether any entry is stored under prefix.
func (db *DB) HasLog(prefix uint64) (bool, error) {
	if !db.enter() {
		return false, ErrClosed
	}
	defer db.leave()
	first, _, err := db.bounds(prefix)
	return first != 0, err
}

// Prefixes lists the prefixes that hold at least one entry, in order. It
// seeks from each prefix to the next instead of reading every entry.
func (db *DB) Prefixes() ([]uint64, error) {
	if !db.enter() {
		return nil, ErrClosed
	}
	defer db.leave()
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: []byte{kindLog}, UpperBound: []byte{kindLog + 1}})
	if err != nil {
		return nil, fmt.Errorf("logstore: prefixes: %w", err)
	}
	var out []uint64
	for ok := it.First(); ok && len(out) < maxPrefixScan; {
		p, _, kerr := parseKey(it.Key())
		if kerr != nil {
			err = kerr
			break
		}
		out = append(out, p)
		if p == math.MaxUint64 {
			break
		}
		ok = it.SeekGE(logKey(p+1, 0))
	}
	if len(out) >= maxPrefixScan {
		err = errors.Join(err, fmt.Errorf("logstore: prefixes: more than %d", maxPrefixScan))
	}
	if cerr := it.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("logstore: prefixes: %w", err)
	}
	return out, nil
}

// bounds reads the first and last index stored under prefix (0, 0 when
// none) with two seeks of an iterator bounded to the prefix; range
// tombstones let both skip deleted entries without reading them.
func (db *DB) bounds(prefix uint64) (first, last uint64, err error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: logKey(prefix, 0), UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, 0, fmt.Errorf("logstore: log %016x: %w", prefix, err)
	}
	if it.First() {
		_, first, err = parseKey(it.Key())
	}
	if err == nil && it.Last() {
		_, last, err = parseKey(it.Key())
	}
	err = errors.Join(err, it.Error(), it.Close())
	if err != nil {
		return 0, 0, fmt.Errorf("logstore: log %016x: %w", prefix, err)
	}
	return first, last, nil
}

// logKey is kindLog | prefix | index, both big endian so that keys sort
// by prefix, then index.
func logKey(prefix, index uint64) []byte {
	k := make([]byte, 17)
	k[0] = kindLog
	binary.BigEndian.PutUint64(k[1:], prefix)
	binary.BigEndian.PutUint64(k[9:], index)
	return k
}

// prefixEnd is the first key after every entry of prefix.
func prefixEnd(prefix uint64) []byte {
	if prefix == math.MaxUint64 {
		return []byte{kindLog + 1}
	}
	return logKey(prefix+1, 0)
}

// indexEnd is the first key after index in prefix's log.
func indexEnd(prefix, index uint64) []byte {
	if index == math.MaxUint64 {
		return prefixEnd(prefix)
	}
	return logKey(prefix, index+1)
}

func parseKey(k []byte) (prefix, index uint64, err error) {
	if len(k) != 17 || k[0] != kindLog {
		return 0, 0, fmt.Errorf("%w: bad key %x", errCorrupt, k)
	}
	return binary.BigEndian.Uint64(k[1:]), binary.BigEndian.Uint64(k[9:]), nil
}
