package server

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/fsm"
	"github.com/slotraft/slotraft/resp"
)

// statsSettings mirror the CONFIG parameters the accounting reads on
// every command, so the hot path reads atomics instead of the registry.
// They are refreshed after every CONFIG SET and by the sampler (so values
// set another way, a config file, take effect within 100 ms).
type statsSettings struct {
	slowlogSlower  atomic.Int64 // slowlog-log-slower-than, µs (negative: off)
	slowlogMaxLen  atomic.Int64 // slowlog-max-len
	latencyMs      atomic.Int64 // latency-monitor-threshold, ms (0: off)
	tracking       atomic.Bool  // latency-tracking
	percentiles    atomic.Pointer[[]string]
	percentileVals atomic.Pointer[[]float64]
	busyMs         atomic.Int64 // busy-reply-threshold, ms (0: never busy; busy.go)
}

// refreshStatsSettings reads the parameters statsSettings mirror.
func (s *Server) refreshStatsSettings() {
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(s.configValue(name), 10, 64)
		return n
	}
	ss := &s.statsCfg
	ss.slowlogSlower.Store(num("slowlog-log-slower-than"))
	ss.slowlogMaxLen.Store(num("slowlog-max-len"))
	ss.latencyMs.Store(num("latency-monitor-threshold"))
	ss.busyMs.Store(num("busy-reply-threshold"))
	ss.tracking.Store(s.configValue("latency-tracking") == "yes")
	names := strings.Fields(s.configValue("latency-tracking-info-percentiles"))
	vals := make([]float64, len(names))
	for i, n := range names {
		vals[i], _ = strconv.ParseFloat(n, 64)
	}
	ss.percentiles.Store(&names)
	ss.percentileVals.Store(&vals)
}

// configValue is the current value of CONFIG parameter name ("" if none).
func (s *Server) configValue(name string) string {
	if p := s.cfg.reg.lookup(name); p != nil {
		return s.cfg.value(s, p)
	}
	return ""
}

// finish accounts a command that ran (or was refused, r.kind routeReply
// with a known command) for meta with args, taking d, answering v. A run of
// commands answered together shares one d: one clock read per run.
func (s *Server) finish(c *client, meta *resp.Command, args [][]byte, d time.Duration, v resp.Value, refused bool) {
	st := s.cstats.of(meta, args)
	switch {
	case refused:
		s.cstats.rejectedCall(st)
		return
	case st != nil:
		s.stats.commands.Add(1) // total_commands_processed: calls only, as Redis's call()
	}
	s.cstats.called(st, d, v, s.statsCfg.tracking.Load())
	s.afterCall(c, meta, args, d)
}

// rejected counts cmd called with args as refused before it ran (in
// MULTI, in subscribed state), as Redis's rejectCommand.
func (s *Server) rejected(cmd *command, args [][]byte) {
	s.cstats.rejectedCall(s.cstats.of(metaOf(cmd), args))
}

// noteLookups adds a read's key lookups to keyspace_hits and _misses.
func (s *Server) noteLookups(o fsm.Outcome) {
	if o.Lookups.Hits != 0 {
		s.cstats.hits.Add(int64(o.Lookups.Hits))
	}
	if o.Lookups.Misses != 0 {
		s.cstats.misses.Add(int64(o.Lookups.Misses))
	}
}

// instSamples are Redis's instantaneous metrics: every 100 ms, the rate
// of a counter since the previous sample; the metric is the mean of the
// last 16 samples (STATS_METRIC_SAMPLES).
type instSamples struct {
	mu      sync.Mutex
	at      time.Time
	last    [instMetrics]int64
	samples [instMetrics][instSampleCount]float64
	idx     int
}

const (
	instOps = iota
	instNetIn
	instNetOut
	instMetrics
)

const (
	instSampleCount = 16
	instPeriod      = 100 * time.Millisecond
)

// sample records one sample of each counter now.
func (is *instSamples) sample(now time.Time, counters [instMetrics]int64) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if ms := now.Sub(is.at).Milliseconds(); !is.at.IsZero() && ms > 0 {
		for i, v := range counters {
			is.samples[i][is.idx] = float64(v-is.last[i]) * 1000 / float64(ms)
		}
		is.idx = (is.idx + 1) % instSampleCount
	}
	is.at, is.last = now, counters
}

// rate is the mean of metric m's samples, per second.
func (is *instSamples) rate(m int) float64 {
	is.mu.Lock()
	defer is.mu.Unlock()
	var sum float64
	for _, v := range is.samples[m] {
		sum += v
	}
	return sum / instSampleCount
}

func (is *instSamples) reset() {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.at, is.last, is.samples, is.idx = time.Time{}, [instMetrics]int64{}, [instMetrics][instSampleCount]float64{}, 0
}

// sampleStats samples the instantaneous metrics and refreshes the
// settings every 100 ms until the server closes.
func (s *Server) sampleStats() {
	t := time.NewTicker(instPeriod)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.inst.sample(now, [instMetrics]int64{s.stats.commands.Load(), s.stats.netIn.Load(), s.stats.netOut.Load()})
			s.refreshStatsSettings()
			s.refreshEviction()
			s.refreshExpiry()
			s.refreshGroupSettings(false)
			s.migrateConns.closeIdle(now)
		}
	}
}

// resetStats zeroes every counter INFO reports, as Redis's
// resetServerStats: the server's totals, the per-command and per-error
// counters and histograms, keyspace hits and misses, the instantaneous
// samples, the peak of memory (back to what is used now), pub/sub's.
func (s *Server) resetStats() {
	st := &s.stats
	for _, c := range []interface{ Store(int64) }{&st.connections, &st.commands, &st.netIn, &st.netOut, &st.rejected} {
		c.Store(0)
	}
	s.cstats.reset()
	s.inst.reset()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	st.peakMemory.Store(m.HeapAlloc)
	s.ps.obufKills.Store(0)
	s.n.ResetForwardStats()
	s.n.ResetEvictionStats()
	s.n.ResetExpiryStats()
	s.n.ResetLazyFreed()
	s.n.ResetSaveCount()
	s.io.reset()
}
