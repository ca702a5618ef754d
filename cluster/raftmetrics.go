package cluster

import (
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// What a Raft group does, timed where it happens, for the operator's
// metrics (the front end's /metrics reads them at scrape time): the
// FSM's apply of each entry, the log store's append of each batch (which
// includes its fsync: a store returns once the entries are durable), and
// each snapshot's persist (its size and duration). Each is a thin wrapper
// around what openRaft hands to hashicorp/raft; recording is a few atomic
// adds, no lock, no allocation. Leader changes are counted from a Raft
// observer (group.go's leaderWatch).

// Histogram is a latency histogram with fixed bounds (HistogramBounds),
// safe for concurrent use. Recording is lock-free.
type Histogram struct {
	counts [len(HistogramBounds) + 1]atomic.Uint64 // the last one is +Inf
	sumNs  atomic.Int64
}

// HistogramBounds are the upper bounds, in seconds, of every Histogram's
// buckets: 50 µs to 10 s, about ×2.5 apart, fine enough for an fsync and
// a snapshot alike.
var HistogramBounds = [...]float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(HistogramBounds) && s > HistogramBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sumNs.Add(int64(d))
}

// HistogramSnapshot is a Histogram read at one moment, in the form
// Prometheus wants: Buckets maps each upper bound (seconds) to the count
// of durations at or below it (cumulative); Sum is in seconds.
type HistogramSnapshot struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64
}

// Snapshot reads h. Reads of concurrent recordings may be torn by one
// observation (Count versus Buckets), which a scrape tolerates.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Buckets: make(map[float64]uint64, len(HistogramBounds))}
	for i, b := range HistogramBounds {
		s.Count += h.counts[i].Load()
		s.Buckets[b] = s.Count
	}
	s.Count += h.counts[len(HistogramBounds)].Load()
	s.Sum = float64(h.sumNs.Load()) / float64(time.Second)
	return s
}

// raftMetrics are one Raft group's recordings.
type raftMetrics struct {
	apply         Histogram     // FSM.Apply of one entry
	logStore      Histogram     // LogStore.StoreLogs of one batch (append + fsync)
	snapshot      Histogram     // one snapshot's persist, Create to Close
	snapshotBytes atomic.Uint64 // the size of the last snapshot persisted
	leaderChanges atomic.Uint64 // leader observations that named a new leader (or none)
}

// timedFSM times every Apply of the group's FSM.
type timedFSM struct {
	raft.FSM
	m *raftMetrics
}

func (f timedFSM) Apply(l *raft.Log) any {
	start := time.Now()
	defer func() { f.m.apply.Observe(time.Since(start)) }()
	return f.FSM.Apply(l)
}

// timedLogs times every StoreLogs of the group's log store; the rest
// passes through. It keeps the store's monotonic promise visible to
// raft (raft-wal is monotonic).
type timedLogs struct {
	raft.LogStore
	m *raftMetrics
}

func (l timedLogs) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

func (l timedLogs) StoreLogs(es []*raft.Log) error {
	start := time.Now()
	err := l.LogStore.StoreLogs(es)
	l.m.logStore.Observe(time.Since(start))
	return err
}

func (l timedLogs) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// timedSnapshots measures every snapshot the group persists.
type timedSnapshots struct {
	raft.SnapshotStore
	m *raftMetrics
}

func (s timedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, cf raft.Configuration,
	cfIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, cf, cfIndex, trans)
	if err != nil {
		return nil, err
	}
	return &timedSink{SnapshotSink: sink, m: s.m, start: time.Now()}, nil
}

// timedSink counts the bytes of a snapshot and, when it is closed
// (written whole), records its duration and size.
type timedSink struct {
	raft.SnapshotSink
	m     *raftMetrics
	start time.Time
	n     uint64
}

var _ io.Writer = (*timedSink)(nil)

func (s *timedSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	s.n += uint64(n)
	return n, err
}

func (s *timedSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil {
		s.m.snapshot.Observe(time.Since(s.start))
		s.m.snapshotBytes.Store(s.n)
	}
	return err
}
