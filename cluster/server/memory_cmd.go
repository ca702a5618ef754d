package server

import (
	"runtime/debug"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// MEMORY PURGE and MEMORY HELP. INFO memory's used_memory is the Go heap's
// bytes in objects (runtime.MemStats.HeapAlloc), which counts garbage the
// collector has not reclaimed yet; MEMORY PURGE runs a full collection and
// returns freed pages to the OS, so the used_memory and used_memory_rss read
// right after it are the live heap and the resident set — the numbers `make
// bench-memory` compares with redis-server's.

func memoryCommands() []*command {
	sub := func(name string, arity int, flags resp.Flag, acl []string, since, summary string, run nodeHandler) *command {
		return &command{meta: subMeta("memory", name, arity, flags, acl, since, summary, "Depends on how much memory is allocated, could be slow"), node: run}
	}
	subs := []*command{
		sub("help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "4.0.0",
			"Returns helpful text about the different subcommands.", cmdMemoryHelp),
		sub("purge", 2, 0, []string{"slow"}, "4.0.0",
			"Asks the allocator to release memory.", cmdMemoryPurge),
	}
	subs[0].meta.Complexity = "O(1)"
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
		"PURGE",
		"    Run a full garbage collection and return freed memory to the OS.",
	})
}

// keysHeld counts the keys this node holds in memory: every group it hosts,
// led or replicated, expired-but-not-deleted keys included. Unlike DBSIZE
// (the groups led here) it is what this node's heap pays for.
func (s *Server) keysHeld() int {
	n := 0
	for _, g := range s.n.Groups() {
		_ = g.ReadStale(func(st fsm.Reader) { // ErrNotLeader: not hosted here
			st.View(func(kvs store.Reader) { n += kvs.Len() })
		})
	}
	return n
}
