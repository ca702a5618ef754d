package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/cluster"
)

// Server serves Redis clients for a Node: it reads their commands
// (resp.RequestReader, serve.go), routes them to the groups this node leads (MOVED otherwise) and runs the
// node commands (CLUSTER, CLIENT, COMMAND, INFO…).
type Server struct {
	n       *cluster.Node
	log     *slog.Logger
	table   *commandTable
	started time.Time
	runID   string
	version string // INFO's slotraft_version (SetVersion)

	migrateConns  migrateConns        // MIGRATE's connections kept for reuse (migrate_conns.go)
	tlsSrv        tlsServer           // the tls-port listener (tls_listener.go)
	backups       backupSessions      // SLOTRAFT BACKUP's cuts (backup.go)
	debugs        debugSessions       // the Lua debugger's sessions (script_debug.go)
	groupSettings groupSettingsMirror // CONFIG values the groups led here take (group_settings.go)

	ctx    context.Context // cancelled by Close: ends in-flight proposals and reads
	cancel context.CancelFunc

	mu      sync.Mutex
	ln      net.Listener
	clients map[uint64]*client
	closed  bool
	serving chan struct{} // closed when Serve returns
	conns   sync.WaitGroup

	nextID      atomic.Uint64
	blockedN    atomic.Int64 // connections blocked or paused (INFO blocked_clients)
	pause       pauseState   // CLIENT PAUSE (client_pause.go)
	stats       serverStats
	io          ioStats // reads, writes and buffers of the connections (io_stats.go)
	startupHeap uint64  // the Go heap when the server was made (MEMORY STATS' startup.allocated)

	ps  *pubsub  // subscriptions, fan-out, output limits (pubsub.go)
	trk *tracker // client-side caching's table (tracking.go)
	mon monitors // MONITOR's connections (monitor.go)

	shutdownFn atomic.Pointer[ShutdownFunc]  // SHUTDOWN's hook (shutdown_cmd.go), set by the process
	logLevel   atomic.Pointer[slog.LevelVar] // the process's log level, loglevel's (log_settings.go)
	lazyMu     sync.Mutex                    // guards lazyCfg (lazyfree.go)
	lazyCfg    cluster.LazyFree
	sentinel   *Sentinel // the Sentinel facade (sentinel.go), nil without one; under mu

	cfg     *configValues              // CONFIG's parameters (config_table.go)
	connCfg connSettings               // the parameters connections read (config_behaviour.go)
	cfgFile atomic.Pointer[ConfigFile] // the file CONFIG REWRITE writes, nil without --config
	rewrite sync.Mutex                 // one CONFIG REWRITE at a time

	cstats   *cmdStats      // per command and per error code (cmdstats.go)
	statsCfg statsSettings  // the parameters the accounting reads (stats_account.go)
	inst     instSamples    // instantaneous_ops_per_sec & co.
	slowlog  slowlog        // SLOWLOG (slowlog.go)
	latency  latencyMonitor // LATENCY's events (latency_cmd.go)
	acl      aclServer      // ACL LOG and the denial counts (acl_gate.go)
	// aclServing: Serve began; before it, a config file's requirepass
	// waits in aclFilePass (acl_config.go).
	aclTable   *acl.Commands // ACL CAT's
	aclServing atomic.Bool
	// protectedMode is protected-mode (protected_mode.go).
	protectedMode atomic.Bool
	aclFilePass   atomic.Pointer[[]byte]
}

// serverStats are the counters INFO reports.
type serverStats struct {
	connections atomic.Int64
	commands    atomic.Int64
	netIn       atomic.Int64
	netOut      atomic.Int64
	rejected    atomic.Int64 // connections refused at maxclients
	peakMemory  atomic.Uint64
}

// requestTimeout bounds how long one command waits for its group.
const requestTimeout = 10 * time.Second

// NewServer makes a client server for n. Call Serve to accept clients.
func New(n *cluster.Node, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var id [20]byte
	_, _ = rand.Read(id[:])
	s := &Server{
		n: n, log: logger.With("component", "server"), table: commands(),
		started: time.Now(), runID: hex.EncodeToString(id[:]), version: "dev",
		ctx: ctx, cancel: cancel, clients: map[uint64]*client{},
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.startupHeap = m.HeapAlloc
	s.acl = newACLServer()
	s.aclTable = aclCommands()
	n.SetACLCommands(s.aclTable) // before any connection reads the users
	go s.watchACL()              // ends with ctx
	s.ps = newPubsub(s)
	s.trk = newTracker(s)
	s.cfg = newConfigValues(configTable)
	s.cfg.applyDefaults(s)
	s.cstats = newCmdStats(s.table.meta)
	s.refreshStatsSettings()
	s.refreshEviction()
	s.refreshGroupSettings(false)
	// Messages published on other nodes, and this node's keyspace events,
	// are delivered to this server's subscribers.
	n.HandleForwarded(s.publishForwarded)
	n.HandleKeyspaceEvents(s.publishEvents) // notify_publish.go
	n.HandleReports(s.report)               // what Sentinel facades cache of this node (sentinel_info.go)
	// The keys this node's replicas change invalidate its tracking clients.
	go s.trk.run(ctx)
	n.HandleTrackedKeys(s.trk.enqueue)
	return s
}

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("cluster: server closed")
