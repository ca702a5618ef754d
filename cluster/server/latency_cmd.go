package server

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// LATENCY: the latency monitor's events (latency-monitor-threshold, in
// ms; 0 is off) as Redis keeps them, and LATENCY HISTOGRAM from the
// per-command histograms of cmdstats.go. The events recorded here are
// Redis's "command" (a command that is not fast) and "fast-command".

// latencyMonitor holds each event's samples.
type latencyMonitor struct {
	mu     sync.Mutex
	events map[string]*latencySeries
}

// latencySeries is one event's last samples (Redis's LATENCY_TS_LEN) and
// its all-time maximum. Samples of one second are folded into one, the
// highest, as Redis does.
type latencySeries struct {
	samples []latencySample // oldest first
	max     int64
}

type latencySample struct{ at, ms int64 }

const latencySamplesMax = 160

// sample records event taking d when it reaches the threshold.
func (m *latencyMonitor) sample(ss *statsSettings, event string, d time.Duration) {
	limit := ss.latencyMs.Load()
	if limit <= 0 || d.Milliseconds() < limit {
		return
	}
	m.add(event, time.Now().Unix(), d.Milliseconds())
}

func (m *latencyMonitor) add(event string, at, ms int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string]*latencySeries{}
	}
	ts := m.events[event]
	if ts == nil {
		ts = &latencySeries{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	if n := len(ts.samples); n > 0 && ts.samples[n-1].at == at {
		ts.samples[n-1].ms = max(ts.samples[n-1].ms, ms)
		return
	}
	ts.samples = append(ts.samples, latencySample{at, ms})
	if len(ts.samples) > latencySamplesMax {
		ts.samples = ts.samples[1:]
	}
}

// names are the events with samples, sorted.
func (m *latencyMonitor) names() []string {
	out := make([]string, 0, len(m.events))
	for name := range m.events {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

func latencyCommand() *command {
	const admin = resp.FlagAdmin | resp.FlagNoScript | resp.FlagLoading | resp.FlagStale
	acl := []string{"admin", "slow", "dangerous"}
	sub := func(name string, arity int, since, summary, complexity string, run nodeHandler, tips ...string) *command {
		c := &command{meta: subMeta("latency", name, arity, admin, acl, since, summary, complexity), node: run}
		c.meta.Tips = tips
		return c
	}
	nodes := []string{"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}
	help := &command{meta: subMeta("latency", "help", 2, resp.FlagLoading|resp.FlagStale, []string{"slow"}, "2.8.13",
		"Returns helpful text about the different subcommands.", "O(1)"), node: cmdLatencyHelp}
	meta := &resp.Command{Name: "latency", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.8.13",
		Summary: "A container for latency diagnostics commands.", Complexity: "Depends on subcommand."}
	return container(meta,
		sub("doctor", 2, "2.8.13", "Returns a human-readable latency analysis report.", "O(1)", cmdLatencyDoctor, nodes...),
		sub("graph", 3, "2.8.13", "Returns a latency graph for an event.", "O(1)", cmdLatencyGraph, nodes...),
		help,
		sub("histogram", -2, "7.0.0", "Returns the cumulative distribution of latencies of a subset or all commands.",
			"O(N) where N is the number of commands with latency information being retrieved.", cmdLatencyHistogram, nodes...),
		sub("history", 3, "2.8.13", "Returns timestamp-latency samples for an event.", "O(1)", cmdLatencyHistory, nodes...),
		sub("latest", 2, "2.8.13", "Returns the latest latency samples for all events.", "O(1)", cmdLatencyLatest, nodes...),
		sub("reset", -2, "2.8.13", "Resets the latency data for one or more events.", "O(1)", cmdLatencyReset,
			"request_policy:all_nodes", "response_policy:agg_sum"),
	)
}

// cmdLatencyLatest: per event, its name, the time and value of its last
// sample and its maximum.
func cmdLatencyLatest(s *Server, _ *client, _ [][]byte) resp.Value {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []resp.Value
	for _, name := range m.names() {
		ts := m.events[name]
		last := ts.samples[len(ts.samples)-1]
		out = append(out, resp.Array(resp.BulkString(name), resp.Int(last.at), resp.Int(last.ms), resp.Int(ts.max)))
	}
	return resp.Array(out...)
}

// cmdLatencyHistory: the samples of an event, oldest first (empty for
// an event without samples).
func cmdLatencyHistory(s *Server, _ *client, args [][]byte) resp.Value {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []resp.Value
	if ts := m.events[string(args[2])]; ts != nil {
		for _, smp := range ts.samples {
			out = append(out, resp.Array(resp.Int(smp.at), resp.Int(smp.ms)))
		}
	}
	return resp.Array(out...)
}

// cmdLatencyReset: forget the named events (all without names); the
// reply counts the events forgotten.
func cmdLatencyReset(s *Server, _ *client, args [][]byte) resp.Value {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(args) == 2 {
		n := len(m.events)
		m.events = nil
		return resp.Int(int64(n))
	}
	n := 0
	for _, a := range args[2:] {
		if _, ok := m.events[string(a)]; ok {
			delete(m.events, string(a))
			n++
		}
	}
	return resp.Int(int64(n))
}

// cmdLatencyHistogram: the latency distribution of the named commands (a
// container's name stands for its subcommands too), or of every command
// called, as a map from name to calls and histogram_usec.
func cmdLatencyHistogram(s *Server, _ *client, args [][]byte) resp.Value {
	var sts []*cmdStat
	if len(args) == 2 {
		sts = s.cstats.all
	} else {
		for _, a := range args[2:] {
			sts = append(sts, s.cstats.named(strings.ToLower(string(a)))...)
		}
	}
	var out []resp.Value
	for _, st := range sts {
		h := st.hist.Load()
		if h == nil {
			continue
		}
		var cdf []resp.Value
		h.cumulative(func(bound, count uint64) {
			cdf = append(cdf, resp.Int(int64(bound)), resp.Int(int64(count)))
		})
		out = append(out, resp.BulkString(st.name), resp.Map(
			resp.BulkString("calls"), resp.Int(int64(h.count.Load())),
			resp.BulkString("histogram_usec"), resp.Map(cdf...)))
	}
	return resp.Map(out...)
}

func cmdLatencyHelp(*Server, *client, [][]byte) resp.Value {
	return helpReply("LATENCY", []string{
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"GRAPH <event>",
		"    Return an ASCII latency graph for the <event> class.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		"HISTOGRAM [COMMAND ...]",
		"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
		"    If no commands are specified then all histograms are replied.",
	})
}
