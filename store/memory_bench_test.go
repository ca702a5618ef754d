package store

import (
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkStoreMemoryPerKey stores 100,000 string keys key:N with 3-byte
// values, as SET does through fsm, and reports the live heap they take per
// key (after a full GC): the store's share of make bench-memory's number.
// "ttl" gives every key a deadline (SET EX), which the expiry index pays
// for too.
func BenchmarkStoreMemoryPerKey(b *testing.B) {
	for _, bc := range []struct {
		name     string
		expireAt int64
	}{{"plain", 0}, {"ttl", 1 << 50}} {
		b.Run(bc.name, func(b *testing.B) {
			const n = 100_000
			for b.Loop() {
				before := liveHeap()
				s := New()
				for i := range n {
					o := &Object{Type: TypeString, Str: []byte("xxx"), Version: uint64(i + 1), Touched: 1}
					if bc.expireAt != 0 {
						o.ExpireAt = bc.expireAt + int64(i)
					}
					s.Put([]byte("key:"+strconv.Itoa(i)), o)
				}
				after := liveHeap()
				b.ReportMetric(float64(after-before)/n, "bytes/key")
				runtime.KeepAlive(s)
			}
		})
	}
}

// liveHeap is the heap in objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
