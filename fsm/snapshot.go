package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/slotraft/slotraft/store"
)

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
// section (out-marks, frozen keys, migrated count: migrate.go; restored
// as none).
const (
	snapMagic     = "SRFS"
	snapVersion   = 6
	snapHeaderLen = len(snapMagic) + 1 + 8
	// maxWaitersLen bounds the waiters section; it is read in chunks, so a
	// corrupt length fails at the end of the input, not in an allocation.
	maxWaitersLen = 1 << 30
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is wrapped by Restore's errors about the header.
var ErrBadSnapshot = errors.New("fsm: bad snapshot")

// snapshot is a point-in-time view being persisted while Apply goes on.
type snapshot struct {
	view     *store.View
	lastNow  int64
	waiters  []waiterRecord
	scripts  []scriptEntry     // the script cache (immutable entries, script.go)
	funcs    *functionSet      // the function libraries (immutable, function.go)
	settings map[string]string // the group settings (immutable, settings.go)
	mig      []byte            // the migration section, encoded (migrate.go)
}

// Snapshot takes an O(1) copy-on-write view of the state (and a copy of the
// list of blocked commands, which are few).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	view, lastNow, waiters := f.state.snapshotAll()
	// Snapshot runs on the FSM goroutine, between Applies, so the script
	// cache (and the rest) read here is the one of the view's index.
	return &snapshot{view: view, lastNow: lastNow, waiters: waiters, scripts: f.state.scriptsView(),
		funcs: f.state.functionsView(), settings: f.state.settingsView(), mig: f.state.migrationSection()}, nil
}

// Persist streams the header and the view into sink; on error the sink is
// cancelled.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("fsm: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	hdr := make([]byte, 0, snapHeaderLen)
	hdr = append(append(hdr, snapMagic...), snapVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(s.lastNow))
	ws := encodeWaiters(s.waiters)
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(ws)))
	hdr = append(hdr, ws...)
	hdr = binary.BigEndian.AppendUint32(hdr, crc32.Checksum(ws, crc32c))
	hdr = appendScriptsSection(hdr, s.scripts)
	hdr = appendFunctionsSection(hdr, s.funcs)
	hdr = appendSettingsSection(hdr, s.settings)
	hdr = appendChecked(hdr, s.mig)
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	if _, err := s.view.WriteTo(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// Release drops the view.
func (s *snapshot) Release() { s.view = nil }

// Restore replaces the state with a snapshot, decoding as it streams. On
// error the state is unchanged.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 64<<10)
	lastNow, version, err := readSnapHeader(br)
	if err != nil {
		return err
	}
	blk := newBlockState()
	if version >= 2 {
		if blk, err = readWaiters(br); err != nil {
			return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
		}
	}
	var scripts []scriptEntry
	if version >= 3 {
		if scripts, err = readScriptsSection(br); err != nil {
			return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
		}
	}
	funcs := newFunctionSet()
	if version >= 4 {
		if funcs, err = readFunctionsSection(br); err != nil {
			return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
		}
	}
	var settings map[string]string
	if version >= 5 {
		if settings, err = readSettingsSection(br); err != nil {
			return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
		}
	}
	var mig migration
	if version >= 6 {
		if mig, err = readMigrationSection(br); err != nil {
			return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
		}
	}
	st := store.New()
	if err := st.Restore(br); err != nil {
		return fmt.Errorf("fsm: group %d: restore: %w", f.group, err)
	}
	f.state.setScripts(scripts)
	f.state.setFunctions(funcs)
	f.state.setSettings(settings)
	f.state.setMigration(mig)
	f.state.replace(st, lastNow, blk)
	if f.hook != nil {
		f.hook(BlockEvent{Reset: true, Blocked: blockedOf(blk.sorted())})
	}
	return nil
}

func readSnapHeader(r io.Reader) (lastNow int64, version byte, err error) {
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
	return int64(binary.BigEndian.Uint64(hdr[len(snapMagic)+1:])), hdr[len(snapMagic)], nil
}

// readWaiters reads the waiters section and its checksum.
func readWaiters(r io.Reader) (blockState, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return blockState{}, fmt.Errorf("%w: waiters length: %w", ErrBadSnapshot, err)
	}
	size := int(binary.BigEndian.Uint32(n[:]))
	if size > maxWaitersLen {
		return blockState{}, fmt.Errorf("%w: waiters section of %d bytes", ErrBadSnapshot, size)
	}
	var b []byte
	for len(b) < size {
		chunk := min(size-len(b), 64<<10)
		b = slices.Grow(b, chunk)
		if _, err := io.ReadFull(r, b[len(b):len(b)+chunk]); err != nil {
			return blockState{}, fmt.Errorf("%w: waiters: %w", ErrBadSnapshot, err)
		}
		b = b[:len(b)+chunk]
	}
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return blockState{}, fmt.Errorf("%w: waiters checksum: %w", ErrBadSnapshot, err)
	}
	if crc32.Checksum(b, crc32c) != binary.BigEndian.Uint32(n[:]) {
		return blockState{}, fmt.Errorf("%w: waiters checksum mismatch", ErrBadSnapshot)
	}
	blk, err := decodeWaiters(b)
	if err != nil {
		return blockState{}, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return blk, nil
}
