package server

import (
	"io"
	"sync/atomic"
	"time"
)

// ioStats are INFO's counters of the connections' reads and writes:
// total_reads_processed and total_writes_processed count the reads from
// and writes to client sockets (Redis counts its read and write handler
// calls), reply_buffer_expands and _shrinks the reply buffer's growths and
// its release after a big reply, and the peaks are the clients section's
// client_recent_max_input_buffer and _output_buffer.
type ioStats struct {
	reads, writes    atomic.Int64
	expands, shrinks atomic.Int64
	peakIn, peakOut  recentPeak
	authDenied       atomic.Int64 // acl_access_denied_auth: AUTH and HELLO AUTH refused
}

// reset zeroes the counters CONFIG RESETSTAT zeroes (Redis's
// resetServerStats keeps the ACL counters).
func (st *ioStats) reset() {
	for _, c := range []*atomic.Int64{&st.reads, &st.writes, &st.expands, &st.shrinks} {
		c.Store(0)
	}
}

// countingReader counts the reads of a client's socket.
type countingReader struct {
	r  io.Reader
	st *ioStats
}

func (c countingReader) Read(p []byte) (int, error) {
	c.st.reads.Add(1)
	return c.r.Read(p)
}

// peakSeconds is how far back a recent peak looks, as Redis's
// CLIENTS_PEAK_MEM_USAGE_SLOTS (8 seconds).
const peakSeconds = 8

// recentPeak is the largest value noted in the last peakSeconds seconds:
// one slot per second, each the maximum noted in its second.
type recentPeak struct {
	slots [peakSeconds]struct {
		sec atomic.Int64
		max atomic.Int64
	}
}

// note records v now.
func (p *recentPeak) note(v int) {
	sec := time.Now().Unix()
	sl := &p.slots[sec%peakSeconds]
	if old := sl.sec.Load(); old != sec && sl.sec.CompareAndSwap(old, sec) {
		sl.max.Store(0)
	}
	for {
		m := sl.max.Load()
		if int64(v) <= m || sl.max.CompareAndSwap(m, int64(v)) {
			return
		}
	}
}

// get is the largest value noted in the last peakSeconds seconds.
func (p *recentPeak) get() int64 {
	now := time.Now().Unix()
	var m int64
	for i := range p.slots {
		sl := &p.slots[i]
		if now-sl.sec.Load() < peakSeconds {
			m = max(m, sl.max.Load())
		}
	}
	return m
}
