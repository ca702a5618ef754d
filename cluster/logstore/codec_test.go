package logstore

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestCodecRejects(t *testing.T) {
	good := appendLog(nil, entry(5, 2))
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"data past end", []byte{codecVersion, 1, 1, 0, 50, 'x'}},
		{"bad uvarint", []byte{codecVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"time flag", []byte{codecVersion, 1, 1, 0, 0, 0, 7}},
		{"nanoseconds", []byte{codecVersion, 1, 1, 0, 0, 0, timeUnix, 0, 0x80, 0x94, 0xeb, 0xdc, 0x03}},
		{"no time", []byte{codecVersion, 1, 1, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l raft.Log
			if err := decodeLog(tt.in, &l); !errors.Is(err, errCorrupt) {
				t.Fatalf("decodeLog(%x) = %v, want errCorrupt", tt.in, err)
			}
		})
	}
}

func FuzzLogRoundTrip(f *testing.F) {
	f.Add(uint64(1), uint64(1), uint8(raft.LogCommand), []byte("set k v"), []byte(nil), int64(1_700_000_000), uint32(5), false)
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), uint8(255), []byte{}, []byte{1, 2}, int64(-1), uint32(999_999_999), true)
	f.Fuzz(func(t *testing.T, index, term uint64, typ uint8, data, ext []byte, sec int64, nsec uint32, zero bool) {
		in := raft.Log{Index: index, Term: term, Type: raft.LogType(typ), Data: data, Extensions: ext}
		if !zero {
			in.AppendedAt = time.Unix(sec, int64(nsec%uint32(time.Second)))
		}
		var out raft.Log
		if err := decodeLog(appendLog(nil, &in), &out); err != nil {
			t.Fatal(err)
		}
		if !sameLog(&in, &out) {
			t.Fatalf("round trip: %+v became %+v", in, out)
		}
	})
}

// FuzzDecodeLog: any bytes decode to an error or to an entry that encodes
// and decodes to itself; never a panic.
func FuzzDecodeLog(f *testing.F) {
	f.Add(appendLog(nil, entry(1, 1)))
	f.Add(appendLog(nil, &raft.Log{Index: 3}))
	f.Add([]byte{codecVersion, 0x80, 0x00, 1, 0, 0, 0, timeZero})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if err := decodeLog(b, &l); err != nil {
			if !errors.Is(err, errCorrupt) {
				t.Fatalf("error %v does not wrap errCorrupt", err)
			}
			return
		}
		enc := appendLog(nil, &l)
		var again raft.Log
		if err := decodeLog(enc, &again); err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", l, err)
		}
		if !sameLog(&l, &again) || !bytes.Equal(appendLog(nil, &again), enc) {
			t.Fatalf("%+v re-encoded as %+v", l, again)
		}
	})
}
