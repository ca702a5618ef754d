package store

import (
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkStoreMemoryPerKey stores 100,000 string keys key:N with 3-byte
// values, as SET does through fsm, and reports the live heap they take per
// key (after a full GC): the store's share of make bench-memory's number.
func BenchmarkStoreMemoryPerKey(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		before := liveHeap()
		s := New()
		for i := range n {
			s.Put([]byte("key:"+strconv.Itoa(i)), &Object{Type: TypeString, Str: []byte("xxx"), Version: uint64(i + 1), Touched: 1})
		}
		after := liveHeap()
		b.ReportMetric(float64(after-before)/n, "bytes/key")
		runtime.KeepAlive(s)
	}
}

// liveHeap is the heap in objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
