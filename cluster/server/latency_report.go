package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// LATENCY GRAPH and DOCTOR, with Redis's texts (latency.c, sparkline.c).

const latencyGraphCols = 80 // Redis's LATENCY_GRAPH_COLS

// cmdLatencyGraph draws an event's samples as Redis's ASCII sparkline.
func cmdLatencyGraph(s *Server, _ *client, args [][]byte) resp.Value {
	m := &s.latency
	m.mu.Lock()
	ts := m.events[string(args[2])]
	var samples []latencySample
	var allMax int64
	if ts != nil {
		samples, allMax = append(samples, ts.samples...), ts.max
	}
	m.mu.Unlock()
	if len(samples) == 0 {
		return resp.Err(resp.Errorf("ERR No samples available for event '%s'", args[2]))
	}
	return resp.Verbatim("txt", []byte(latencyGraph(string(args[2]), samples, allMax, time.Now().Unix())))
}

// latencyGraph is Redis's latencyCommandGenSparkeline: a title line, 80
// dashes, then the samples as a 4-row filled sparkline labelled with
// how long ago each was.
func latencyGraph(event string, samples []latencySample, allMax, now int64) string {
	lo, hi := samples[0].ms, samples[0].ms
	labels := make([]string, len(samples))
	for i, smp := range samples {
		lo, hi = min(lo, smp.ms), max(hi, smp.ms)
		labels[i] = agoLabel(now - smp.at)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s - high %d ms, low %d ms (all time high %d ms)\n", event, hi, lo, allMax)
	b.WriteString(strings.Repeat("-", latencyGraphCols) + "\n")
	for j := 0; j < len(samples); j += latencyGraphCols {
		if j != 0 {
			b.WriteString("\n")
		}
		end := min(j+latencyGraphCols, len(samples))
		sparkline(&b, samples[j:end], labels[j:end], lo, hi)
	}
	return b.String()
}

// agoLabel is how long ago a sample was, in Redis's units.
func agoLabel(secs int64) string {
	switch {
	case secs < 60:
		return fmt.Sprintf("%ds", secs)
	case secs < 3600:
		return fmt.Sprintf("%dm", secs/60)
	case secs < 86400:
		return fmt.Sprintf("%dh", secs/3600)
	}
	return fmt.Sprintf("%dd", secs/86400)
}

// sparkline is Redis's sparklineRenderRange with 4 rows, SPARKLINE_FILL,
// labels under a one-line margin, min and max of the whole sequence.
func sparkline(b *strings.Builder, samples []latencySample, labels []string, lo, hi int64) {
	const rows, fill, charsetLen = 4, "_o#", 3
	relmax := float64(hi - lo)
	if relmax == 0 {
		relmax = 1
	}
	steps := charsetLen * rows
	chars := make([]byte, len(samples))
	for row := 0; ; row++ {
		more := false
		for j := range chars {
			chars[j] = ' '
		}
		for j, smp := range samples {
			if row < rows {
				step := int(float64(int(float64(smp.ms-lo)*float64(steps))) / relmax)
				step = min(max(step, 0), steps-1)
				more = true
				switch idx := step - (rows-row-1)*charsetLen; {
				case idx >= 0 && idx < charsetLen:
					chars[j] = fill[idx]
				case idx >= charsetLen:
					chars[j] = '|'
				}
				continue
			}
			if row-rows < 1 { // the margin above the labels
				more = true
				break
			}
			if k := row - rows - 1; len(labels[j]) > k {
				more = true
				chars[j] = labels[j][k]
			}
		}
		if !more {
			return
		}
		b.Write(chars)
		b.WriteString("\n")
	}
}

// latencyStats are Redis's analyzeLatencyForEvent figures.
type latencyStats struct {
	samples, avg, mad, period int64
}

func analyzeLatency(ts *latencySeries, now int64) latencyStats {
	var st latencyStats
	var sum, oldest int64
	for _, smp := range ts.samples {
		st.samples++
		sum += smp.ms
		if oldest == 0 || smp.at < oldest {
			oldest = smp.at
		}
	}
	if st.samples == 0 {
		return st
	}
	st.avg = sum / st.samples
	st.period = max(now-oldest, 1)
	var dev int64
	for _, smp := range ts.samples {
		dev += max(st.avg-smp.ms, smp.ms-st.avg)
	}
	st.mad = dev / st.samples
	return st
}

const (
	doctorDisabled = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"
	doctorNoSpike  = "Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n"
	doctorSpikes   = "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about it, do you Dave?\n\n"
	doctorAdvices  = "\nI have a few advices for you:\n\n"
	adviceSlowOn   = "- There are latency issues with potentially slow commands you are using. Try to enable the Slow Log Redis feature using the command 'CONFIG SET slowlog-log-slower-than %d'. If the Slow log is disabled Redis is not able to log slow commands execution for you.\n"
	adviceSlowTun  = "- Your current Slow Log configuration only logs events that are slower than your configured latency monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than %d'.\n"
	adviceSlowLog  = "- Check your Slow Log to understand what are the commands you are running which are too slow to execute. Please check https://redis.io/commands/slowlog for more information.\n"
	adviceSched    = "- The system is slow to execute Redis code paths not containing system calls. This usually means the system does not provide Redis CPU time to run for long periods. You should try to:\n" +
		"  1) Lower the system load.\n" +
		"  2) Use a computer / VM just for Redis if you are running other software in the same system.\n" +
		"  3) Check if you have a \"noisy neighbour\" problem.\n" +
		"  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in your system.\n" +
		"  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, if you are using Jemalloc. However this may create fragmentation problems.\n"
	adviceLarge = "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a blocking operation. If you have very large objects that are often deleted, expired, or evicted, try to fragment those objects into multiple smaller objects.\n"
)

// cmdLatencyDoctor is Redis's createLatencyReport for the events
// recorded here (command, fast-command).
func cmdLatencyDoctor(s *Server, _ *client, _ [][]byte) resp.Value {
	return resp.Verbatim("txt", []byte(s.latencyReport(time.Now().Unix())))
}

// latencyReport is LATENCY DOCTOR's text at now (unix seconds).
func (s *Server) latencyReport(now int64) string {
	m := &s.latency
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case s.statsCfg.latencyMs.Load() == 0:
		return doctorDisabled
	case len(m.events) == 0:
		return doctorNoSpike
	}
	var b strings.Builder
	b.WriteString(doctorSpikes)
	var commandEvent, fastEvent bool
	for i, name := range m.names() {
		ts := m.events[name]
		st := analyzeLatency(ts, now)
		fmt.Fprintf(&b, "%d. %s: %d latency spikes (average %dms, mean deviation %dms, period %.2f sec). Worst all time event %dms.\n",
			i+1, name, st.samples, st.avg, st.mad, float64(st.period)/float64(st.samples), ts.max)
		commandEvent = commandEvent || name == "command"
		fastEvent = fastEvent || name == "fast-command"
	}
	b.WriteString(doctorAdvices)
	b.WriteString(s.latencyAdvices(commandEvent, fastEvent))
	return b.String()
}

// latencyAdvices are the advices of Redis's report for the command and
// fast-command events, in its order.
func (s *Server) latencyAdvices(commandEvent, fastEvent bool) string {
	var b strings.Builder
	ss := &s.statsCfg
	threshold := ss.latencyMs.Load()
	if commandEvent {
		switch slower := ss.slowlogSlower.Load(); {
		case slower < 0 || ss.slowlogMaxLen.Load() == 0:
			fmt.Fprintf(&b, adviceSlowOn, threshold*1000)
		case slower/1000 > threshold:
			fmt.Fprintf(&b, adviceSlowTun, threshold*1000)
		}
		b.WriteString(adviceSlowLog)
	}
	if fastEvent {
		b.WriteString(adviceSched)
	}
	if commandEvent {
		b.WriteString(adviceLarge)
	}
	return b.String()
}
