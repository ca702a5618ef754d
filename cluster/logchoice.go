package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Log stores a group's Raft log can live in (Config.LogStore). The stable
// store (term, vote) is raft-boltdb's raft.db in the group's directory
// whatever the choice.
const (
	// LogStorePebble: the node-wide pebble DB (<data-dir>/raftlog, package
	// logstore), where the groups' appends of one moment share an fsync.
	LogStorePebble = "pebble"
	// LogStoreBolt: raft-boltdb's raft.db in the group's directory, which
	// holds the stable store too (every group before log-store markers).
	LogStoreBolt = "bolt"
	// LogStoreWAL: a hashicorp/raft-wal directory per group, kept to
	// compare the three with numbers (cluster/logstore's benchmark).
	LogStoreWAL = "wal"
)

const (
	logMarkerName = "log-store" // in a group's directory: which log it uses
	boltFileName  = "raft.db"
	raftLogDir    = "raftlog" // the node-wide pebble DB, under DataDir
	walDirName    = "wal"     // a raft-wal group's log, in its directory
)

// logChoice is the log store of one group directory, as its marker says.
type logChoice struct {
	kind   string
	prefix uint64 // pebble only: the log's key prefix, nonzero
}

func (c logChoice) String() string {
	if c.kind == LogStorePebble {
		return fmt.Sprintf("%s %d", c.kind, c.prefix)
	}
	return c.kind
}

// parseLogMarker reads a marker's content: "pebble <prefix>", "bolt" or
// "wal". Anything else is refused: guessing could open an empty log for a
// replica that has one, and make it vote as if it had none.
func parseLogMarker(b []byte) (logChoice, error) {
	f := strings.Fields(string(b))
	switch {
	case len(f) == 1 && (f[0] == LogStoreBolt || f[0] == LogStoreWAL):
		return logChoice{kind: f[0]}, nil
	case len(f) == 2 && f[0] == LogStorePebble:
		p, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil || p == 0 {
			return logChoice{}, fmt.Errorf("bad pebble prefix %q", f[1])
		}
		return logChoice{kind: LogStorePebble, prefix: p}, nil
	}
	return logChoice{}, fmt.Errorf("unknown log store %q", b)
}

// readLogMarker reads dir's marker; ok is false when it has none.
func readLogMarker(dir string) (c logChoice, ok bool, err error) {
	path := filepath.Join(dir, logMarkerName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, false, nil
	}
	if err == nil {
		c, err = parseLogMarker(b)
	}
	if err != nil {
		return c, false, fmt.Errorf("%s: %w", path, err)
	}
	return c, true, nil
}

// writeLogMarker writes dir's marker durably (file, then directory
// synced) before anything else in dir: raft.db must never be on disk
// without it, or a restart would take a pebble-log group for an old
// bolt-log one and open an empty log.
func writeLogMarker(dir string, c logChoice) error {
	path := filepath.Join(dir, logMarkerName)
	if err := WriteFileAtomic(path, []byte(c.String()+"\n"), 0o640); err != nil {
		return fmt.Errorf("log-store marker %s: %w", path, err)
	}
	return nil
}

// chooseLog is the log store of the group directory dir: the one its
// marker names; bolt for a directory from before markers (raft.db and no
// marker); for a new directory, the node's Config.LogStore, written into
// a new marker first.
func (n *Node) chooseLog(dir string) (logChoice, error) {
	c, ok, err := readLogMarker(dir)
	if err != nil || ok {
		return c, err
	}
	if _, err := os.Stat(filepath.Join(dir, boltFileName)); err == nil {
		return logChoice{kind: LogStoreBolt}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	c = logChoice{kind: n.cfg.LogStore}
	if c.kind == LogStorePebble {
		if c.prefix, err = n.newLogPrefix(); err != nil {
			return c, err
		}
	}
	return c, writeLogMarker(dir, c)
}

// newLogPrefix draws a random prefix (an incarnation: a group that comes
// back to this node gets a new one, its moved-aside directory keeps the
// old) that holds no entries.
func (n *Node) newLogPrefix() (uint64, error) {
	if n.raftlog == nil {
		return 0, errors.New("the node-wide log store is not open")
	}
	for range 8 {
		p := rand.Uint64()
		if p == 0 {
			continue
		}
		used, err := n.raftlog.HasLog(p)
		if err != nil || !used {
			return p, err
		}
	}
	return 0, errors.New("no unused log prefix in 8 draws")
}

// logDirs are the directories that may hold a group's Raft state: the
// meta group's and every entry of groups/, moved-aside ones included.
func logDirs(dataDir string) ([]string, error) {
	dirs := []string{filepath.Join(dataDir, "meta")}
	ents, err := os.ReadDir(filepath.Join(dataDir, "groups"))
	if errors.Is(err, fs.ErrNotExist) {
		return dirs, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(dataDir, "groups", e.Name()))
		}
	}
	return dirs, nil
}

// pebbleMarkers maps each pebble prefix named by a marker to its directory.
func pebbleMarkers(dataDir string) (map[uint64]string, error) {
	dirs, err := logDirs(dataDir)
	if err != nil {
		return nil, err
	}
	named := map[uint64]string{}
	for _, d := range dirs {
		c, ok, err := readLogMarker(d)
		if err != nil {
			return nil, err
		}
		if ok && c.kind == LogStorePebble {
			named[c.prefix] = d
		}
	}
	return named, nil
}
