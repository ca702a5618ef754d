package server

import (
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// INFO [section ...], in Redis's format: "# Section" headers, "field:value"
// lines joined by CRLF, sections separated by a blank line.

// infoSection renders one section's fields; def: part of the default
// set (INFO, INFO default), as in Redis 7.2; names: the names that select
// it (lowercase).
type infoSection struct {
	name   string
	def    bool
	fields func(s *Server) [][2]string
	names  []string
}

// infoSections are in Redis 7.2's order (genRedisInfoString). Redis's
// Debug section (asked by name only) has no field with a meaning here and
// is left out, as are Redis's fields that mean nothing here
// (docs/compatibility.md, INFO). Fields of slotraft's own end their
// section.
var infoSections = []infoSection{
	{"Server", true, (*Server).infoServer, nil},
	{"Clients", true, (*Server).infoClients, nil},
	{"Memory", true, (*Server).infoMemory, nil},
	{"Persistence", true, (*Server).infoPersistence, nil},
	{"Stats", true, (*Server).infoStats, nil},
	{"Replication", true, (*Server).infoReplication, nil},
	{"CPU", true, (*Server).infoCPU, nil},
	{"Modules", true, func(*Server) [][2]string { return nil }, []string{"modules", "module_list"}},
	{"Commandstats", false, (*Server).infoCommandStats, nil},
	{"Errorstats", true, (*Server).infoErrorStats, nil},
	{"Latencystats", false, (*Server).infoLatencyStats, nil},
	{"Cluster", true, (*Server).infoCluster, nil},
	{"Keyspace", true, (*Server).infoKeyspace, nil},
}

func infoCommand() *command {
	return &command{meta: &resp.Command{Name: "info", Arity: -1, Flags: resp.FlagLoading | resp.FlagStale, ACL: []string{"slow", "dangerous"},
		Group: "server", Since: "1.0.0", Summary: "Returns information and statistics about the server.", Complexity: "O(1)",
		Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}}, node: cmdInfo}
}

// infoWanted is Redis 7.2's genInfoSectionDict: no argument or
// "default" is the default sections, "all" and "everything" every
// section, other names (any case) those sections; unknown names select
// nothing.
func infoWanted(args [][]byte) func(sec infoSection) bool {
	want := map[string]bool{}
	for _, a := range args {
		want[strings.ToLower(string(a))] = true
	}
	all := want["all"] || want["everything"]
	def := len(args) == 0 || want["default"]
	return func(sec infoSection) bool {
		if all || def && sec.def || want[strings.ToLower(sec.name)] {
			return true
		}
		for _, n := range sec.names {
			if want[n] {
				return true
			}
		}
		return false
	}
}

func cmdInfo(s *Server, _ *client, args [][]byte) resp.Value {
	return resp.Verbatim("txt", []byte(s.infoText(args[1:])))
}

// infoText is INFO's text for the section names args.
func (s *Server) infoText(args [][]byte) string { return renderInfo(s, infoSections, infoWanted(args)) }

// renderInfo renders the wanted sections of secs in their order.
func renderInfo(s *Server, secs []infoSection, wanted func(infoSection) bool) string {
	var b strings.Builder
	for _, sec := range secs {
		if !wanted(sec) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.name + "\r\n")
		for _, f := range sec.fields(s) {
			b.WriteString(f[0] + ":" + f[1] + "\r\n")
		}
	}
	return b.String()
}

// SetVersion sets the version INFO reports as slotraft_version (the
// process's, from its build); call it before Serve.
func (s *Server) SetVersion(v string) { s.version = v }

func kv(k string, v any) [2]string { return [2]string{k, fmt.Sprint(v)} }

// buildInfo is what the binary says of its source: the commit (8 hex
// digits, Redis's redis_git_sha1), whether the tree had changes, and an id
// of the build (a hash of the build's description, Redis's
// redis_build_id).
var buildInfo = sync.OnceValue(func() (b struct {
	sha1, id string
	dirty    int
}) {
	b.sha1, b.id = "00000000", "0"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, st := range bi.Settings {
		switch st.Key {
		case "vcs.revision":
			b.sha1 = st.Value[:min(8, len(st.Value))]
		case "vcs.modified":
			if st.Value == "true" {
				b.dirty = 1
			}
		}
	}
	h := fnv.New64a()
	h.Write([]byte(bi.String()))
	b.id = strconv.FormatUint(h.Sum64(), 16)
	return b
})

// infoServer: Redis 7.2's fields. gcc_version is 0.0.0, what Redis
// prints when not built by GCC; multiplexing_api is the poller of Go's
// runtime; hz is the rate of the active expiry cycle (the hz parameter,
// which configured_hz shows, raised by dynamic-hz).
func (s *Server) infoServer() [][2]string {
	up := time.Since(s.started)
	exe, _ := os.Executable()
	_, port := hostPort(s.n.Self().ClientAddr)
	now := time.Now()
	bi := buildInfo()
	cfgFile := ""
	if f := s.cfgFile.Load(); f != nil {
		cfgFile = f.Path()
		if abs, err := filepath.Abs(cfgFile); err == nil {
			cfgFile = abs
		}
	}
	out := [][2]string{
		kv("redis_version", Version),
		kv("redis_git_sha1", bi.sha1),
		kv("redis_git_dirty", bi.dirty),
		kv("redis_build_id", bi.id),
		kv("redis_mode", "cluster"),
		kv("os", unameString()),
		kv("arch_bits", strconv.IntSize),
		kv("monotonic_clock", "POSIX clock_gettime"),
		kv("multiplexing_api", multiplexingAPI),
		kv("atomicvar_api", "sync/atomic"),
		kv("gcc_version", "0.0.0"),
		kv("process_id", os.Getpid()),
		kv("process_supervised", "no"),
		kv("run_id", s.runID),
		kv("tcp_port", port),
		kv("server_time_usec", now.UnixMicro()),
		kv("uptime_in_seconds", int64(up/time.Second)),
		kv("uptime_in_days", int64(up/(24*time.Hour))),
		kv("hz", s.n.Expiry().Hz),
		kv("configured_hz", s.configValue("hz")),
		kv("lru_clock", (now.Unix())&((1<<24)-1)),
		kv("executable", exe),
		kv("config_file", cfgFile),
		kv("io_threads_active", 0),
	}
	if l := s.listenerInfo(); l != "" {
		out = append(out, kv("listener0", l))
	}
	if l := s.tlsSrv.listenerInfo(); l != "" {
		out = append(out, kv("listener1", l))
	}
	return append(out, kv("slotraft_version", s.version), kv("slotraft_go_version", runtime.Version()))
}

// listenerInfo is Redis 7.2's listener0 line of the client listener:
// name=tcp,bind=<address>,port=<port>.
func (s *Server) listenerInfo() string {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		return ""
	}
	return "name=tcp," + bindAndPort(ln.Addr())
}

// bindAndPort is a listener's "bind=<host>,port=<port>" in INFO's
// listener lines (* for every IPv4 address, -::* for every IPv6 one).
func bindAndPort(a net.Addr) string {
	host, port := hostPort(a.String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "*"
		if ip.To4() == nil {
			host = "-::*"
		}
	}
	return fmt.Sprintf("bind=%s,port=%d", host, port)
}

// infoClients: Redis 7.2's fields with Redis 7.4's pubsub_clients,
// watching_clients and total_watched_keys at 7.4's places. The blocking
// counts are those of the groups led here (where blocked commands wait);
// cluster_connections counts the cluster bus's open connections.
func (s *Server) infoClients() [][2]string {
	s.mu.Lock()
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	watching := 0
	watched := map[string]struct{}{}
	for _, c := range clients {
		c.mu.Lock()
		ws := c.pub.watches
		c.mu.Unlock()
		if len(ws) > 0 {
			watching++
		}
		for _, w := range ws {
			watched[string(w.Key)] = struct{}{}
		}
	}
	var blk fsm.BlockingStats
	for _, g := range s.ledGroups() {
		_ = g.ReadStale(func(st fsm.Reader) {
			b := st.BlockingStats()
			blk.Keys += b.Keys
			blk.KeysOnNoKey += b.KeysOnNoKey
			blk.WithTimeout += b.WithTimeout
		})
	}
	trackingClients, _, _, _ := s.trk.stats()
	return [][2]string{
		kv("connected_clients", len(clients)),
		kv("cluster_connections", s.n.BusConnections()),
		kv("maxclients", s.connCfg.maxClients.Load()),
		kv("client_recent_max_input_buffer", s.io.peakIn.get()),
		kv("client_recent_max_output_buffer", s.io.peakOut.get()),
		kv("blocked_clients", s.blockedN.Load()),
		kv("tracking_clients", trackingClients),
		kv("pubsub_clients", s.ps.reg.clients.Load()),
		kv("watching_clients", watching),
		kv("clients_in_timeout_table", blk.WithTimeout),
		kv("total_watched_keys", len(watched)),
		kv("total_blocking_keys", blk.Keys),
		kv("total_blocking_keys_on_nokey", blk.KeysOnNoKey),
	}
}

// infoMemory: Redis 7.2's fields that have a meaning here, in its order.
// used_memory is the Go heap's bytes in objects, garbage not yet
// collected included (run MEMORY PURGE first for the live heap);
// used_memory_rss the process's resident set; the overhead, startup and
// allocator figures are MEMORY STATS' (memory_report.go).
// used_memory_dataset is the estimated size of the data of every group
// hosted here, what maxmemory limits (cluster/eviction.go);
// slotraft_keys_held the keys of those groups (memory_cmd.go). Scripts
// and functions are counted from one group (every group holds them all).
func (s *Server) infoMemory() [][2]string {
	mm := s.n.Eviction().MaxMemory
	mh := s.memOverhead()
	used, rss := mh.total, mh.rss
	dataset := uint64(max(s.n.DataBytes(), 0))
	scripts, libs, funcs := s.scriptCounts()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	out := [][2]string{
		kv("used_memory", used),
		kv("used_memory_human", bytesToHuman(used)),
		kv("used_memory_rss", rss),
		kv("used_memory_rss_human", bytesToHuman(rss)),
		kv("used_memory_peak", mh.peak),
		kv("used_memory_peak_human", bytesToHuman(mh.peak)),
		kv("used_memory_peak_perc", fmt.Sprintf("%.2f%%", 100*ratio(used, mh.peak))),
		kv("used_memory_overhead", mh.overhead),
		kv("used_memory_startup", mh.startup),
		kv("used_memory_dataset", dataset),
		kv("used_memory_dataset_perc", fmt.Sprintf("%.2f%%", 100*float64(dataset)/float64(max(diff(used, mh.startup), 1)))),
		kv("allocator_allocated", mh.allocated),
		kv("allocator_active", mh.active),
		kv("allocator_resident", mh.resident),
	}
	if sys := systemMemory(); sys > 0 {
		out = append(out, kv("total_system_memory", sys), kv("total_system_memory_human", bytesToHuman(sys)))
	}
	out = append(out,
		kv("number_of_cached_scripts", scripts),
		kv("number_of_functions", funcs),
		kv("number_of_libraries", libs),
		kv("maxmemory", mm),
		kv("maxmemory_human", bytesToHuman(uint64(mm))),
		kv("maxmemory_policy", s.configValue("maxmemory-policy")),
		kv("allocator_frag_ratio", fmt.Sprintf("%.2f", ratio(mh.active, mh.allocated))),
		kv("allocator_frag_bytes", diff(mh.active, mh.allocated)),
		kv("allocator_rss_ratio", fmt.Sprintf("%.2f", ratio(mh.resident, mh.active))),
		kv("allocator_rss_bytes", diff(mh.resident, mh.active)),
		kv("rss_overhead_ratio", fmt.Sprintf("%.2f", ratio(rss, mh.resident))),
		kv("rss_overhead_bytes", diff(rss, mh.resident)),
		kv("mem_fragmentation_ratio", fmt.Sprintf("%.2f", ratio(rss, used))),
		kv("mem_fragmentation_bytes", diff(rss, used)),
		kv("mem_not_counted_for_evict", 0),
		kv("mem_aof_buffer", 0),
		kv("mem_allocator", "go-"+runtime.Version()),
		kv("active_defrag_running", 0),
		kv("lazyfree_pending_objects", 0), // no value waits: the Go collector reclaims dropped ones concurrently
		kv("lazyfreed_objects", s.n.LazyFreed()),
		kv("go_gc_cycles", m.NumGC),
		kv("slotraft_keys_held", mh.keys),
	)
	return out
}

// scriptCounts are the scripts cached (the most any group led here holds:
// SCRIPT LOAD reaches each of them, EVAL caches in the group it runs in)
// and the libraries and functions loaded (read from one group hosted here:
// FUNCTION LOAD reaches every group).
func (s *Server) scriptCounts() (scripts, libs, funcs int) {
	for _, g := range s.ledGroups() {
		_ = g.ReadStale(func(st fsm.Reader) { scripts = max(scripts, st.ScriptCount()) })
	}
	for _, g := range s.n.Groups() {
		if g.ReadStale(func(st fsm.Reader) { libs, funcs = st.LibraryCount(), st.FunctionCount() }) == nil {
			break
		}
	}
	return scripts, libs, funcs
}

// processRSS is the resident set size read from /proc/self/statm, as
// redis-server reads its own; false where there is no /proc.
func processRSS() (uint64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * uint64(os.Getpagesize()), true
}

// bytesToHuman formats n as Redis does: 1023B, 1.50K, 2.00M, 3.00G…
func bytesToHuman(n uint64) string {
	f := float64(n)
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.2fK", f/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.2fM", f/(1024*1024))
	case n < 1024*1024*1024*1024:
		return fmt.Sprintf("%.2fG", f/(1024*1024*1024))
	}
	return fmt.Sprintf("%.2fT", f/(1024*1024*1024*1024))
}

// infoPersistence: durability is the Raft log (fsync'd on a quorum before
// a write is acknowledged) plus Raft snapshots, which SAVE and BGSAVE take
// (cluster/save.go): the rdb_* fields are those snapshots'; there is no
// fork (no copy-on-write figures) and no AOF (Redis's values with
// appendonly no).
func (s *Server) infoPersistence() [][2]string {
	st := s.n.SaveStatus()
	status, cur, running := "ok", int64(-1), 0
	if !st.LastOK {
		status = "err"
	}
	if st.InProgress {
		cur, running = int64(time.Since(st.Started).Seconds()), 1
	}
	last := int64(-1)
	if st.LastDuration >= 0 {
		last = int64(st.LastDuration / time.Second)
	}
	return [][2]string{
		kv("loading", 0),
		kv("async_loading", 0),
		kv("rdb_changes_since_last_save", st.Changes),
		kv("rdb_bgsave_in_progress", running),
		kv("rdb_last_save_time", st.LastSave.Unix()),
		kv("rdb_last_bgsave_status", status),
		kv("rdb_last_bgsave_time_sec", last),
		kv("rdb_current_bgsave_time_sec", cur),
		kv("rdb_saves", st.Saves),
		kv("aof_enabled", 0),
		kv("aof_rewrite_in_progress", 0),
		kv("aof_rewrite_scheduled", 0),
		kv("aof_last_rewrite_time_sec", -1),
		kv("aof_current_rewrite_time_sec", -1),
		kv("aof_last_bgrewrite_status", "ok"),
		kv("aof_rewrites", 0),
		kv("aof_rewrites_consecutive_failures", 0),
		kv("aof_last_write_status", "ok"),
	}
}

// infoStats are the Stats section's fields that mean something here,
// in Redis 7.2's order (Redis 7.4's client_output_buffer_limit_disconnections
// at 7.4's place), then slotraft's pub/sub forwarding counters. Expiry's
// counters are those of the groups led here (cluster/expiry.go).
func (s *Server) infoStats() [][2]string {
	ex := s.n.ExpiryStats()
	channels, patterns, shard := s.ps.reg.counts()
	f := [][2]string{
		kv("total_connections_received", s.stats.connections.Load()),
		kv("total_commands_processed", s.stats.commands.Load()),
		kv("instantaneous_ops_per_sec", int64(s.inst.rate(instOps))),
		kv("total_net_input_bytes", s.stats.netIn.Load()),
		kv("total_net_output_bytes", s.stats.netOut.Load()),
		kv("instantaneous_input_kbps", fmt.Sprintf("%.2f", s.inst.rate(instNetIn)/1024)),
		kv("instantaneous_output_kbps", fmt.Sprintf("%.2f", s.inst.rate(instNetOut)/1024)),
		kv("rejected_connections", s.stats.rejected.Load()),
		kv("expired_keys", ex.ExpiredKeys),
		kv("expired_stale_perc", fmt.Sprintf("%.2f", ex.StalePerc)),
		kv("expired_time_cap_reached_count", ex.TimeCapReached),
		kv("expire_cycle_cpu_milliseconds", ex.CycleCPUMillis),
	}
	f = append(f, s.infoEviction()...) // maxmemory.go
	forwarded, dropped := s.n.ForwardStats()
	_, trackKeys, trackItems, trackPrefixes := s.trk.stats()
	return append(f,
		kv("keyspace_hits", s.cstats.hits.Load()),
		kv("keyspace_misses", s.cstats.misses.Load()),
		kv("pubsub_channels", channels),
		kv("pubsub_patterns", patterns),
		kv("pubsubshard_channels", shard),
		kv("migrate_cached_sockets", s.migrateConns.cached()),
		kv("tracking_total_keys", trackKeys),
		kv("tracking_total_items", trackItems),
		kv("tracking_total_prefixes", trackPrefixes),
		kv("total_error_replies", s.cstats.errTotal.Load()),
		kv("total_reads_processed", s.io.reads.Load()),
		kv("total_writes_processed", s.io.writes.Load()),
		kv("io_threaded_reads_processed", 0),
		kv("io_threaded_writes_processed", 0),
		kv("client_output_buffer_limit_disconnections", s.ps.obufKills.Load()),
		kv("reply_buffer_shrinks", s.io.shrinks.Load()),
		kv("reply_buffer_expands", s.io.expands.Load()),
		kv("acl_access_denied_auth", s.io.authDenied.Load()),
		kv("acl_access_denied_cmd", s.acl.deniedCmd.Load()),
		kv("acl_access_denied_key", s.acl.deniedKey.Load()),
		kv("acl_access_denied_channel", s.acl.deniedChannel.Load()),
		kv("pubsub_forwarded_messages", forwarded),
		kv("pubsub_forward_dropped_messages", dropped),
	)
}

// infoReplication is the replication section: the role as ROLE reads it
// (replication_cmd.go); connected_slaves counts the other replicas of the
// groups led here from the map, without asking them.
func (s *Server) infoReplication() [][2]string {
	t := s.topology()
	followers := map[string]bool{}
	for _, gv := range t.groups {
		if gv.leader == t.self.ID {
			for _, id := range gv.replicas[1:] {
				followers[id] = true
			}
		}
	}
	v := s.role()
	replid, offset := NodeID(t.self.ID), max(v.offset, 0)
	if !v.master && v.connected {
		replid = NodeID(v.leader.ID)
	}
	return append(s.infoRole(v),
		kv("connected_slaves", len(followers)),
		kv("master_failover_state", "no-failover"),
		kv("master_replid", replid),
		kv("master_replid2", strings.Repeat("0", 40)),
		kv("master_repl_offset", offset),
		kv("second_repl_offset", -1),
	)
}

// infoCPU: the process's CPU times from getrusage, as Redis; Redis's
// main-thread times mean nothing for Go's scheduler and are left out.
func (s *Server) infoCPU() [][2]string {
	var out [][2]string
	if sys, user, sysC, userC, ok := cpuTimes(); ok {
		out = append(out, kv("used_cpu_sys", sys), kv("used_cpu_user", user),
			kv("used_cpu_sys_children", sysC), kv("used_cpu_user_children", userC))
	}
	return append(out, kv("goroutines", runtime.NumGoroutine()), kv("gomaxprocs", runtime.GOMAXPROCS(0)))
}

func (s *Server) infoCluster() [][2]string { return [][2]string{kv("cluster_enabled", 1)} }

// infoKeyspace counts the keys of the groups led here (the keyspace this
// node serves as master), from their local state, without walking the
// keys: the counts are the stores' own and avg_ttl is sampled.
func (s *Server) infoKeyspace() [][2]string {
	var keys, expires, ttlSum int64
	for _, g := range s.ledGroups() {
		_ = g.ReadStale(func(st fsm.Reader) {
			now := cluster.ReadNow(st)
			st.View(func(kvs store.Reader) {
				n := int64(kvs.ExpiringLen())
				keys += int64(kvs.Len())
				expires += n
				ttlSum += kvs.AverageTTL(now, ttlSamples) * n
			})
		})
	}
	if keys == 0 {
		return nil
	}
	avg := int64(0)
	if expires > 0 {
		avg = ttlSum / expires
	}
	return [][2]string{kv("db0", fmt.Sprintf("keys=%d,expires=%d,avg_ttl=%d", keys, expires, avg))}
}

// ttlSamples is how many deadlines avg_ttl looks at per group.
const ttlSamples = 64
