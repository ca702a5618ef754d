package fsm

import (
	"bytes"
	"errors"
	"sort"
	"testing"
)

// rdbFileOf writes the payloads (key -> payload), every other key with a
// deadline, as an RDB file.
func rdbFileOf(t testing.TB, payloads map[string][]byte) ([]byte, map[string]int64) {
	t.Helper()
	var buf bytes.Buffer
	w := NewRDBWriter(&buf, map[string]string{"redis-ver": "7.2.0", "redis-bits": "64"}, []string{"redis-ver", "redis-bits"})
	keys := make([]string, 0, len(payloads))
	for k := range payloads {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	expires := map[string]int64{}
	for i, k := range keys {
		if i%2 == 1 {
			expires[k] = 4102444800000 + int64(i) // 2100-01-01
		}
		if err := w.Key([]byte(k), expires[k], payloads[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), expires
}

// TestRDBFileRoundTrip: redis-server's DUMP payloads of every type and
// encoding written as a file and read back give the same values and
// deadlines; the aux fields are kept.
func TestRDBFileRoundTrip(t *testing.T) {
	payloads := rdbRedisDumps(t)
	data, expires := rdbFileOf(t, payloads)
	seen := 0
	f, err := ReadRDB(data, func(rec RDBRecord) error {
		seen++
		orig, ok := payloads[string(rec.Key)]
		if !ok || rec.DB != 0 || rec.ExpireAt != expires[string(rec.Key)] {
			t.Errorf("key %q: db %d, expire %d", rec.Key, rec.DB, rec.ExpireAt)
			return nil
		}
		want, err := rdbParsePayload(orig)
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Payload; !bytes.Equal(got, rdbDump(want)) {
			t.Errorf("key %q: payload %x, want %x", rec.Key, got, rdbDump(want))
		}
		return nil
	})
	if err != nil || seen != len(payloads) || f.Version != rdbFileVersion || f.Aux["redis-ver"] != "7.2.0" {
		t.Fatalf("ReadRDB: %v; %d of %d keys; %+v", err, seen, len(payloads), f)
	}
}

// TestRDBFileErrors: truncated, corrupted and foreign files are refused
// before any key is handed out; the callback's error stops the reading.
func TestRDBFileErrors(t *testing.T) {
	data, _ := rdbFileOf(t, rdbRedisDumps(t))
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)/2] ^= 0xFF
	noSum := append([]byte(nil), data...)
	copy(noSum[len(noSum)-8:], make([]byte, 8)) // a zero checksum is not checked, as Redis
	noSum[26] = rdbOpModuleAux                  // where the second aux field starts
	for name, in := range map[string][]byte{
		"empty": nil, "not rdb": []byte("hello world, this is not an RDB"), "newer": append([]byte("REDIS0012"), data[9:]...),
		"truncated": data[:len(data)-20], "checksum": flipped, "module aux": noSum,
	} {
		n := 0
		if _, err := ReadRDB(in, func(RDBRecord) error { n++; return nil }); !errors.Is(err, ErrRDBFile) || (name != "module aux" && n != 0) {
			t.Errorf("%s: %v after %d keys; want ErrRDBFile and no key", name, err, n)
		}
	}
	stop := errors.New("stop")
	if _, err := ReadRDB(data, func(RDBRecord) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error: %v", err)
	}
	var buf bytes.Buffer
	w := NewRDBWriter(&buf, nil, nil)
	if err := w.Key([]byte("k"), 0, []byte("not a payload")); err == nil {
		t.Error("RDBWriter took a malformed payload")
	}
}

// FuzzReadRDB: no file makes ReadRDB panic, and every payload it hands
// out is one RESTORE takes.
func FuzzReadRDB(f *testing.F) {
	data, _ := rdbFileOf(f, rdbRedisDumps(f))
	f.Add(data)
	f.Add([]byte("REDIS0011\xff"))
	f.Add(append([]byte("REDIS0003"), data[9:]...))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, _ = ReadRDB(in, func(rec RDBRecord) error {
			if _, err := rdbParsePayload(rec.Payload); err != nil {
				t.Fatalf("key %q: payload RESTORE refuses: %v", rec.Key, err)
			}
			return nil
		})
	})
}
