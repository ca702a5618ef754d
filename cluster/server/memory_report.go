package server

import (
	"runtime"
	"strings"
	"time"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/slots"
	"github.com/slotraft/slotraft/store"
)

// MEMORY USAGE, STATS, DOCTOR and MALLOC-STATS. Redis's figures come from
// jemalloc; here the allocator is Go's runtime, so its figures map as:
// allocated = HeapAlloc (INFO's used_memory), active = HeapInuse,
// resident = HeapSys - HeapReleased, and the process RSS from /proc. Buffers
// that belong to connections' goroutines are not sampled (0).

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES count]: the estimated bytes
// of the key and its value in this store (store.MemoryUsage), read on the
// key's group like any read: MOVED elsewhere.
func cmdMemoryUsage(s *Server, c *client, args [][]byte) resp.Value {
	samples := store.DefaultUsageSamples
	for j := 3; j < len(args); j += 2 {
		if !resp.EqualFold(args[j], "samples") || j+1 >= len(args) {
			return resp.Err(resp.ErrSyntax)
		}
		n, err := resp.ParseInt(args[j+1])
		switch {
		case err != nil:
			return resp.Err(resp.ErrNotInteger)
		case n < 0:
			return resp.Err(resp.ErrSyntax)
		case n == 0:
			samples = 0 // all of them
		default:
			samples = int(min(n, 1<<30))
		}
	}
	key := args[2]
	var usage int64
	var found bool
	now := time.Now().UnixMilli()
	view := func(st store.Reader) { usage, found = st.MemoryUsage(key, now, samples) }
	if v, ok := s.slotView(c, slots.Of(key), view); !ok {
		return v
	}
	if !found {
		return resp.Null()
	}
	return resp.Int(usage)
}

// memOverhead is what MEMORY STATS and DOCTOR report, as Redis's
// redisMemOverhead.
type memOverhead struct {
	peak, total, startup   uint64
	keys                   uint64
	mainTable, expireTable uint64
	overhead               uint64
	allocated, active, rss uint64
	resident               uint64
}

func (s *Server) memOverhead() memOverhead {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	mh := memOverhead{total: m.HeapAlloc, startup: s.startupHeap, allocated: m.HeapAlloc,
		active: m.HeapInuse, resident: m.HeapSys - m.HeapReleased}
	mh.peak = s.notePeak(m.HeapAlloc)
	if rss, ok := processRSS(); ok {
		mh.rss = rss
	} else {
		mh.rss = m.Sys - m.HeapReleased
	}
	keys, expiring := s.keysAndDeadlines()
	mh.keys = keys
	mh.mainTable, mh.expireTable = keys*uint64(store.IndexEntryBytes), expiring*uint64(store.IndexEntryBytes)
	mh.overhead = mh.startup + mh.mainTable + mh.expireTable
	return mh
}

func ratio(a, b uint64) float64 { return float64(a) / float64(max(b, 1)) }

func diff(a, b uint64) int64 { return int64(a) - int64(b) }

// cmdMemoryStats is MEMORY STATS: Redis 7.2's fields in its order.
func cmdMemoryStats(s *Server, _ *client, _ [][]byte) resp.Value {
	mh := s.memOverhead()
	net := diff(mh.total, mh.startup)
	dataset := diff(mh.total, mh.overhead)
	perKey := int64(0)
	if mh.keys > 0 {
		perKey = net / int64(mh.keys)
	}
	kv := func(k string, v resp.Value) []resp.Value { return []resp.Value{resp.BulkString(k), v} }
	i := func(n int64) resp.Value { return resp.Int(n) }
	var out []resp.Value
	for _, p := range [][]resp.Value{
		kv("peak.allocated", i(int64(mh.peak))), kv("total.allocated", i(int64(mh.total))),
		kv("startup.allocated", i(int64(mh.startup))), kv("replication.backlog", i(0)),
		kv("clients.slaves", i(0)), kv("clients.normal", i(0)), kv("cluster.links", i(0)),
		kv("aof.buffer", i(0)), kv("lua.caches", i(0)), kv("functions.caches", i(0)),
		kv("db.0", resp.Map(resp.BulkString("overhead.hashtable.main"), i(int64(mh.mainTable)),
			resp.BulkString("overhead.hashtable.expires"), i(int64(mh.expireTable)),
			resp.BulkString("overhead.hashtable.slot-to-keys"), i(0))),
		kv("overhead.total", i(int64(mh.overhead))), kv("keys.count", i(int64(mh.keys))),
		kv("keys.bytes-per-key", i(perKey)), kv("dataset.bytes", i(dataset)),
		kv("dataset.percentage", resp.Double(100*float64(dataset)/float64(max(net, 1)))),
		kv("peak.percentage", resp.Double(100*ratio(mh.total, mh.peak))),
		kv("allocator.allocated", i(int64(mh.allocated))), kv("allocator.active", i(int64(mh.active))),
		kv("allocator.resident", i(int64(mh.resident))),
		kv("allocator-fragmentation.ratio", resp.Double(ratio(mh.active, mh.allocated))),
		kv("allocator-fragmentation.bytes", i(diff(mh.active, mh.allocated))),
		kv("allocator-rss.ratio", resp.Double(ratio(mh.resident, mh.active))),
		kv("allocator-rss.bytes", i(diff(mh.resident, mh.active))),
		kv("rss-overhead.ratio", resp.Double(ratio(mh.rss, mh.resident))),
		kv("rss-overhead.bytes", i(diff(mh.rss, mh.resident))),
		kv("fragmentation", resp.Double(ratio(mh.rss, mh.total))),
		kv("fragmentation.bytes", i(diff(mh.rss, mh.total))),
	} {
		out = append(out, p...)
	}
	return resp.Map(out...)
}

// cmdMemoryMallocStats: Go's runtime has no report of the kind jemalloc
// prints, and Redis answers this for allocators without one.
func cmdMemoryMallocStats(*Server, *client, [][]byte) resp.Value {
	return resp.BulkString("Stats not supported for the current allocator")
}

// cmdMemoryDoctor is MEMORY DOCTOR: Redis's checks and texts, on the
// figures above (the checks of replica and client buffers and of the
// script cache never fire: those are not measured here).
func cmdMemoryDoctor(s *Server, _ *client, _ [][]byte) resp.Value {
	return resp.Verbatim("txt", []byte(doctorReport(s.memOverhead())))
}

const (
	doctorMB    = 1024 * 1024
	doctorEmpty = "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n"
	doctorFine  = "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n"
)

// doctorReport applies getMemoryDoctorReport's rules to mh.
func doctorReport(mh memOverhead) string {
	if mh.total < 5*doctorMB {
		return doctorEmpty
	}
	big := func(r float64, bytes int64, over float64) bool { return r > over && bytes > 10*doctorMB }
	var found []string
	if ratio(mh.peak, mh.total) > 1.5 {
		found = append(found, doctorPeak)
	}
	if big(ratio(mh.rss, mh.total), diff(mh.rss, mh.total), 1.4) {
		found = append(found, strings.Replace(doctorFrag, "%s", "go-"+runtime.Version(), 1))
	}
	if big(ratio(mh.active, mh.allocated), diff(mh.active, mh.allocated), 1.1) {
		found = append(found, doctorAllocFrag)
	}
	if big(ratio(mh.resident, mh.active), diff(mh.resident, mh.active), 1.1) {
		found = append(found, doctorAllocRSS)
	}
	if big(ratio(mh.rss, mh.resident), diff(mh.rss, mh.resident), 1.1) {
		found = append(found, doctorProcRSS)
	}
	if len(found) == 0 {
		return doctorFine
	}
	return "Sam, I detected a few issues in this Redis instance memory implants:\n\n" +
		strings.Join(found, "") + "I'm here to keep you safe, Sam. I want to help you.\n"
}

const (
	doctorPeak      = " * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n"
	doctorFrag      = " * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"%s\".\n\n"
	doctorAllocFrag = " * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n"
	doctorAllocRSS  = " * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n"
	doctorProcRSS   = " * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n"
)
