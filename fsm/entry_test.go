package fsm

import (
	"bytes"
	"errors"
	"testing"
)

func TestEntryRoundTrip(t *testing.T) {
	cases := []*Entry{
		{Type: EntryCommands, Now: t0, Seed: 42, Cmds: [][][]byte{fields("SET k v"), fields("GET k")}},
		{Type: EntryExpire, Now: -1, Seed: 1<<64 - 1, Cmds: [][][]byte{fields("a b c")}},
		{Type: EntryCommands | IgnoreUnknown, Cmds: [][][]byte{}},
		{Type: EntryCommands, Cmds: [][][]byte{{[]byte{}, bytes.Repeat([]byte("x"), 300)}}},
		{Type: EntryCommands, User: []byte(`{"name":"u"}`), Cmds: [][][]byte{fields("EVAL return 0")}},
		{Type: EntryCommands, User: []byte{}, Cmds: [][][]byte{}},
	}
	for i, e := range cases {
		b := e.Encode()
		d, err := DecodeEntry(b)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if (d.User == nil) != (e.User == nil) || !bytes.Equal(d.User, e.User) {
			t.Fatalf("%d: user %q, want %q", i, d.User, e.User)
		}
		if e.User != nil && EntryType(b[1]) != EntryCommandsAs {
			t.Fatalf("%d: a user's entry encoded as type %d", i, b[1])
		}
		if d.Type != e.Type || d.Now != e.Now || d.Seed != e.Seed || len(d.Cmds) != len(e.Cmds) {
			t.Fatalf("%d: decoded %+v, want %+v", i, d, e)
		}
		for j := range e.Cmds {
			if len(d.Cmds[j]) != len(e.Cmds[j]) {
				t.Fatalf("%d: command %d has %d args", i, j, len(d.Cmds[j]))
			}
			for k := range e.Cmds[j] {
				if !bytes.Equal(d.Cmds[j][k], e.Cmds[j][k]) {
					t.Fatalf("%d: arg %d/%d = %q", i, j, k, d.Cmds[j][k])
				}
			}
		}
		if !bytes.Equal(d.Encode(), b) {
			t.Fatalf("%d: re-encoding differs", i)
		}
	}
}

func TestDecodeEntryErrors(t *testing.T) {
	good := (&Entry{Type: EntryCommands, Now: 5, Cmds: [][][]byte{fields("SET k v")}}).Encode()
	hdr := good[:headerLen]
	cases := map[string][]byte{
		"empty":           nil,
		"short header":    good[:10],
		"bad version":     append([]byte{9}, good[1:]...),
		"no count":        hdr,
		"truncated arg":   good[:len(good)-1],
		"trailing":        append(append([]byte{}, good...), 0),
		"huge count":      append(append([]byte{}, hdr...), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"huge argc":       append(append([]byte{}, hdr...), 1, 0xff, 0xff, 0x03),
		"huge arg length": append(append([]byte{}, hdr...), 1, 1, 0xff, 0xff, 0xff, 0x7f),
		"non-minimal":     append(append([]byte{}, hdr...), 0x80, 0x00),
		"varint overflow": append(append([]byte{}, hdr...), bytes.Repeat([]byte{0xff}, 11)...),
	}
	asHdr := append([]byte{entryVersion, byte(EntryCommandsAs)}, hdr[2:]...)
	cases["commands-as, no user"] = append(append([]byte{}, asHdr...), 0)
	cases["commands-as, user of 2 args"] = append(append([]byte{}, asHdr...), 1, 2, 1, 'u', 1, 'v')
	for name, b := range cases {
		if _, err := DecodeEntry(b); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: err = %v, want ErrBadEntry", name, err)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add((&Entry{Type: EntryCommands, Now: t0, Seed: 7, Cmds: [][][]byte{fields("SET k v EX 10")}}).Encode())
	f.Add((&Entry{Type: EntryExpire, Cmds: [][][]byte{fields("a b")}}).Encode())
	f.Add([]byte{1, 1})
	f.Add((&Entry{Type: EntryCommands, User: []byte("{}"), Cmds: [][][]byte{fields("EVAL return 1 0")}}).Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEntry(b)
		if err != nil {
			return
		}
		if got := e.Encode(); !bytes.Equal(got, b) {
			t.Fatalf("round trip: %x -> %x", b, got)
		}
	})
}
