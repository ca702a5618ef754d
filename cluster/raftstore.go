package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/slotraft/slotraft/cluster/logstore"
	"github.com/slotraft/slotraft/cluster/transport"
	"go.etcd.io/bbolt"
)

// raftHandle is one Raft instance of this node (a slot group or the meta
// group) with the stores it owns.
type raftHandle struct {
	raft     *raft.Raft
	stable   *raftboltdb.BoltStore // term and vote; also the log of a bolt-log group
	log      raft.LogStore         // the group's log store, under raft's LogCache
	closeLog func() error          // nil when the log is stable's
	planted  *writeBackLogs        // only in builds with -tags plantbug_ack
	metrics  *raftMetrics          // timings of the FSM, the log store, snapshots (raftmetrics.go)
	existing bool                  // the data dir held Raft state when it was opened
}

// openRaft opens (creating) the Raft state in dir for bus group id. boot
// is called with the new raft when dir held no state and may bootstrap it.
func (n *Node) openRaft(dir string, id uint32, f raft.FSM, log *slog.Logger, boot func(*raft.Raft) error) (*raftHandle, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	hl := newHCLog(log, "raft", slog.LevelInfo)
	h, err := n.openStores(dir, hl)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*raftHandle, error) {
		_ = h.closeStores()
		return nil, err
	}
	var store raft.LogStore = h.log
	if plantAckBeforeDurable {
		h.planted = newWriteBackLogs(h.log, log)
		store = h.planted
	}
	h.metrics = &raftMetrics{}
	logs, err := raft.NewLogCache(logCacheSize, timedLogs{LogStore: store, m: h.metrics})
	if err != nil {
		return fail(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotRetain, hl.Named("snapshots"))
	if err != nil {
		return fail(fmt.Errorf("snapshot store: %w", err))
	}
	timedSnaps := timedSnapshots{SnapshotStore: snaps, m: h.metrics}
	if h.existing, err = raft.HasExistingState(logs, h.stable, timedSnaps); err != nil {
		return fail(err)
	}
	rc := n.cfg.raftConfig()
	rc.Logger = hl
	trans, err := n.mux.Transport(id, transport.TransportOptions{
		Logger: hl.Named("transport"), Timeout: 10 * rc.HeartbeatTimeout,
	})
	if err != nil {
		return fail(err)
	}
	if h.raft, err = raft.NewRaft(rc, timedFSM{FSM: f, m: h.metrics}, logs, h.stable, timedSnaps, trans); err != nil {
		_ = trans.Close()
		return fail(err)
	}
	if !h.existing && boot != nil {
		if err := boot(h.raft); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			_ = h.close()
			return nil, fmt.Errorf("bootstrap: %w", err)
		}
	}
	return h, nil
}

// openStores opens dir's stable store and the log store its marker names.
// The marker is read (or written, for a new dir) before raft.db exists, so
// that raft.db without a marker always means an old bolt-log directory.
func (n *Node) openStores(dir string, hl hclog.Logger) (*raftHandle, error) {
	choice, err := n.chooseLog(dir)
	if err != nil {
		return nil, fmt.Errorf("log store: %w", err)
	}
	stable, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, boltFileName), BoltOptions: &bbolt.Options{Timeout: time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("stable store: %w", err)
	}
	h := &raftHandle{stable: stable, log: stable}
	switch choice.kind {
	case LogStoreBolt:
	case LogStorePebble:
		if n.raftlog == nil {
			err = errors.New("the node-wide log store is not open")
			break
		}
		var l *logstore.GroupLog
		if l, err = n.raftlog.Log(choice.prefix); err == nil {
			h.log, h.closeLog = l, l.Close
		}
	case LogStoreWAL:
		h.log, h.closeLog, err = openWAL(filepath.Join(dir, walDirName), hl)
	default:
		err = fmt.Errorf("unknown log store %q", choice.kind)
	}
	if err != nil {
		_ = stable.Close()
		return nil, fmt.Errorf("log store %s: %w", choice, err)
	}
	return h, nil
}

func openWAL(dir string, hl hclog.Logger) (raft.LogStore, func() error, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, err
	}
	// Our own meta store: raft-wal v0.4.0's Close leaves the one it
	// makes open, and its file lock then hangs the next Open.
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(dir, raftwal.WithLogger(hl.Named("wal")), raftwal.WithMetaStore(meta))
	if err != nil {
		return nil, nil, errors.Join(err, meta.Close())
	}
	return w, func() error { return errors.Join(w.Close(), meta.Close()) }, nil
}

// close shuts the Raft down (and with it its transport), then the stores.
func (h *raftHandle) close() error {
	err := h.raft.Shutdown().Error()
	return errors.Join(err, h.closeStores())
}

// closeStores writes what the planted bug's store holds, then closes the
// real ones.
func (h *raftHandle) closeStores() error {
	var err error
	if h.planted != nil {
		err = h.planted.close()
	}
	if h.closeLog != nil {
		err = errors.Join(err, h.closeLog())
	}
	return errors.Join(err, h.stable.Close())
}

// openRaftLog opens the node-wide pebble log store when a group may use
// it: new groups do (Config.LogStore), a marker names it, or it exists
// (so its sweep runs). The sweep drops every log that no group directory
// names: groups whose directories, moved aside or not, were deleted.
func (n *Node) openRaftLog() error {
	path := filepath.Join(n.cfg.DataDir, raftLogDir)
	named, scanErr := pebbleMarkers(n.cfg.DataDir)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) && scanErr == nil &&
		len(named) == 0 && n.cfg.LogStore != LogStorePebble {
		return nil
	}
	db, err := logstore.Open(path, n.log.With("store", raftLogDir))
	if err != nil {
		return err
	}
	n.raftlog = db
	if scanErr != nil {
		// Safe side: a directory whose marker cannot be read may name
		// any prefix. Its group will not open either, and says why.
		n.log.Warn("raft log store: unused logs not dropped: a group directory cannot be read", "err", scanErr)
		return nil
	}
	return n.sweepRaftLog(named)
}

// sweepRaftLog drops the logs of prefixes no marker names.
func (n *Node) sweepRaftLog(named map[uint64]string) error {
	prefixes, err := n.raftlog.Prefixes()
	if err != nil {
		return err
	}
	for _, p := range prefixes {
		if _, ok := named[p]; ok {
			continue
		}
		if err := n.raftlog.DropLog(p); err != nil {
			return err
		}
		n.log.Info("raft log store: dropped the log of a group directory that no longer exists", "prefix", p)
	}
	return nil
}
