package difftest

import (
	"regexp"
	"strings"
	"testing"
)

// infoLeftOut are Redis's INFO fields that mean nothing in slotraft and
// that it leaves out (docs/compatibility.md, INFO): Lua's memory (not
// measured), replication buffers and backlog (followers catch up from the
// Raft log), client buffers' memory, lazy freeing, fork and copy-on-write
// figures, RDB loading, partial/full syncs, defragmentation, the event
// loop, the main thread's CPU.
var infoLeftOut = setOf(
	// Memory
	"used_memory_lua", "used_memory_vm_eval", "used_memory_lua_human", "used_memory_scripts_eval",
	"used_memory_vm_functions", "used_memory_vm_total", "used_memory_vm_total_human", "used_memory_functions",
	"used_memory_scripts", "used_memory_scripts_human", "mem_replication_backlog", "mem_total_replication_buffers",
	"mem_clients_slaves", "mem_clients_normal", "mem_cluster_links",
	// Persistence
	"current_cow_peak", "current_cow_size", "current_cow_size_age", "current_fork_perc",
	"current_save_keys_processed", "current_save_keys_total", "rdb_last_cow_size",
	"rdb_last_load_keys_expired", "rdb_last_load_keys_loaded", "aof_last_cow_size",
	"module_fork_in_progress", "module_fork_last_cow_size",
	// Stats
	"total_net_repl_input_bytes", "total_net_repl_output_bytes", "instantaneous_input_repl_kbps",
	"instantaneous_output_repl_kbps", "sync_full", "sync_partial_ok", "sync_partial_err",
	"latest_fork_usec", "total_forks", "slave_expires_tracked_keys",
	"active_defrag_hits", "active_defrag_misses", "active_defrag_key_hits", "active_defrag_key_misses",
	"total_active_defrag_time", "current_active_defrag_time", "unexpected_error_replies",
	"dump_payload_sanitizations", "eventloop_cycles", "eventloop_duration_sum", "eventloop_duration_cmd_sum",
	"instantaneous_eventloop_cycles_per_sec", "instantaneous_eventloop_duration_usec",
	// Replication
	"repl_backlog_active", "repl_backlog_size", "repl_backlog_first_byte_offset", "repl_backlog_histlen",
	// CPU
	"used_cpu_sys_main_thread", "used_cpu_user_main_thread",
)

// infoNotIn70 are fields that slotraft shows and Debian's redis-server 7.0
// does not: Redis 7.2's and 7.4's (skipped on both sides, so that a newer
// redis-server passes too), and slotraft's own.
var infoNotIn70 = setOf(
	"listener0", "total_blocking_keys", "total_blocking_keys_on_nokey", // 7.2
	"acl_access_denied_auth", "acl_access_denied_cmd", "acl_access_denied_key", "acl_access_denied_channel",
	"pubsub_clients", "watching_clients", "total_watched_keys", "client_output_buffer_limit_disconnections", // 7.4
	"client_query_buffer_limit_disconnections", "expired_subkeys", "evicted_scripts",
	"slotraft_version", "slotraft_go_version", "go_gc_cycles", "slotraft_keys_held", "goroutines", "gomaxprocs", // slotraft's
	"pubsub_forwarded_messages", "pubsub_forward_dropped_messages",
)

func setOf(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// infoVariable are the sections whose field names depend on the commands
// run, the keys held or the errors seen: compared elsewhere
// (TestStatsDifferential), not here.
var infoVariable = setOf("Commandstats", "Errorstats", "Latencystats", "Keyspace")

// infoNames renders an INFO text as its sections and their field names,
// in order, without the fields of skip (replicas' slaveN lines too).
func infoNames(info string, skip map[string]bool) string {
	var b strings.Builder
	section := ""
	slaveLine := regexp.MustCompile(`^slave\d+$`)
	for _, line := range strings.Split(info, "\r\n") {
		if h, ok := strings.CutPrefix(line, "# "); ok {
			section = h
			b.WriteString("\n# " + h + ":")
			continue
		}
		name, _, ok := strings.Cut(line, ":")
		if !ok || infoVariable[section] || skip[name] || infoNotIn70[name] || slaveLine.MatchString(name) {
			continue
		}
		b.WriteString(" " + name)
	}
	return b.String()
}

// TestInfoFieldsDifferential: INFO's sections and each section's field
// names, in order, agree with redis-server's (a standalone master, as a
// slotraft node leading its groups is one), for the default, all and
// everything sets and for single and several sections; Redis's fields
// that mean nothing here are the listed ones, the 7.2/7.4 additions and
// slotraft's own fields are skipped by name.
func TestInfoFieldsDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		for _, args := range [][]string{
			{"INFO"}, {"INFO", "default"}, {"INFO", "all"}, {"INFO", "everything"},
			{"INFO", "server"}, {"INFO", "clients"}, {"INFO", "memory"}, {"INFO", "persistence"},
			{"INFO", "stats"}, {"INFO", "replication"}, {"INFO", "cpu"}, {"INFO", "modules"},
			{"INFO", "module_list"}, {"INFO", "cluster"}, {"INFO", "CPU", "server", "Memory"},
			{"INFO", "stats", "default"}, {"INFO", "nosuch", "persistence"},
		} {
			want, got := both(t, rc, sc, args)
			if w, g := infoNames(want.str, infoLeftOut), infoNames(got.str, nil); w != g {
				t.Errorf("RESP%s %q field names:\n  redis:   %s\n  slotraft:%s", proto, args, w, g)
			}
		}
	}
}
