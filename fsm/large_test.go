package fsm

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// largeN is the size of each large value: the issue's "1-million-element
// list, hash, set and zset", which the benchmark and `make test-long`
// (SLOTRAFT_TEST_LONG=1) build; `make test`, under the race detector,
// tests 250,000 (a minute and a half less, still deep trees).
const largeN = 1_000_000

func largeTestN() int {
	if os.Getenv("SLOTRAFT_TEST_LONG") == "1" {
		return largeN
	}
	return largeN / 4
}

// fillLarge builds a list, hash, set and sorted set of n elements each
// through Apply, in entries of 10,000 elements.
func fillLarge(tb testing.TB, s *State, n int) uint64 {
	tb.Helper()
	var index uint64
	const chunk = 10_000
	for start := 0; start < n; start += chunk {
		cmds := [][][]byte{{[]byte("RPUSH"), []byte("l")}, {[]byte("HSET"), []byte("h")},
			{[]byte("SADD"), []byte("s")}, {[]byte("ZADD"), []byte("z")}}
		for i := start; i < min(start+chunk, n); i++ {
			v := []byte(strconv.Itoa(i))
			cmds[0] = append(cmds[0], v)
			cmds[1] = append(cmds[1], v, v)
			cmds[2] = append(cmds[2], v)
			cmds[3] = append(cmds[3], v, v)
		}
		index++
		for _, r := range repliesOf(s.Apply(index, &Entry{Type: EntryCommands, Now: 1, Cmds: cmds})) {
			if r.IsError() {
				tb.Fatalf("fill: %s", r.Str)
			}
		}
	}
	return index
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLargeValuesSnapshot: a snapshot of million-element values is a
// copy-on-write view, so taking it and then changing every one of those
// values costs a small fraction of the data's memory (no full copy), the
// view keeps its point in time, and it persists and restores whole.
func TestLargeValuesSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 4 million elements")
	}
	n := largeTestN()
	mid := strconv.Itoa(n / 2)
	before := heapInUse()
	s := NewState()
	index := fillLarge(t, s, n)
	data := heapInUse() - before

	view := s.Snapshot().view
	index++
	s.Apply(index, &Entry{Type: EntryCommands, Now: 2, Cmds: [][][]byte{
		{[]byte("LSET"), []byte("l"), []byte(mid), []byte("x")},
		{[]byte("RPUSH"), []byte("l"), []byte("tail")},
		{[]byte("HSET"), []byte("h"), []byte(mid), []byte("x")},
		{[]byte("SREM"), []byte("s"), []byte(mid)},
		{[]byte("ZADD"), []byte("z"), []byte("-1"), []byte(mid)},
	}})
	grown := int64(heapInUse()) - int64(before) - int64(data)
	t.Logf("data %d MB, growth after snapshot and writes %d KB", data>>20, grown>>10)
	if grown > int64(data)/20 {
		t.Fatalf("snapshot + one write per value grew the heap by %d bytes, more than 5%% of the %d bytes of data: values were copied", grown, data)
	}

	var buf bytes.Buffer
	if _, err := view.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	restored := NewState()
	if err := restored.store.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct{ cmd, want string }{
		{"LINDEX l " + mid, `"` + mid + `"`}, {"LLEN l", fmt.Sprintf(":%d", n)},
		{"HGET h " + mid, `"` + mid + `"`}, {"SISMEMBER s " + mid, ":1"}, {"ZSCORE z " + mid, "," + mid},
	} {
		args := fields(q.cmd)
		if got := show(replyOf(restored.Read(3, Lookup(args[0]), args))); got != q.want {
			t.Errorf("restored view: %s = %s, want %s", q.cmd, got, q.want)
		}
	}
}

// BenchmarkSnapshotLargeValues measures taking a snapshot of four
// million-element values and the first write to each afterwards (the
// copy-on-write cost Apply pays).
func BenchmarkSnapshotLargeValues(b *testing.B) {
	s := NewState()
	index := fillLarge(b, s, largeN)
	b.ResetTimer()
	for i := range b.N {
		s.Snapshot()
		index++
		v := []byte(strconv.Itoa(i % largeN))
		s.Apply(index, &Entry{Type: EntryCommands, Now: 2, Cmds: [][][]byte{
			{[]byte("LSET"), []byte("l"), v, v}, {[]byte("HSET"), []byte("h"), v, v},
			{[]byte("SADD"), []byte("s"), v}, {[]byte("ZADD"), []byte("z"), v, v},
		}})
	}
}
