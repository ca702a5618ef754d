package cluster

import (
	"bytes"
	"errors"
	"testing"

	"github.com/slotraft/slotraft/fsm"
)

func TestGroupEntryPayload(t *testing.T) {
	for _, e := range []*fsm.Entry{
		fsm.SettingsEntry("preferred-leader", "node2"),
		fsm.MigrateOutEntry(7, 3),
		fsm.DropEntry(7, [][]byte{[]byte("a"), []byte("b")}),
	} {
		gid, got, err := decodeGroupEntry(encodeGroupEntry(42, e))
		if err != nil || gid != 42 || !bytes.Equal(got.Encode(), e.Encode()) {
			t.Errorf("round trip of %+v = %d %+v, %v", e, gid, got, err)
		}
	}
	refused := &fsm.Entry{Type: fsm.EntryCommands, Cmds: [][][]byte{{[]byte("set"), []byte("k"), []byte("v")}}}
	for _, bad := range [][]byte{nil, {1, 0, 0, 0}, {2, 0, 0, 0, 1, 0}, encodeGroupEntry(1, refused)} {
		if _, _, err := decodeGroupEntry(bad); !errors.Is(err, errBadGroupEntry) {
			t.Errorf("decodeGroupEntry(%x) = %v, want errBadGroupEntry", bad, err)
		}
	}
}

func FuzzDecodeGroupEntry(f *testing.F) {
	f.Add(encodeGroupEntry(1, fsm.SettingsEntry("preferred-leader", "node2")))
	f.Add(encodeGroupEntry(9, fsm.FreezeEntry(1, [][]byte{[]byte("k")})))
	f.Fuzz(func(t *testing.T, in []byte) {
		gid, e, err := decodeGroupEntry(in)
		if err != nil {
			return
		}
		if g2, e2, err := decodeGroupEntry(encodeGroupEntry(gid, e)); err != nil || g2 != gid || !bytes.Equal(e2.Encode(), e.Encode()) {
			t.Fatalf("re-decode of group %d entry %x = %d, %v", gid, e.Encode(), g2, err)
		}
	})
}
