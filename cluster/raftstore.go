package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/slotraft/slotraft/cluster/transport"
	"go.etcd.io/bbolt"
)

// raftHandle is one Raft instance of this node (a slot group or the meta
// group) with the stores it owns.
type raftHandle struct {
	raft     *raft.Raft
	bolt     *raftboltdb.BoltStore
	planted  *writeBackLogs // only in builds with -tags plantbug_ack
	existing bool           // the data dir held Raft state when it was opened
}

// openRaft opens (creating) the Raft state in dir for bus group id. boot
// is called with the new raft when dir held no state and may bootstrap it.
func (n *Node) openRaft(dir string, id uint32, f raft.FSM, log *slog.Logger, boot func(*raft.Raft) error) (*raftHandle, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	hl := newHCLog(log, "raft", slog.LevelInfo)
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path: filepath.Join(dir, "raft.db"), BoltOptions: &bbolt.Options{Timeout: time.Second},
	})
	if err != nil {
		return nil, fmt.Errorf("log store: %w", err)
	}
	h := &raftHandle{bolt: bolt}
	fail := func(err error) (*raftHandle, error) {
		_ = h.closeStores()
		return nil, err
	}
	var store raft.LogStore = bolt
	if plantAckBeforeDurable {
		h.planted = newWriteBackLogs(bolt, log)
		store = h.planted
	}
	logs, err := raft.NewLogCache(logCacheSize, store)
	if err != nil {
		return fail(err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotRetain, hl.Named("snapshots"))
	if err != nil {
		return fail(fmt.Errorf("snapshot store: %w", err))
	}
	if h.existing, err = raft.HasExistingState(logs, bolt, snaps); err != nil {
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
	if h.raft, err = raft.NewRaft(rc, f, logs, bolt, snaps, trans); err != nil {
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

// close shuts the Raft down (and with it its transport), then the stores.
func (h *raftHandle) close() error {
	err := h.raft.Shutdown().Error()
	return errors.Join(err, h.closeStores())
}

// closeStores writes what the planted bug's store holds, then closes the
// real one.
func (h *raftHandle) closeStores() error {
	var err error
	if h.planted != nil {
		err = h.planted.close()
	}
	return errors.Join(err, h.bolt.Close())
}
