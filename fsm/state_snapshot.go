package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/slotraft/slotraft/store"
)

// The snapshot format of a group's state. It lives here, with the
// processor, so that it knows nothing of Raft; snapshot.go only adapts it
// to raft.FSM.
//
// A snapshot is a small header, the blocked commands, then the store's own
// format:
//
//	"SRFS" | version (1 byte) | lastNow (8 bytes, big-endian) |
//	waiters length (4 bytes) | waiters (encodeWaiters) | CRC-32C of the waiters (4 bytes) |
//	scripts length (4 bytes) | scripts (encodeScripts) | CRC-32C of the scripts (4 bytes) |
//	functions length (4 bytes) | functions | CRC-32C of the functions (4 bytes) |
//	settings length (4 bytes) | settings | CRC-32C of the settings (4 bytes) |
//	migration length (4 bytes) | migration | CRC-32C of the migration (4 bytes) |
//	store.View.WriteTo
//
// Version 1 (still read) has no waiters section, versions 1 and 2 no
// scripts section (the Lua script cache, script.go), versions 1 to 3 no
// functions section (the function libraries, function_rdb.go), versions 1
// to 4 no settings section (settings.go), versions 1 to 5 no migration
// section (out-marks, frozen keys, migrated count: migrate_snapshot.go;
// restored as none).
const (
	snapMagic     = "SRFS"
	snapVersion   = 6
	snapHeaderLen = len(snapMagic) + 1 + 8
	// maxWaitersLen bounds the waiters section; it is read in chunks, so a
	// corrupt length fails at the end of the input, not in an allocation.
	maxWaitersLen = 1 << 30
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is wrapped by ReadSnapshot's errors about the header and
// the sections before the store.
var ErrBadSnapshot = errors.New("fsm: bad snapshot")

// Snapshot is a point-in-time view of a State, written out by WriteTo
// while Apply goes on: every part is either copy-on-write (the store's
// view) or immutable once taken.
type Snapshot struct {
	view     *store.View
	lastNow  int64
	waiters  []waiterRecord    // their records are immutable: a copy of the list is enough
	scripts  []scriptEntry     // the script cache (append-only between flushes, script.go)
	funcs    *functionSet      // the function libraries (immutable, function.go)
	settings map[string]string // the group settings (replaced, never modified: settings.go)
	mig      []byte            // the migration section, encoded (it is small: migrate_snapshot.go)
}

// Snapshot takes a snapshot of the state, all parts under one lock so
// that they are of the same log index. It costs O(1) in the data's size
// (the blocked commands and the migration section are copied; they are
// few).
func (s *State) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Snapshot{view: s.store.Snapshot(), lastNow: s.lastNow, waiters: recordsOf(s.blk.sorted()),
		scripts: s.scripts.view(), funcs: s.scripts.functions.set(), settings: s.settings, mig: s.mig.section()}
}

// WriteTo streams the snapshot to w in the current format version; it
// returns the number of bytes written.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	if _, err := bw.Write(sn.header()); err != nil {
		return cw.n, err
	}
	if _, err := sn.view.WriteTo(bw); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

// header is everything before the store: the header and the sections.
func (sn *Snapshot) header() []byte {
	hdr := make([]byte, 0, snapHeaderLen)
	hdr = append(append(hdr, snapMagic...), snapVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(sn.lastNow))
	hdr = appendChecked(hdr, encodeWaiters(sn.waiters))
	hdr = appendScriptsSection(hdr, sn.scripts)
	hdr = appendFunctionsSection(hdr, sn.funcs)
	hdr = appendSettingsSection(hdr, sn.settings)
	return appendChecked(hdr, sn.mig)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// restored is a decoded snapshot, not yet installed.
type restored struct {
	store    *store.Store
	lastNow  int64
	blk      blockState
	scripts  []scriptEntry
	funcs    *functionSet
	settings map[string]string
	mig      migration
}

// ReadSnapshot replaces the whole state with the snapshot r holds, of any
// format version from 1 to the current one, decoding as it streams. The
// state changes only once everything decoded, all at once under the lock;
// on error it is unchanged.
func (s *State) ReadSnapshot(r io.Reader) error {
	rs, err := readSnapshot(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installScripts(rs.scripts)
	s.scripts.functions.cur.Store(rs.funcs)
	s.settings = rs.settings
	s.installMigration(rs.mig)
	s.store, s.lastNow, s.blk = rs.store, rs.lastNow, rs.blk
	s.store.SetLimits(LimitsOf(s.settings)) // the restored collections follow it from their next change
	s.noteDataBytes()
	return nil
}

// readSnapshot decodes a snapshot; a section the version does not have is
// restored empty.
func readSnapshot(br *bufio.Reader) (*restored, error) {
	version, lastNow, err := readSnapHeader(br)
	if err != nil {
		return nil, err
	}
	rs := &restored{lastNow: lastNow, blk: newBlockState(), funcs: newFunctionSet()}
	if version >= 2 {
		if rs.blk, err = readWaiters(br); err != nil {
			return nil, err
		}
	}
	if version >= 3 {
		if rs.scripts, err = readScriptsSection(br); err != nil {
			return nil, err
		}
	}
	if version >= 4 {
		if rs.funcs, err = readFunctionsSection(br); err != nil {
			return nil, err
		}
	}
	if version >= 5 {
		if rs.settings, err = readSettingsSection(br); err != nil {
			return nil, err
		}
	}
	if version >= 6 {
		if rs.mig, err = readMigrationSection(br); err != nil {
			return nil, err
		}
	}
	rs.store = store.New()
	if err := rs.store.Restore(br); err != nil {
		return nil, err
	}
	return rs, nil
}

func readSnapHeader(r io.Reader) (version byte, lastNow int64, err error) {
	var hdr [snapHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, 0, fmt.Errorf("%w: header: %w", ErrBadSnapshot, err)
	}
	if string(hdr[:len(snapMagic)]) != snapMagic {
		return 0, 0, fmt.Errorf("%w: bad magic %q", ErrBadSnapshot, hdr[:len(snapMagic)])
	}
	if v := hdr[len(snapMagic)]; v < 1 || v > snapVersion {
		return 0, 0, fmt.Errorf("%w: version %d, want 1 to %d", ErrBadSnapshot, v, snapVersion)
	}
	return hdr[len(snapMagic)], int64(binary.BigEndian.Uint64(hdr[len(snapMagic)+1:])), nil
}

// readWaiters reads the waiters section (framed as the later sections
// are, snapshot_section.go).
func readWaiters(r io.Reader) (blockState, error) {
	b, err := readChecked(r, "waiters", maxWaitersLen)
	if err != nil {
		return blockState{}, err
	}
	blk, err := decodeWaiters(b)
	if err != nil {
		return blockState{}, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return blk, nil
}
