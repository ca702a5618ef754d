package fsm

import (
	"bytes"
	"errors"
	"testing"
)

func TestSettings(t *testing.T) {
	s := NewState()
	apply := func(key, value string) {
		t.Helper()
		if replies, err := s.ApplyEntry(1, SettingsEntry(key, value)); err != nil || len(replies) != 0 {
			t.Fatalf("settings entry %s=%q: %v, %v; want no replies", key, value, replies, err)
		}
	}
	if got := s.Setting(SettingPreferredLeader); got != "" {
		t.Fatalf("unset setting = %q", got)
	}
	apply(SettingPreferredLeader, "node2")
	before := s.settings
	apply(SettingPreferredLeader, "node3")
	if got := s.Setting(SettingPreferredLeader); got != "node3" {
		t.Fatalf("setting = %q, want node3", got)
	}
	if before[SettingPreferredLeader] != "node2" {
		t.Fatal("a settings view changed after a later entry: the map must be replaced, not modified")
	}
	apply(SettingPreferredLeader, "")
	if got := s.Setting(SettingPreferredLeader); got != "" {
		t.Fatalf("removed setting = %q", got)
	}
	if _, err := s.ApplyEntry(2, &Entry{Type: EntrySettings, Cmds: [][][]byte{{[]byte("only-a-key")}}}); err != nil {
		t.Fatalf("malformed setting: %v; want it skipped", err)
	}
	if len(s.settings) != 0 {
		t.Fatalf("malformed setting changed the settings: %v", s.settings)
	}
}

func TestSettingsSnapshot(t *testing.T) {
	s := NewState()
	if _, err := s.ApplyEntry(1, SettingsEntry(SettingPreferredLeader, "node2")); err != nil {
		t.Fatal(err)
	}
	data := snapshotOf(t, s)
	if got := restoredFrom(t, data).Setting(SettingPreferredLeader); got != "node2" {
		t.Fatalf("restored setting = %q, want node2", got)
	}

	// Version 4 had no settings (and no migration) section.
	b := bytes.Clone(data)
	b[len(snapMagic)] = 4
	sec := appendSettingsSection(nil, map[string]string{SettingPreferredLeader: "node2"})
	sec = appendChecked(sec, NewState().migrationSection())
	i := bytes.Index(b, sec)
	if i < 0 {
		t.Fatal("settings section not found in the snapshot")
	}
	v4 := append(append([]byte{}, b[:i]...), b[i+len(sec):]...)
	s3 := NewState()
	if err := s3.ReadSnapshot(bytes.NewReader(v4)); err != nil {
		t.Fatalf("restore v4: %v", err)
	}
	if got := s3.Setting(SettingPreferredLeader); got != "" {
		t.Fatalf("v4 restore has setting %q", got)
	}
}

func FuzzReadSettingsSection(f *testing.F) {
	f.Add(appendSettingsSection(nil, map[string]string{"a": "b", SettingPreferredLeader: "node1"}))
	f.Add(appendSettingsSection(nil, nil))
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := readSettingsSection(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("error %v does not wrap ErrBadSnapshot", err)
			}
			return
		}
		again := appendSettingsSection(nil, m)
		m2, err := readSettingsSection(bytes.NewReader(again))
		if err != nil || len(m2) != len(m) {
			t.Fatalf("re-read %v, %v; want %v", m2, err, m)
		}
	})
}
