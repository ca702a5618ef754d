package server

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// INFO on the facade (Sentinel's sections: server, clients, cpu, stats,
// sentinel) and what the facade caches of its instances' INFO, as
// Sentinel refreshes each master and replica with INFO every
// info-period: their reports (cluster.NodeReport, over the bus), which
// SENTINEL INFO-CACHE and the runid fields show.

// sentinelInfoPeriod is how often an instance's report is refreshed
// (Sentinel's info-period).
const sentinelInfoPeriod = 10 * time.Second

// reportTimeout bounds one report's fetch.
const reportTimeout = time.Second

// reportCache holds the last report of each instance.
type reportCache struct {
	f      *Sentinel
	ctx    context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	byID   map[string]*reportEntry
	wg     sync.WaitGroup
}

type reportEntry struct {
	rep      cluster.NodeReport
	at       time.Time // when rep arrived; zero: none yet
	tried    time.Time // when the last fetch started
	fetching bool
}

func newReportCache(f *Sentinel) *reportCache {
	ctx, cancel := context.WithCancel(f.ctx)
	return &reportCache{f: f, ctx: ctx, cancel: cancel, byID: map[string]*reportEntry{}}
}

// refresh fetches, in the background, the report of every node of ids
// not tried within sentinelInfoPeriod, and forgets the others.
func (rc *reportCache) refresh(ids []string) {
	now := time.Now()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	keep := map[string]bool{}
	for _, id := range ids {
		keep[id] = true
		e := rc.byID[id]
		if e == nil {
			e = &reportEntry{}
			rc.byID[id] = e
		}
		if e.fetching || (!e.tried.IsZero() && now.Sub(e.tried) < sentinelInfoPeriod) {
			continue
		}
		e.fetching, e.tried = true, now
		rc.wg.Add(1)
		go rc.fetch(id, e)
	}
	for id, e := range rc.byID {
		if !keep[id] && !e.fetching {
			delete(rc.byID, id)
		}
	}
}

func (rc *reportCache) fetch(id string, e *reportEntry) {
	defer rc.wg.Done()
	ctx, cancel := context.WithTimeout(rc.ctx, reportTimeout)
	defer cancel()
	rep, err := rc.f.s.n.ReportOf(ctx, id)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e.fetching = false
	if err != nil {
		rc.f.log.Debug("sentinel: instance report", "node", id, "err", err)
		return
	}
	e.rep, e.at = rep, time.Now()
}

// get is node id's last report and when it arrived; ok false if none.
func (rc *reportCache) get(id string) (cluster.NodeReport, time.Time, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e := rc.byID[id]
	if e == nil || e.at.IsZero() {
		return cluster.NodeReport{}, time.Time{}, false
	}
	return e.rep, e.at, true
}

// wait ends the fetches in flight (the facade is closing).
func (rc *reportCache) wait() {
	rc.cancel()
	rc.wg.Wait()
}

// report is this node's report on itself, for the facades that ask.
func (s *Server) report() cluster.NodeReport {
	return cluster.NodeReport{RunID: s.runID, Info: s.infoText(nil)}
}

// cmdSentinelInfo is INFO on the facade.
func cmdSentinelInfo(f *Sentinel, _ *client, args [][]byte) resp.Value {
	return resp.Verbatim("txt", []byte(renderInfo(f.s, f.infoSections(), infoWanted(args[1:]))))
}

// infoSections are Sentinel's, in genRedisInfoString's order: its
// server, clients and stats sections tell of the facade's listener and
// connections.
func (f *Sentinel) infoSections() []infoSection {
	return []infoSection{
		{"Server", true, func(*Server) [][2]string { return f.infoServer() }, nil},
		{"Clients", true, func(*Server) [][2]string { return f.infoClients() }, nil},
		{"Stats", true, func(*Server) [][2]string { return f.infoStats() }, nil},
		{"CPU", true, (*Server).infoCPU, nil},
		{"Sentinel", true, func(*Server) [][2]string { return f.infoSentinel() }, nil},
	}
}

// infoServer is the node's server section as the facade's listener
// shows it: redis_mode sentinel, its port and listener.
func (f *Sentinel) infoServer() [][2]string {
	var out [][2]string
	for _, field := range f.s.infoServer() {
		switch field[0] {
		case "redis_mode":
			field[1] = "sentinel"
		case "tcp_port":
			if a := f.Addr(); a != nil {
				_, port := hostPort(a.String())
				field[1] = strconv.Itoa(port)
			}
		case "listener0":
			if a := f.Addr(); a != nil {
				field[1] = "name=tcp," + bindAndPort(a)
			}
		case "listener1": // the data port's TLS listener
			continue
		}
		out = append(out, field)
	}
	return out
}

func (f *Sentinel) infoClients() [][2]string {
	clients := f.clientList()
	return [][2]string{
		kv("connected_clients", len(clients)),
		kv("cluster_connections", 0),
		kv("maxclients", f.s.connCfg.maxClients.Load()),
		kv("blocked_clients", 0),
		kv("tracking_clients", 0),
		kv("pubsub_clients", f.reg.clients.Load()),
		kv("clients_in_timeout_table", 0),
		kv("total_blocking_keys", 0),
		kv("total_blocking_keys_on_nokey", 0),
	}
}

func (f *Sentinel) infoStats() [][2]string {
	f.stats.mu.Lock()
	st := sentinelStats{connections: f.stats.connections, commands: f.stats.commands, rejected: f.stats.rejected}
	f.stats.mu.Unlock()
	channels, patterns, _ := f.reg.counts()
	return [][2]string{
		kv("total_connections_received", st.connections),
		kv("total_commands_processed", st.commands),
		kv("rejected_connections", st.rejected),
		kv("pubsub_channels", channels),
		kv("pubsub_patterns", patterns),
	}
}

// infoSentinel is Sentinel's section: its counters (no TILT mode, no
// scripts, no simulated failure here) and one line per master that has
// an address.
func (f *Sentinel) infoSentinel() [][2]string {
	var lines [][2]string
	f.mon.refresh(func(*sentinelObservation) {
		for _, ms := range f.mon.masters {
			if ms.addr == "" {
				continue
			}
			status := "ok"
			switch {
			case ms.odown:
				status = "odown"
			case ms.sdown:
				status = "sdown"
			}
			lines = append(lines, kv("master"+strconv.Itoa(len(lines)),
				"name="+ms.name+",status="+status+",address="+ms.addr+
					",slaves="+strconv.Itoa(len(ms.replicas))+",sentinels="+strconv.Itoa(len(ms.sentinels)+1)))
		}
	})
	return append([][2]string{
		kv("sentinel_masters", len(lines)),
		kv("sentinel_tilt", 0),
		kv("sentinel_tilt_since_seconds", -1),
		kv("sentinel_running_scripts", 0),
		kv("sentinel_scripts_queue_length", 0),
		kv("sentinel_simulate_failure_flags", 0),
	}, lines...)
}

// cmdSentinelInfoCache is SENTINEL INFO-CACHE [name ...]: per master (all
// when none is named; unknown names are left out), the age in ms and text
// of the last report of the master and of each replica (null when none
// arrived yet).
func cmdSentinelInfoCache(f *Sentinel, _ *client, args [][]byte) resp.Value {
	var out []resp.Value
	now := time.Now()
	entry := func(id string) resp.Value {
		rep, at, ok := f.mon.reports.get(id)
		if !ok {
			return resp.Array(resp.Int(0), resp.Null())
		}
		return resp.Array(resp.Int(now.Sub(at).Milliseconds()), resp.BulkString(rep.Info))
	}
	f.mon.refresh(func(*sentinelObservation) {
		for _, ms := range f.mon.masters {
			if ms.addr == "" || (len(args) > 2 && !namedIn(ms.name, args[2:])) {
				continue
			}
			insts := []resp.Value{entry(ms.id)}
			for _, r := range sortedInstances(ms.replicas) {
				insts = append(insts, entry(r.id))
			}
			out = append(out, resp.BulkString(ms.name), resp.Array(insts...))
		}
	})
	return resp.Array(out...)
}

func namedIn(name string, names [][]byte) bool {
	for _, n := range names {
		if string(n) == name {
			return true
		}
	}
	return false
}
