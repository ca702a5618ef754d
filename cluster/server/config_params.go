package server

import (
	"math"

	"github.com/slotraft/slotraft/cluster"
)

// configTable is every parameter of Redis 7.2's config table (src/config.c,
// static_configs), in its order, with its alias, flags, syntax, bounds and
// default. Most are stored and reported only; those with a behaviour in
// slotraft get it with onApply/onGet (config_behaviour.go), and
// docs/compatibility.md lists the others.
var configTable = newConfigRegistry(append(append(append(
	configBools(), configStrings()...), configEnums()...), configNumbers()...)...)

// Bounds of Redis's C types.
const (
	intMax   = math.MaxInt32
	intMin   = math.MinInt32
	uintMax  = math.MaxUint32
	longMax  = math.MaxInt64
	ullMax   = -1 // ULLONG_MAX: compared as unsigned
	noAlias  = ""
	mutable  = configFlag(0)
	megabyte = 1 << 20
)

func plain(lo, hi int64) numSpec  { return numSpec{lo: lo, hi: hi} }
func uplain(lo, hi int64) numSpec { return numSpec{lo: lo, hi: hi, unsigned: true} }
func mem(lo, hi int64) numSpec    { return numSpec{lo: lo, hi: hi, unit: unitMemory} }
func umem(lo, hi int64) numSpec   { return numSpec{lo: lo, hi: hi, unsigned: true, unit: unitMemory} }

func boolParam(name, alias string, f configFlag, def bool) *configParam {
	d := "no"
	if def {
		d = "yes"
	}
	return &configParam{name: name, alias: alias, flags: f, def: d,
		parse: func(_, v string) (configValue, error) { return parseYesNo(v) }}
}

func numParam(name, alias string, f configFlag, n numSpec, def int64) *configParam {
	return &configParam{name: name, alias: alias, flags: f, def: n.render(def),
		parse:   func(_, v string) (configValue, error) { return n.parse(v) },
		rewrite: n.rewriteLine}
}

func enumParam(name, alias string, f configFlag, e *configEnum, def string) *configParam {
	return &configParam{name: name, alias: alias, flags: f, def: def,
		parse: func(_, v string) (configValue, error) { return e.parse(v) }}
}

// strParam is a string parameter; check, when set, refuses bad values.
func strParam(name, alias string, f configFlag, def string, check func(string) error) *configParam {
	return &configParam{name: name, alias: alias, flags: f, def: def, rewrite: rewriteString,
		parse: func(_, v string) (configValue, error) {
			if check != nil {
				if err := check(v); err != nil {
					return configValue{}, err
				}
			}
			return configValue{text: v}, nil
		}}
}

func specialParam(name, alias string, f configFlag, def string, parse func(string) (configValue, error)) *configParam {
	return &configParam{name: name, alias: alias, flags: f, def: def,
		parse: func(_, v string) (configValue, error) { return parse(v) }}
}

func configBools() []*configParam {
	const imm, hid = cfgImmutable, cfgHidden
	return []*configParam{
		boolParam("rdbchecksum", noAlias, imm, true),
		boolParam("daemonize", noAlias, imm, false),
		boolParam("io-threads-do-reads", noAlias, imm, false),
		boolParam("always-show-logo", noAlias, imm, false),
		boolParam("protected-mode", noAlias, mutable, true).onApply(protectedModeApply), // protected_mode.go
		boolParam("rdbcompression", noAlias, mutable, true),
		boolParam("rdb-del-sync-files", noAlias, mutable, false),
		boolParam("activerehashing", noAlias, mutable, true),
		boolParam("stop-writes-on-bgsave-error", noAlias, mutable, true),
		boolParam("set-proc-title", noAlias, imm, true),
		boolParam("dynamic-hz", noAlias, mutable, true),
		lazyFreeParam("lazyfree-lazy-eviction", func(c *cluster.LazyFree, on bool) { c.Evict = on }), // lazyfree.go
		lazyFreeParam("lazyfree-lazy-expire", func(c *cluster.LazyFree, on bool) { c.Expire = on }),
		boolParam("lazyfree-lazy-server-del", noAlias, mutable, false),
		lazyFreeParam("lazyfree-lazy-user-del", func(c *cluster.LazyFree, on bool) { c.UserDel = on }),
		lazyFreeParam("lazyfree-lazy-user-flush", func(c *cluster.LazyFree, on bool) { c.UserFlush = on }),
		boolParam("repl-disable-tcp-nodelay", noAlias, mutable, false),
		boolParam("repl-diskless-sync", noAlias, mutable, true),
		boolParam("aof-rewrite-incremental-fsync", noAlias, mutable, true),
		boolParam("no-appendfsync-on-rewrite", noAlias, mutable, false),
		boolParam("cluster-require-full-coverage", noAlias, mutable, true),
		boolParam("rdb-save-incremental-fsync", noAlias, mutable, true),
		boolParam("aof-load-truncated", noAlias, mutable, true),
		boolParam("aof-use-rdb-preamble", noAlias, mutable, true),
		boolParam("aof-timestamp-enabled", noAlias, mutable, false),
		boolParam("cluster-replica-no-failover", "cluster-slave-no-failover", mutable, false),
		boolParam("replica-lazy-flush", "slave-lazy-flush", mutable, false),
		boolParam("replica-serve-stale-data", "slave-serve-stale-data", mutable, true),
		boolParam("replica-read-only", "slave-read-only", mutable, true),
		boolParam("replica-ignore-maxmemory", "slave-ignore-maxmemory", mutable, true),
		boolParam("jemalloc-bg-thread", noAlias, mutable, true),
		boolParam("activedefrag", noAlias, mutable, false),
		boolParam("syslog-enabled", noAlias, imm, false),
		boolParam("cluster-enabled", noAlias, imm, true), // slotraft is always a cluster
		boolParam("appendonly", noAlias, mutable, false),
		boolParam("cluster-allow-reads-when-down", noAlias, mutable, false),
		boolParam("cluster-allow-pubsubshard-when-down", noAlias, mutable, true),
		boolParam("crash-log-enabled", noAlias, mutable, true),
		boolParam("crash-memcheck-enabled", noAlias, mutable, true),
		boolParam("use-exit-on-panic", noAlias, hid, false),
		boolParam("disable-thp", noAlias, imm, true),
		boolParam("cluster-allow-replica-migration", noAlias, mutable, true),
		boolParam("replica-announced", noAlias, mutable, true),
		boolParam("latency-tracking", noAlias, mutable, true),
		boolParam("aof-disable-auto-gc", noAlias, hid, false),
		boolParam("replica-ignore-disk-write-errors", noAlias, mutable, false),
		boolParam("tls-cluster", noAlias, mutable, false),
		boolParam("tls-replication", noAlias, mutable, false),
		boolParam("tls-prefer-server-ciphers", noAlias, mutable, false),
		boolParam("tls-session-caching", noAlias, mutable, true).sharing(tlsBehaviour),
	}
}

func configStrings() []*configParam {
	const imm = cfgImmutable
	p := []*configParam{
		strParam("aclfile", noAlias, imm, "", nil),
		strParam("unixsocket", noAlias, imm, "", nil),
		strParam("pidfile", noAlias, imm, "", nil),
		strParam("replica-announce-ip", "slave-announce-ip", mutable, "", nil),
		strParam("masteruser", noAlias, mutable, "", nil),
		strParam("cluster-announce-ip", noAlias, mutable, "", nil),
		strParam("cluster-config-file", noAlias, imm, "nodes.conf", nil),
		strParam("cluster-announce-hostname", noAlias, mutable, "", checkHostname),
		strParam("cluster-announce-human-nodename", noAlias, mutable, "", checkNodename),
		strParam("syslog-ident", noAlias, imm, "redis", nil),
		strParam("dbfilename", noAlias, cfgProtected, "dump.rdb", checkBaseName("dbfilename", "a filename", false)),
		strParam("appendfilename", noAlias, imm, "appendonly.aof", checkBaseName("appendfilename", "a filename", true)),
		strParam("appenddirname", noAlias, imm, "appendonlydir", checkBaseName("appenddirname", "a dirname", true)),
		strParam("server_cpulist", noAlias, imm, "", nil),
		strParam("bio_cpulist", noAlias, imm, "", nil),
		strParam("aof_rewrite_cpulist", noAlias, imm, "", nil),
		strParam("bgsave_cpulist", noAlias, imm, "", nil),
		strParam("ignore-warnings", noAlias, mutable, "", nil),
		strParam("proc-title-template", noAlias, mutable, "{title} {listen-addr} {server-mode}", checkProcTitle),
		strParam("bind-source-addr", noAlias, mutable, "", nil),
		strParam("logfile", noAlias, imm, "", nil),
		strParam("locale-collate", noAlias, mutable, "", nil),
		strParam("masterauth", noAlias, mutable, "", nil),
		strParam("requirepass", noAlias, mutable, "", nil).onGet(requirePassGet).onApply(requirePassApply),
	}
	for _, n := range []string{"tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file",
		"tls-client-key-file", "tls-client-key-file-pass", "tls-dh-params-file", "tls-ca-cert-file",
		"tls-ca-cert-dir", "tls-protocols", "tls-ciphers", "tls-ciphersuites"} {
		p = append(p, strParam(n, noAlias, mutable, "", nil).sharing(tlsBehaviour))
	}
	return append(p,
		specialParam("dir", noAlias, cfgProtected, workingDir(), parseDir).rewriteAs(rewriteDir),
		specialParam("save", noAlias, mutable, "", parseSave).multi().rewriteAs(rewriteSave), // no RDB: the Raft log and its snapshots instead
		obufLimitParam().multi().rewriteAs(rewriteObufLimits),
		specialParam("oom-score-adj-values", noAlias, mutable, "0 200 800", parseOOMValues).multi(),
		notifyEventsParam().rewriteAs(rewriteQuoted),
		specialParam("bind", noAlias, mutable, "* -::*", parseBind).multi().rewriteAs(rewriteBind),
		specialParam("replicaof", "slaveof", imm, "", parseReplicaOf).multi().rewriteAs(rewriteDropped),
		specialParam("latency-tracking-info-percentiles", noAlias, mutable, "50 99 99.9", parsePercentiles).multi().rewriteAs(rewriteAlwaysQuotedEmpty),
	)
}

var (
	enumProtected = newEnum(false, "no", 0, "yes", 1, "local", 2)
	enumShutdown  = newEnum(true, "default", 0, "save", 1, "nosave", 2, "now", 4, "force", 8)
)

func configEnums() []*configParam {
	const imm = cfgImmutable
	return []*configParam{
		enumParam("supervised", noAlias, imm, newEnum(false, "upstart", 1, "systemd", 2, "auto", 3, "no", 0), "no"),
		enumParam("syslog-facility", noAlias, imm, newEnum(false, "user", 8, "local0", 128, "local1", 136, "local2", 144,
			"local3", 152, "local4", 160, "local5", 168, "local6", 176, "local7", 184), "local0"),
		enumParam("repl-diskless-load", noAlias, mutable, newEnum(false, "disabled", 0, "on-empty-db", 1, "swapdb", 2), "disabled"),
		enumParam("loglevel", noAlias, mutable, newEnum(false, "debug", 0, "verbose", 1, "notice", 2, "warning", 3, "nothing", 4), "notice").onApply(applyLogLevel), // log_settings.go
		enumParam("maxmemory-policy", noAlias, mutable, newEnum(false, "volatile-lru", 1, "volatile-lfu", 2,
			"volatile-random", 3, "volatile-ttl", 4, "allkeys-lru", 5, "allkeys-lfu", 6, "allkeys-random", 7, "noeviction", 0), "noeviction"),
		enumParam("appendfsync", noAlias, mutable, newEnum(false, "everysec", 1, "always", 2, "no", 0), "everysec"),
		enumParam("oom-score-adj", noAlias, mutable, newEnum(false, "no", 0, "yes", 1, "relative", 1, "absolute", 2), "no"),
		enumParam("acl-pubsub-default", noAlias, mutable, newEnum(false, "allchannels", 1, "resetchannels", 0), "resetchannels").onApply(pubsubDefaultApply),
		enumParam("sanitize-dump-payload", noAlias, mutable, newEnum(false, "no", 0, "yes", 1, "clients", 2), "no"),
		enumParam("enable-protected-configs", noAlias, imm, enumProtected, "no"),
		enumParam("enable-debug-command", noAlias, imm, enumProtected, "no"),
		enumParam("enable-module-command", noAlias, imm, enumProtected, "no"),
		enumParam("cluster-preferred-endpoint-type", noAlias, mutable, newEnum(false, "ip", 0, "hostname", 1, "unknown-endpoint", 2), "ip"),
		enumParam("propagation-error-behavior", noAlias, mutable, newEnum(false, "ignore", 0, "panic", 1, "panic-on-replicas", 2), "ignore"),
		shutdownParam("shutdown-on-sigint"),
		shutdownParam("shutdown-on-sigterm"),
		enumParam("tls-auth-clients", noAlias, mutable, newEnum(false, "no", 0, "yes", 1, "optional", 2), "yes").sharing(tlsBehaviour),
	}
}

func configNumbers() []*configParam {
	const imm, hid = cfgImmutable, cfgHidden
	return []*configParam{
		numParam("databases", noAlias, imm, plain(1, intMax), 16),
		numParam("port", noAlias, mutable, plain(0, 65535), 6379), // the client port, set when Serve starts
		numParam("io-threads", noAlias, imm, plain(1, 128), 1),
		numParam("auto-aof-rewrite-percentage", noAlias, mutable, plain(0, intMax), 100),
		numParam("cluster-replica-validity-factor", "cluster-slave-validity-factor", mutable, plain(0, intMax), 10),
		numParam("list-max-listpack-size", "list-max-ziplist-size", mutable, plain(intMin, intMax), -2),
		numParam("tcp-keepalive", noAlias, mutable, plain(0, intMax), 300).onApply(applyKeepAlive),
		numParam("cluster-migration-barrier", noAlias, mutable, plain(0, intMax), 1),
		numParam("active-defrag-cycle-min", noAlias, mutable, plain(1, 99), 1),
		numParam("active-defrag-cycle-max", noAlias, mutable, plain(1, 99), 25),
		numParam("active-defrag-threshold-lower", noAlias, mutable, plain(0, 1000), 10),
		numParam("active-defrag-threshold-upper", noAlias, mutable, plain(0, 1000), 100),
		numParam("lfu-log-factor", noAlias, mutable, plain(0, intMax), 10),
		numParam("lfu-decay-time", noAlias, mutable, plain(0, intMax), 1),
		numParam("replica-priority", "slave-priority", mutable, plain(0, intMax), 100),
		numParam("repl-diskless-sync-delay", noAlias, mutable, plain(0, intMax), 5),
		numParam("maxmemory-samples", noAlias, mutable, plain(1, intMax), 5),
		numParam("maxmemory-eviction-tenacity", noAlias, mutable, plain(0, 100), 10),
		numParam("timeout", noAlias, mutable, plain(0, intMax), 0).onApply(applyIdleTimeout),
		numParam("replica-announce-port", "slave-announce-port", mutable, plain(0, 65535), 0),
		numParam("tcp-backlog", noAlias, imm, plain(0, intMax), 511),
		numParam("cluster-port", noAlias, imm, plain(0, 65535), 0),
		numParam("cluster-announce-bus-port", noAlias, mutable, plain(0, 65535), 0),
		numParam("cluster-announce-port", noAlias, mutable, plain(0, 65535), 0),
		numParam("cluster-announce-tls-port", noAlias, mutable, plain(0, 65535), 0),
		numParam("repl-timeout", noAlias, mutable, plain(1, intMax), 60),
		numParam("repl-ping-replica-period", "repl-ping-slave-period", mutable, plain(1, intMax), 10),
		numParam("list-compress-depth", noAlias, mutable, plain(0, intMax), 0),
		numParam("rdb-key-save-delay", noAlias, hid, plain(intMin, intMax), 0),
		numParam("key-load-delay", noAlias, hid, plain(intMin, intMax), 0),
		numParam("active-expire-effort", noAlias, mutable, plain(1, 10), 1),
		hzParam(), // expiry_settings.go
		numParam("min-replicas-to-write", "min-slaves-to-write", mutable, plain(0, intMax), 0),
		numParam("min-replicas-max-lag", "min-slaves-max-lag", mutable, plain(0, intMax), 10),
		numParam("watchdog-period", noAlias, hid, plain(0, intMax), 0),
		numParam("shutdown-timeout", noAlias, mutable, plain(0, intMax), 10),
		numParam("repl-diskless-sync-max-replicas", noAlias, mutable, plain(0, intMax), 0),
		numParam("maxclients", noAlias, mutable, uplain(1, uintMax), 10000).onApply(applyMaxClients),
		numParam("unixsocketperm", noAlias, imm, numSpec{lo: 0, hi: 0o777, unsigned: true, unit: unitOctal}, 0),
		numParam("socket-mark-id", noAlias, imm, uplain(0, uintMax), 0),
		numParam("active-defrag-max-scan-fields", noAlias, mutable, plain(1, longMax), 1000),
		numParam("slowlog-max-len", noAlias, mutable, plain(0, longMax), 128),
		numParam("acllog-max-len", noAlias, mutable, plain(0, longMax), 128).onApply(aclLogMaxLenApply),
		numParam("busy-reply-threshold", "lua-time-limit", mutable, plain(0, longMax), 5000),
		numParam("cluster-node-timeout", noAlias, mutable, plain(0, longMax), 15000),
		numParam("cluster-ping-interval", noAlias, hid, plain(0, longMax), 0),
		numParam("slowlog-log-slower-than", noAlias, mutable, plain(-1, longMax), 10000),
		numParam("latency-monitor-threshold", noAlias, mutable, plain(0, longMax), 0),
		numParam("proto-max-bulk-len", noAlias, mutable, mem(megabyte, longMax), 512*megabyte).onApply(applyMaxBulkLen),
		numParam("stream-node-max-entries", noAlias, mutable, plain(0, longMax), 100),
		numParam("repl-backlog-size", noAlias, mutable, mem(1, longMax), megabyte),
		numParam("maxmemory", noAlias, mutable, umem(0, ullMax), 0),
		numParam("cluster-link-sendbuf-limit", noAlias, mutable, umem(0, ullMax), 0),
		numParam("hash-max-listpack-entries", "hash-max-ziplist-entries", mutable, uplain(0, longMax), 512),
		numParam("set-max-intset-entries", noAlias, mutable, uplain(0, longMax), 512),
		numParam("set-max-listpack-entries", noAlias, mutable, uplain(0, longMax), 128),
		numParam("set-max-listpack-value", noAlias, mutable, uplain(0, longMax), 64),
		numParam("zset-max-listpack-entries", "zset-max-ziplist-entries", mutable, uplain(0, longMax), 128),
		numParam("active-defrag-ignore-bytes", noAlias, mutable, umem(1, longMax), 100*megabyte),
		numParam("hash-max-listpack-value", "hash-max-ziplist-value", mutable, umem(0, longMax), 64),
		numParam("stream-node-max-bytes", noAlias, mutable, umem(0, longMax), 4096),
		numParam("zset-max-listpack-value", "zset-max-ziplist-value", mutable, umem(0, longMax), 64),
		numParam("hll-sparse-max-bytes", noAlias, mutable, umem(0, longMax), 3000),
		numParam("tracking-table-max-keys", noAlias, mutable, uplain(0, longMax), 1000000).
			onApply(func(s *Server, v configValue) error { s.trk.setMaxKeys(v.num); return nil }),
		numParam("client-query-buffer-limit", noAlias, mutable, umem(megabyte, longMax), 1024*megabyte).onApply(applyQueryBufferLimit),
		numParam("maxmemory-clients", noAlias, mutable, numSpec{lo: -100, hi: longMax, unit: unitMemoryPct}, 0),
		numParam("repl-backlog-ttl", noAlias, mutable, plain(0, longMax), 3600),
		numParam("auto-aof-rewrite-min-size", noAlias, mutable, mem(0, longMax), 64*megabyte),
		numParam("loading-process-events-interval-bytes", noAlias, hid, plain(1024, intMax), 2*megabyte),
		numParam("tls-port", noAlias, mutable, plain(0, 65535), 0).sharing(tlsBehaviour),
		numParam("tls-session-cache-size", noAlias, mutable, plain(0, intMax), 20*1024),
		numParam("tls-session-cache-timeout", noAlias, mutable, plain(0, intMax), 300),
	}
}
