package logstore

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/hashicorp/raft"
)

// syncCountFS counts the full syncs of pebble's WAL files (*.log) and can
// make each take delay longer, as a slow disk's fsync does: on a fast disk
// the writers would rarely overlap, and the test would prove nothing.
type syncCountFS struct {
	vfs.FS
	delay time.Duration
	syncs atomic.Int64
}

const walSyncDelay = 2 * time.Millisecond

func (fs *syncCountFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return &syncCountFile{File: f, fs: fs}, nil
}

func (fs *syncCountFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	return fs.wrap(name, f, err)
}

func (fs *syncCountFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname)
	return fs.wrap(newname, f, err)
}

type syncCountFile struct {
	vfs.File
	fs *syncCountFS
}

func (f *syncCountFile) Sync() error {
	f.fs.syncs.Add(1)
	time.Sleep(f.fs.delay)
	return f.File.Sync()
}

func (f *syncCountFile) SyncData() error {
	f.fs.syncs.Add(1)
	time.Sleep(f.fs.delay)
	return f.File.SyncData()
}

// TestGroupCommit: synced batches of different groups written at once share
// WAL syncs, while one writer alone pays one sync per batch.
func TestGroupCommit(t *testing.T) {
	const batches = 60
	for _, tt := range []struct {
		writers  int
		maxShare float64 // most syncs per batch allowed
		minShare float64
	}{
		{writers: 1, minShare: 0.9, maxShare: 1.1},
		{writers: 4, minShare: 0, maxShare: 0.75},
	} {
		fs := &syncCountFS{FS: vfs.Default, delay: walSyncDelay}
		db, err := openFS(t.TempDir(), quiet(), fs)
		if err != nil {
			t.Fatal(err)
		}
		before := fs.syncs.Load()
		start := time.Now()
		var wg sync.WaitGroup
		for w := range tt.writers {
			l := openLog(t, db, uint64(w+1))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := uint64(1); i <= batches; i++ {
					if err := l.StoreLogs([]*raft.Log{entry(i, 1)}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		syncs := fs.syncs.Load() - before
		total := tt.writers * batches
		share := float64(syncs) / float64(total)
		t.Logf("%d writers: %d synced batches, %d WAL syncs (%.2f per batch), %v", tt.writers, total, syncs, share, time.Since(start))
		if share < tt.minShare || share > tt.maxShare {
			t.Errorf("%d writers: %.2f WAL syncs per batch, want %.2f..%.2f", tt.writers, share, tt.minShare, tt.maxShare)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
