package server

import (
	"bytes"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// Per-command accounting, as Redis's call() and rejectCommand() keep it:
// calls, time, rejected and failed calls of every command and subcommand
// (INFO commandstats), a latency histogram each (INFO latencystats,
// LATENCY HISTOGRAM), error replies by code (INFO errorstats). Every
// command passes serveRun, EXEC or the MULTI queue, which call
// rejected/called here. The counters are atomics on a table built once
// per server, so the hot path takes no lock and allocates nothing (the
// histogram of a command is made at its first call).

// cmdStat are one command's (or subcommand's) counters.
type cmdStat struct {
	name     string // as Redis names it: "get", "config|get"
	calls    atomic.Int64
	usec     atomic.Int64
	rejected atomic.Int64
	failed   atomic.Int64
	hist     atomic.Pointer[latencyHist]
}

func (st *cmdStat) reset() {
	st.calls.Store(0)
	st.usec.Store(0)
	st.rejected.Store(0)
	st.failed.Store(0)
	st.hist.Store(nil)
}

// histogram is st's histogram, made on first use.
func (st *cmdStat) histogram() *latencyHist {
	if h := st.hist.Load(); h != nil {
		return h
	}
	st.hist.CompareAndSwap(nil, &latencyHist{})
	return st.hist.Load()
}

// cmdStats are a server's counters per command, keyed by the command's
// metadata (a subcommand has its own), and its error replies by code.
type cmdStats struct {
	byMeta map[*resp.Command]*cmdStat
	all    []*cmdStat // sorted by name, for INFO

	errMu    sync.RWMutex
	errCodes map[string]*atomic.Int64 // at most maxErrorCodes, as Redis
	errTotal atomic.Int64             // total_error_replies

	hits, misses atomic.Int64 // keyspace_hits, keyspace_misses
}

// maxErrorCodes is Redis's ERROR_STATS_NUMBER: codes beyond it are not
// tracked (total_error_replies still counts them).
const maxErrorCodes = 128

func newCmdStats(t *resp.Table) *cmdStats {
	cs := &cmdStats{byMeta: map[*resp.Command]*cmdStat{}, errCodes: map[string]*atomic.Int64{}}
	var add func(m *resp.Command)
	add = func(m *resp.Command) {
		if _, ok := cs.byMeta[m]; ok {
			return
		}
		st := &cmdStat{name: m.Name}
		cs.byMeta[m] = st
		cs.all = append(cs.all, st)
		for _, sub := range m.Subcommands {
			add(sub)
		}
	}
	for _, m := range t.All() {
		add(m)
	}
	sort.Slice(cs.all, func(i, j int) bool { return cs.all[i].name < cs.all[j].name })
	return cs
}

// of is the counters of the command args run as meta: its subcommand's
// when args name one; nil for an unknown command.
func (cs *cmdStats) of(meta *resp.Command, args [][]byte) *cmdStat {
	if meta == nil {
		return nil
	}
	if len(meta.Subcommands) > 0 && len(args) > 1 {
		i, err := meta.SubcommandIndex(args)
		if err != nil {
			return nil // an unknown subcommand is no command to Redis
		}
		meta = meta.Subcommands[i]
	}
	return cs.byMeta[meta]
}

// called records a call of st that took d and answered v.
func (cs *cmdStats) called(st *cmdStat, d time.Duration, v resp.Value, track bool) {
	if st == nil {
		return
	}
	st.calls.Add(1)
	st.usec.Add(d.Microseconds())
	if v.IsError() {
		st.failed.Add(1)
	}
	if track {
		st.histogram().record(uint64(max(d, 1)))
	}
}

// rejected records a call of st refused before it ran (arity, CROSSSLOT,
// MOVED…), as Redis's rejectCommand.
func (cs *cmdStats) rejectedCall(st *cmdStat) {
	if st != nil {
		st.rejected.Add(1)
	}
}

// errorReply counts an error reply by its code, the text before its
// first space, as Redis's afterErrorReply does with the reply it sends.
func (cs *cmdStats) errorReply(v resp.Value) {
	cs.errTotal.Add(1)
	code := v.Str
	if i := bytes.IndexByte(code, ' '); i >= 0 {
		code = code[:i]
	}
	cs.errMu.RLock()
	n := cs.errCodes[string(code)]
	cs.errMu.RUnlock()
	if n == nil {
		cs.errMu.Lock()
		if n = cs.errCodes[string(code)]; n == nil && len(cs.errCodes) < maxErrorCodes {
			n = &atomic.Int64{}
			cs.errCodes[string(code)] = n
		}
		cs.errMu.Unlock()
	}
	if n != nil {
		n.Add(1)
	}
}

// named are the counters of the command called name and of its
// subcommands (LATENCY HISTOGRAM's arguments).
func (cs *cmdStats) named(name string) []*cmdStat {
	var out []*cmdStat
	for _, st := range cs.all {
		if st.name == name || strings.HasPrefix(st.name, name+"|") && !strings.Contains(name, "|") {
			out = append(out, st)
		}
	}
	return out
}

// reset zeroes every counter (CONFIG RESETSTAT).
func (cs *cmdStats) reset() {
	for _, st := range cs.all {
		st.reset()
	}
	cs.errMu.Lock()
	cs.errCodes = map[string]*atomic.Int64{}
	cs.errMu.Unlock()
	cs.errTotal.Store(0)
	cs.hits.Store(0)
	cs.misses.Store(0)
}

// errorCount is how many error replies had one code.
type errorCount struct {
	code string
	n    int64
}

// errorsByCode are the error codes seen and their counts, by code.
func (cs *cmdStats) errorsByCode() []errorCount {
	cs.errMu.RLock()
	out := make([]errorCount, 0, len(cs.errCodes))
	for code, n := range cs.errCodes {
		out = append(out, errorCount{code, n.Load()})
	}
	cs.errMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].code < out[j].code })
	return out
}

// errorCounts are INFO errorstats' fields, by code.
func (cs *cmdStats) errorCounts() [][2]string {
	var out [][2]string
	for _, e := range cs.errorsByCode() {
		out = append(out, kv("errorstat_"+e.code, "count="+strconv.FormatInt(e.n, 10)))
	}
	return out
}
