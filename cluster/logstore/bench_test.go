package logstore

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// benchStore opens one log per group in dir; it returns a func closing
// them all and, for pebble, one counting WAL syncs so far.
type benchStore func(b *testing.B, dir string, groups int) ([]raft.LogStore, func(), func() int64)

// BenchmarkStoreLogs compares the log stores a node can use: raft-boltdb
// and raft-wal with a store per group, and one pebble DB for every group.
// Each of `groups` goroutines appends synced batches to its own log; an
// op is one batch, whichever group wrote it, so ns/op is the node's
// aggregate cost per batch. Run it on a real disk: the temp dir, or
// LOGSTORE_BENCH_DIR.
func BenchmarkStoreLogs(b *testing.B) {
	stores := []struct {
		name string
		open benchStore
	}{{"bolt", openBolts}, {"wal", openWALs}, {"pebble", openPebble}}
	for _, s := range stores {
		for _, groups := range []int{1, 3} {
			for _, batch := range []int{1, 16} {
				b.Run(fmt.Sprintf("%s/groups=%d/batch=%d", s.name, groups, batch), func(b *testing.B) {
					benchAppend(b, s.open, groups, batch)
				})
			}
		}
	}
}

func benchAppend(b *testing.B, open benchStore, groups, batch int) {
	dir := b.TempDir()
	if base := os.Getenv("LOGSTORE_BENCH_DIR"); base != "" {
		var err error
		if dir, err = os.MkdirTemp(base, "bench"); err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	logs, closeAll, syncs := open(b, dir, groups)
	defer closeAll()
	data := make([]byte, 100)
	var left atomic.Int64
	left.Store(int64(b.N))
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for _, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := uint64(1)
			for left.Add(-1) >= 0 {
				entries := make([]*raft.Log, batch)
				for i := range entries {
					entries[i] = &raft.Log{Index: next, Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
					next++
				}
				if err := l.StoreLogs(entries); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "entries/s")
	if syncs != nil {
		b.ReportMetric(float64(syncs())/float64(b.N), "syncs/op")
	}
}

func openBolts(b *testing.B, dir string, groups int) ([]raft.LogStore, func(), func() int64) {
	var logs []raft.LogStore
	var closers []io.Closer
	for g := range groups {
		s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, fmt.Sprintf("raft-%d.db", g))})
		if err != nil {
			b.Fatal(err)
		}
		logs, closers = append(logs, s), append(closers, s)
	}
	return logs, func() { closeEach(closers) }, nil
}

func openWALs(b *testing.B, dir string, groups int) ([]raft.LogStore, func(), func() int64) {
	var logs []raft.LogStore
	var closers []io.Closer
	for g := range groups {
		d := filepath.Join(dir, fmt.Sprintf("wal-%d", g))
		if err := os.MkdirAll(d, 0o750); err != nil {
			b.Fatal(err)
		}
		meta := &metadb.BoltMetaDB{} // raft-wal v0.4.0's Close leaves its own open
		w, err := raftwal.Open(d, raftwal.WithMetaStore(meta))
		if err != nil {
			b.Fatal(err)
		}
		logs, closers = append(logs, w), append(closers, w, meta)
	}
	return logs, func() { closeEach(closers) }, nil
}

func openPebble(b *testing.B, dir string, groups int) ([]raft.LogStore, func(), func() int64) {
	fs := &syncCountFS{FS: vfs.Default}
	db, err := openFS(dir, quiet(), fs)
	if err != nil {
		b.Fatal(err)
	}
	var logs []raft.LogStore
	for g := range groups {
		logs = append(logs, openLog(b, db, uint64(g+1)))
	}
	before := fs.syncs.Load()
	return logs, func() { _ = db.Close() }, func() int64 { return fs.syncs.Load() - before }
}

func closeEach(cs []io.Closer) {
	for _, c := range cs {
		_ = c.Close()
	}
}
