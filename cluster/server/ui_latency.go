package server

import (
	"sync"
	"time"
)

// The dashboard's live latency: the per-command histograms INFO
// latencystats reads (cmdstats.go) only ever grow, so the latency of the
// last seconds is the difference between the histograms of all commands
// merged now and merged a little earlier. Samples are taken when a
// dashboard asks (a node nobody watches does no work), at most one per
// uiSampleEvery, and kept for uiSampleKeep.

const (
	uiSampleEvery  = 500 * time.Millisecond
	uiSampleKeep   = 10 * time.Second
	uiLatencyAfter = 2 * time.Second // the window aimed at
	uiMaxSamples   = int(uiSampleKeep/uiSampleEvery) + 1
)

// latSample is the merged histogram of every command at one time.
type latSample struct {
	at      time.Time
	count   uint64
	buckets [histBuckets]uint64
}

// latWindow holds the recent samples, oldest first.
type latWindow struct {
	mu      sync.Mutex
	samples []*latSample
}

// latencyNow is the latency of the commands of the last seconds: the
// window's length, how many calls, their median, 99th percentile and
// maximum in ns. A window of 0 means no earlier sample to compare with.
type latencyNow struct {
	window         time.Duration
	calls          uint64
	p50, p99, most uint64
}

// observe takes a sample of cs at now (unless one is younger than
// uiSampleEvery) and measures against the newest sample at least
// uiLatencyAfter old, else the oldest one.
func (w *latWindow) observe(cs *cmdStats, now time.Time) latencyNow {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.samples); n == 0 || now.Sub(w.samples[n-1].at) >= uiSampleEvery {
		w.samples = append(w.samples, cs.mergedHistogram(now))
	}
	for len(w.samples) > uiMaxSamples || len(w.samples) > 1 && now.Sub(w.samples[0].at) > uiSampleKeep {
		w.samples = w.samples[1:]
	}
	cur := w.samples[len(w.samples)-1]
	var base *latSample
	for _, s := range w.samples[:len(w.samples)-1] {
		if base == nil || cur.at.Sub(s.at) >= uiLatencyAfter {
			base = s
		}
	}
	if base == nil {
		return latencyNow{}
	}
	if cur.count < base.count { // CONFIG RESETSTAT: start over
		w.samples = w.samples[len(w.samples)-1:]
		return latencyNow{}
	}
	return windowLatency(base, cur)
}

// windowLatency is what was recorded between base and cur.
func windowLatency(base, cur *latSample) latencyNow {
	ln := latencyNow{window: cur.at.Sub(base.at), calls: cur.count - base.count}
	if ln.calls == 0 {
		return ln
	}
	want50, want99 := (ln.calls+1)/2, (ln.calls*99+99)/100
	var seen uint64
	for i := range cur.buckets {
		d := cur.buckets[i] - min(base.buckets[i], cur.buckets[i])
		if d == 0 {
			continue
		}
		prev := seen
		seen += d
		if prev < want50 && seen >= want50 {
			ln.p50 = histHighest(i)
		}
		if prev < want99 && seen >= want99 {
			ln.p99 = histHighest(i)
		}
		ln.most = histHighest(i)
	}
	return ln
}

// mergedHistogram sums every command's histogram at now.
func (cs *cmdStats) mergedHistogram(now time.Time) *latSample {
	s := &latSample{at: now}
	for _, st := range cs.all {
		h := st.hist.Load()
		if h == nil {
			continue
		}
		for i := range h.buckets {
			if v := h.buckets[i].Load(); v != 0 {
				s.buckets[i] += v
				s.count += v
			}
		}
	}
	return s
}
