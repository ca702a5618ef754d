package server

import (
	"fmt"
	"strconv"
)

// INFO's commandstats, errorstats and latencystats sections, from the
// counters of cmdstats.go, in Redis 7.2's formats.

// infoCommandStats: cmdstat_<name>:calls=…,usec=…,usec_per_call=…,
// rejected_calls=…,failed_calls=… for every command called or refused.
func (s *Server) infoCommandStats() [][2]string {
	var out [][2]string
	for _, st := range s.cstats.all {
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 && failed == 0 {
			continue
		}
		usec := st.usec.Load()
		perCall := 0.0
		if calls > 0 {
			perCall = float64(usec) / float64(calls)
		}
		out = append(out, kv("cmdstat_"+st.name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			calls, usec, perCall, rejected, failed)))
	}
	return out
}

func (s *Server) infoErrorStats() [][2]string { return s.cstats.errorCounts() }

// infoLatencyStats: latency_percentiles_usec_<name>:p50=…,p99=… for the
// percentiles of latency-tracking-info-percentiles, in µs with three
// decimals, for every command with a histogram (none while
// latency-tracking is off, as Redis).
func (s *Server) infoLatencyStats() [][2]string {
	if !s.statsCfg.tracking.Load() {
		return nil
	}
	names, vals := *s.statsCfg.percentiles.Load(), *s.statsCfg.percentileVals.Load()
	var out [][2]string
	for _, st := range s.cstats.all {
		h := st.hist.Load()
		if h == nil {
			continue
		}
		b := make([]byte, 0, 64)
		for i, p := range vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, 'p')
			b = append(b, names[i]...)
			b = append(b, '=')
			b = strconv.AppendFloat(b, float64(h.percentile(p))/1000, 'f', 3, 64)
		}
		out = append(out, kv("latency_percentiles_usec_"+st.name, string(b)))
	}
	return out
}
