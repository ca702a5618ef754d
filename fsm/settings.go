package fsm

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"

	"github.com/slotraft/slotraft/store"
)

// Group settings: a small replicated map of the group's own metadata, set
// by EntrySettings and kept in snapshots, such as the replica an operator
// prefers as leader (`slotraft admin transfer-leader`) or the scripts'
// instruction budget. The map is never changed in place: Apply swaps in a
// new one, so readers and snapshots hold an immutable map.

// SettingPreferredLeader is the node id the group's leadership should move
// to when that replica is healthy; empty means the static placement's.
const SettingPreferredLeader = "preferred-leader"

// SettingScriptBudget is the number of Lua instructions a script may run
// in the group, in decimal (ScriptBudgetEntry); unset, or anything but a
// positive number, means DefaultScriptBudget. FUNCTION LOAD and RESTORE
// get a tenth of it for a library's top-level code (lua_budget.go).
const SettingScriptBudget = "script-budget"

// maxSettingsLen bounds the settings section of a snapshot.
const maxSettingsLen = 1 << 20

// applySettings applies EntrySettings: each command is a key and a value;
// an empty value removes the key. Like the other internal entries it has
// no replies; a pair of another shape (not written by this code) is skipped.
func (s *State) applySettings(cmds [][][]byte) {
	next := maps.Clone(s.settings)
	if next == nil {
		next = map[string]string{}
	}
	for _, kv := range cmds {
		switch {
		case len(kv) != 2:
		case len(kv[1]) == 0:
			delete(next, string(kv[0]))
		default:
			next[string(kv[0])] = string(kv[1])
		}
	}
	s.settings = next
	s.store.SetLimits(LimitsOf(next))
}

// LimitSettings are the encoding parameters a group keeps in its settings,
// under their CONFIG names: the values of its leader's CONFIG, set through
// the log so every replica converts collections at the same point
// (store.Limits).
var LimitSettings = []string{
	"hash-max-listpack-entries", "hash-max-listpack-value",
	"set-max-intset-entries", "set-max-listpack-entries", "set-max-listpack-value",
	"zset-max-listpack-entries", "zset-max-listpack-value",
	"list-max-listpack-size", "stream-node-max-bytes", "stream-node-max-entries",
}

// LimitsOf is the store.Limits that group settings give: the defaults
// where a setting is absent or not a number.
func LimitsOf(settings map[string]string) store.Limits {
	l := store.DefaultLimits()
	fields := []*int64{&l.HashEntries, &l.HashValue, &l.SetIntsetEntries, &l.SetEntries, &l.SetValue,
		&l.ZSetEntries, &l.ZSetValue, &l.ListSize, &l.StreamNodeBytes, &l.StreamNodeEntries}
	for i, name := range LimitSettings {
		if v, err := strconv.ParseInt(settings[name], 10, 64); err == nil {
			*fields[i] = v
		}
	}
	return l
}

// Setting is the value of a group setting ("" if unset).
func (s *State) Setting(key string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.settings[key]
}

// SettingsEntry is the entry that sets key to value ("" removes it).
func SettingsEntry(key, value string) *Entry {
	return &Entry{Type: EntrySettings, Cmds: [][][]byte{{[]byte(key), []byte(value)}}}
}

// appendSettingsSection encodes the settings in key order.
func appendSettingsSection(b []byte, m map[string]string) []byte {
	keys := slices.Sorted(maps.Keys(m))
	enc := binary.AppendUvarint(nil, uint64(len(keys)))
	for _, k := range keys {
		enc = binary.AppendUvarint(enc, uint64(len(k)))
		enc = append(enc, k...)
		enc = binary.AppendUvarint(enc, uint64(len(m[k])))
		enc = append(enc, m[k]...)
	}
	return appendChecked(b, enc)
}

func readSettingsSection(r io.Reader) (map[string]string, error) {
	b, err := readChecked(r, "settings", maxSettingsLen)
	if err != nil {
		return nil, err
	}
	d := decoder{b: b}
	n, err := d.count("settings")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	m := make(map[string]string, n)
	for i := range n {
		k, err := d.bytes("setting key")
		if err != nil {
			return nil, fmt.Errorf("%w: setting %d: %w", ErrBadSnapshot, i, err)
		}
		v, err := d.bytes("setting value")
		if err != nil {
			return nil, fmt.Errorf("%w: setting %d: %w", ErrBadSnapshot, i, err)
		}
		m[string(k)] = string(v)
	}
	if d.remaining() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes after the settings", ErrBadSnapshot, d.remaining())
	}
	return m, nil
}
