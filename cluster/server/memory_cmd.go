package server

import (
	"runtime/debug"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// MEMORY PURGE and HELP (USAGE, STATS, DOCTOR and MALLOC-STATS are in
// memory_report.go). INFO memory's used_memory is the Go heap's
// bytes in objects (runtime.MemStats.HeapAlloc), which counts garbage the
// collector has not reclaimed yet; MEMORY PURGE runs a full collection and
// returns freed pages to the OS, so the used_memory and used_memory_rss read
// right after it are the live heap and the resident set — the numbers `make
// bench-memory` compares with redis-server's.

func memoryCommands() []*command {
	sub := func(name string, arity int, flags resp.Flag, acl []string, since, summary string, run nodeHandler) *command {
		return &command{meta: subMeta("memory", name, arity, flags, acl, since, summary, "Depends on how much memory is allocated, could be slow"), node: run}
	}
	slow := []string{"slow"}
	report := []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}
	doctor := sub("doctor", 2, 0, slow, "4.0.0", "Outputs a memory problems report.", cmdMemoryDoctor)
	help := sub("help", 2, resp.FlagLoading|resp.FlagStale, slow, "4.0.0",
		"Returns helpful text about the different subcommands.", cmdMemoryHelp)
	malloc := sub("malloc-stats", 2, 0, slow, "4.0.0", "Returns the allocator statistics.", cmdMemoryMallocStats)
	purge := sub("purge", 2, 0, slow, "4.0.0", "Asks the allocator to release memory.", cmdMemoryPurge)
	stats := sub("stats", 2, 0, slow, "4.0.0", "Returns details about memory usage.", cmdMemoryStats)
	usage := sub("usage", -3, resp.FlagReadOnly, []string{"read", "slow"}, "4.0.0",
		"Estimates the memory usage of a key.", cmdMemoryUsage)
	doctor.meta.Complexity, help.meta.Complexity, stats.meta.Complexity = "O(1)", "O(1)", "O(1)"
	doctor.meta.Tips, malloc.meta.Tips, stats.meta.Tips = report, report, report
	purge.meta.Tips = []string{"request_policy:all_shards", "response_policy:all_succeeded"}
	usage.meta.Complexity = "O(N) where N is the number of samples."
	usage.meta.FirstKey, usage.meta.LastKey, usage.meta.Step = 2, 2, 1
	subs := []*command{doctor, help, malloc, purge, stats, usage}
	meta := &resp.Command{Name: "memory", Arity: -2, Group: "server", Since: "4.0.0",
		Summary: "A container for memory diagnostics commands.", Complexity: "Depends on subcommand."}
	return []*command{container(meta, subs...)}
}

// cmdMemoryPurge is MEMORY PURGE: a full garbage collection, then the freed
// pages go back to the OS (debug.FreeOSMemory does both).
func cmdMemoryPurge(*Server, *client, [][]byte) resp.Value {
	debug.FreeOSMemory()
	return resp.OK()
}

func cmdMemoryHelp(*Server, *client, [][]byte) resp.Value {
	return helpReply("MEMORY", []string{
		"DOCTOR",
		"    Return memory problems reports.",
		"MALLOC-STATS",
		"    Return internal statistics report from the memory allocator.",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
	})
}

// keysAndDeadlines counts the keys this node holds in memory (every group
// it hosts, led or replicated, expired-but-not-deleted keys included;
// unlike DBSIZE, what this node's heap pays for) and those of them
// with a deadline.
func (s *Server) keysAndDeadlines() (keys, expiring uint64) {
	for _, g := range s.n.Groups() {
		_ = g.ReadStale(func(st fsm.Reader) { // ErrNotLeader: not hosted here
			st.View(func(kvs store.Reader) {
				keys += uint64(kvs.Len())
				expiring += uint64(kvs.ExpiringLen())
			})
		})
	}
	return keys, expiring
}

// notePeak raises the recorded peak of the heap to used if it is higher,
// and returns the peak.
func (s *Server) notePeak(used uint64) uint64 {
	for {
		peak := s.stats.peakMemory.Load()
		if used <= peak || s.stats.peakMemory.CompareAndSwap(peak, used) {
			return max(peak, used)
		}
	}
}
