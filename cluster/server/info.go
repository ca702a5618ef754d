package server

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// INFO [section ...], in Redis's format: "# Section" headers, "field:value"
// lines joined by CRLF, sections separated by a blank line.

// infoSection renders one section's fields; def: part of the default
// set (INFO, INFO default), as in Redis 7.2.
type infoSection struct {
	name   string
	def    bool
	fields func(s *Server) [][2]string
}

// infoSections are in Redis 7.2's order (genRedisInfoString).
var infoSections = []infoSection{
	{"Server", true, (*Server).infoServer},
	{"Clients", true, (*Server).infoClients},
	{"Memory", true, (*Server).infoMemory},
	{"Persistence", true, (*Server).infoPersistence},
	{"Stats", true, (*Server).infoStats},
	{"Replication", true, (*Server).infoReplication},
	{"CPU", true, (*Server).infoCPU},
	{"Commandstats", false, (*Server).infoCommandStats},
	{"Errorstats", true, (*Server).infoErrorStats},
	{"Latencystats", false, (*Server).infoLatencyStats},
	{"Cluster", true, (*Server).infoCluster},
	{"Keyspace", true, (*Server).infoKeyspace},
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
		return all || def && sec.def || want[strings.ToLower(sec.name)]
	}
}

func cmdInfo(s *Server, _ *client, args [][]byte) resp.Value {
	wanted := infoWanted(args[1:])
	var b strings.Builder
	for _, sec := range infoSections {
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
	return resp.Verbatim("txt", []byte(b.String()))
}

func kv(k string, v any) [2]string { return [2]string{k, fmt.Sprint(v)} }

func (s *Server) infoServer() [][2]string {
	up := time.Since(s.started)
	exe, _ := os.Executable()
	_, port := hostPort(s.n.Self().ClientAddr)
	now := time.Now()
	return [][2]string{
		kv("redis_version", Version),
		kv("redis_git_sha1", "00000000"),
		kv("redis_git_dirty", 0),
		kv("redis_mode", "cluster"),
		kv("slotraft_go_version", runtime.Version()),
		kv("os", runtime.GOOS+" "+runtime.GOARCH),
		kv("arch_bits", 64),
		kv("multiplexing_api", "goroutines"),
		kv("process_id", os.Getpid()),
		kv("process_supervised", "no"),
		kv("run_id", s.runID),
		kv("tcp_port", port),
		kv("server_time_usec", now.UnixMicro()),
		kv("uptime_in_seconds", int64(up/time.Second)),
		kv("uptime_in_days", int64(up/(24*time.Hour))),
		kv("hz", 10),
		kv("configured_hz", 10),
		kv("lru_clock", (now.Unix())&((1<<24)-1)),
		kv("executable", exe),
		kv("config_file", ""),
		kv("io_threads_active", 0),
	}
}

func (s *Server) infoClients() [][2]string {
	s.mu.Lock()
	n := len(s.clients)
	s.mu.Unlock()
	trackingClients, _, _, _ := s.trk.stats()
	return [][2]string{
		kv("connected_clients", n),
		kv("cluster_connections", 0),
		kv("maxclients", 10000),
		kv("blocked_clients", s.blockedN.Load()),
		kv("tracking_clients", trackingClients),
		kv("pubsub_clients", s.ps.reg.clients.Load()),
		kv("clients_in_timeout_table", 0),
		kv("total_blocking_keys", 0),
	}
}

// infoMemory: used_memory is the Go heap's bytes in objects, garbage not yet
// collected included (run MEMORY PURGE first for the live heap);
// used_memory_rss the process's resident set; slotraft_keys_held the keys
// of every group hosted here (memory_cmd.go). used_memory_dataset is the
// estimated size of the data of every group hosted here, what maxmemory
// limits (cluster/eviction.go).
func (s *Server) infoMemory() [][2]string {
	mm := s.n.Eviction().MaxMemory
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	used := m.HeapAlloc
	peak := s.notePeak(used)
	rss, ok := processRSS()
	if !ok { // no /proc: what the runtime holds from the OS, a close upper bound
		rss = m.Sys - m.HeapReleased
	}
	return [][2]string{
		kv("used_memory", used),
		kv("used_memory_human", bytesToHuman(used)),
		kv("used_memory_rss", rss),
		kv("used_memory_rss_human", bytesToHuman(rss)),
		kv("used_memory_peak", peak),
		kv("used_memory_peak_human", bytesToHuman(peak)),
		kv("used_memory_peak_perc", fmt.Sprintf("%.2f%%", 100*float64(used)/float64(max(peak, 1)))),
		kv("used_memory_dataset", s.n.DataBytes()),
		kv("maxmemory", mm),
		kv("maxmemory_human", bytesToHuman(uint64(mm))),
		kv("maxmemory_policy", s.configValue("maxmemory-policy")),
		kv("mem_not_counted_for_evict", 0),
		kv("mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(rss)/float64(max(used, 1)))),
		kv("mem_allocator", "go-"+runtime.Version()),
		kv("go_gc_cycles", m.NumGC),
		kv("slotraft_keys_held", s.keysHeld()),
	}
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

func (s *Server) infoPersistence() [][2]string {
	// Durability is the Raft log (fsync'd before a write is acknowledged) plus
	// Raft snapshots; there is no RDB or AOF.
	st := s.n.SaveStatus()
	status, cur, running := "ok", int64(-1), 0
	if !st.LastOK {
		status = "err"
	}
	if st.InProgress {
		cur, running = int64(time.Since(st.Started).Seconds()), 1
	}
	return [][2]string{
		kv("loading", 0),
		kv("async_loading", 0),
		kv("rdb_bgsave_in_progress", running),
		kv("rdb_last_save_time", st.LastSave.Unix()),
		kv("rdb_last_bgsave_status", status),
		kv("rdb_current_bgsave_time_sec", cur),
		kv("aof_enabled", 0),
		kv("aof_rewrite_in_progress", 0),
	}
}

// infoStats are the Stats section's fields that mean something here,
// in Redis 7.2's order.
func (s *Server) infoStats() [][2]string {
	f := [][2]string{
		kv("total_connections_received", s.stats.connections.Load()),
		kv("total_commands_processed", s.stats.commands.Load()),
		kv("instantaneous_ops_per_sec", int64(s.inst.rate(instOps))),
		kv("total_net_input_bytes", s.stats.netIn.Load()),
		kv("total_net_output_bytes", s.stats.netOut.Load()),
		kv("instantaneous_input_kbps", fmt.Sprintf("%.2f", s.inst.rate(instNetIn)/1024)),
		kv("instantaneous_output_kbps", fmt.Sprintf("%.2f", s.inst.rate(instNetOut)/1024)),
		kv("rejected_connections", s.stats.rejected.Load()),
	}
	f = append(f, s.infoEviction()...) // maxmemory.go
	f = append(f,
		kv("keyspace_hits", s.cstats.hits.Load()),
		kv("keyspace_misses", s.cstats.misses.Load()),
	)
	f = append(f, s.infoPubsub()...) // pubsub_channels & co. (pubsub_commands.go)
	_, keys, items, prefixes := s.trk.stats()
	return append(f,
		kv("tracking_total_keys", keys),
		kv("tracking_total_items", items),
		kv("tracking_total_prefixes", prefixes),
		kv("total_error_replies", s.cstats.errTotal.Load()),
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

func (s *Server) infoCPU() [][2]string {
	return [][2]string{kv("goroutines", runtime.NumGoroutine()), kv("gomaxprocs", runtime.GOMAXPROCS(0))}
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

// infoPubsub are INFO's pub/sub fields of the Stats section: Redis's
// counts of this node's channels, patterns and shard channels, the
// connections closed over their output limit, and slotraft's forwarding
// counters (messages sent to other nodes, and dropped on the way).
func (s *Server) infoPubsub() [][2]string {
	channels, patterns, shard := s.ps.reg.counts()
	forwarded, dropped := s.n.ForwardStats()
	return [][2]string{
		kv("pubsub_channels", channels),
		kv("pubsub_patterns", patterns),
		kv("pubsubshard_channels", shard),
		kv("client_output_buffer_limit_disconnections", s.ps.obufKills.Load()),
		kv("pubsub_forwarded_messages", forwarded),
		kv("pubsub_forward_dropped_messages", dropped),
	}
}
