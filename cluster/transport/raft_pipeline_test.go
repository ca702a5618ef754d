package transport

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// transportPair is a client transport on node "a" and a server transport
// on node "b" for group 1; addr is b's bus address.
type transportPair struct {
	client, server raft.Transport
	addr           raft.ServerAddress
	a, b           *Mux
}

type pairFunc func(t *testing.T) transportPair

func testTransportOptions(t *testing.T) TransportOptions {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return TransportOptions{
		Logger:  hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: w}),
		Timeout: 5 * time.Second,
	}
}

// testWriter sends a logger's lines to t.Log until the test ends (a late
// line from a goroutine would panic the test binary).
type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(b))
	}
	return len(b), nil
}

// netTransport is raft's msgpack NetworkTransport over group 1 of m, with
// pipelining on (inFlight ≥ 2) or off (1, as earlier releases ran it).
func netTransport(t *testing.T, m *Mux, inFlight int) *raft.NetworkTransport {
	t.Helper()
	o := testTransportOptions(t)
	nt := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream(t, m, 1), MaxPool: 2, Timeout: o.Timeout, Logger: o.Logger, MaxRPCsInFlight: inFlight,
	})
	t.Cleanup(func() { _ = nt.Close() })
	return nt
}

// raftTransport is a RaftTransport for group 1 of m.
func raftTransport(t *testing.T, m *Mux) *RaftTransport {
	t.Helper()
	tr, err := m.Transport(1, testTransportOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func newPair(t *testing.T) transportPair {
	a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
	return transportPair{
		client: raftTransport(t, a), server: raftTransport(t, b),
		addr: raft.ServerAddress(b.Addr().String()), a: a, b: b,
	}
}

func legacyPair(t *testing.T) transportPair {
	a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
	return transportPair{
		client: netTransport(t, a, 4), server: netTransport(t, b, 4),
		addr: raft.ServerAddress(b.Addr().String()), a: a, b: b,
	}
}

// serve answers every RPC reaching tr's consumer with answer until the
// test ends; answer may block.
func serve(t testing.TB, tr raft.Transport, answer func(raft.RPC)) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case rpc := <-tr.Consumer():
				go answer(rpc)
			case <-stop:
				return
			}
		}
	}()
}

// staleTerm answers AppendEntries as a follower in a higher term does.
func staleTerm(rpc raft.RPC) {
	rpc.Respond(&raft.AppendEntriesResponse{Term: 99, Success: false}, nil)
}

func appendReq(i int) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ID: []byte("a"), Addr: []byte("a")}, Term: 5,
		PrevLogEntry: uint64(i), PrevLogTerm: 5, LeaderCommitIndex: uint64(i),
		Entries: []*raft.Log{{Index: uint64(i + 1), Term: 5, Data: []byte(fmt.Sprint("entry ", i))}},
	}
}

// TestPipelineSenderWithoutConsumer is raft's Shutdown deadlock. raft's
// pipelineDecode reads one response, sees a higher term and returns;
// nobody reads the pipeline's Consumer any more. raft's sender is inside
// pipeline.AppendEntries and only closes the pipeline once that returns. So
// AppendEntries must return (sent, or failed) even though nobody consumes.
// raft.NetworkTransport's pipeline parks the sender for good: its decoder
// blocks handing the next response to the Consumer, and the sender blocks
// handing it the next request.
func TestPipelineSenderWithoutConsumer(t *testing.T) {
	tests := []struct {
		name       string
		pair       pairFunc
		wantParked bool
	}{
		{"raft.NetworkTransport parks", legacyPair, true},
		{"RaftTransport never parks", newPair, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pair(t)
			serve(t, p.server, staleTerm)
			pipe, err := p.client.AppendEntriesPipeline("b", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer pipe.Close()
			sent := make(chan error, 1)
			go func() {
				var err error
				for i := 0; i < 500 && err == nil; i++ {
					_, err = pipe.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse))
				}
				sent <- err
			}()
			// raft's decoder: one response, a higher term, gone.
			select {
			case f := <-pipe.Consumer():
				if f.Response().Term != 99 {
					t.Fatalf("first response %+v", f.Response())
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no response")
			}
			select {
			case err := <-sent:
				if tc.wantParked {
					t.Fatalf("the sender returned (%v); raft.NetworkTransport was expected to park it", err)
				}
			case <-time.After(map[bool]time.Duration{true: time.Second, false: 10 * time.Second}[tc.wantParked]):
				if !tc.wantParked {
					t.Fatal("the sender is parked in AppendEntries: raft's Shutdown would hang")
				}
				// Parked, as expected: release it so the test ends.
				_ = pipe.Close()
				if err := <-sent; !errors.Is(err, raft.ErrPipelineShutdown) {
					t.Fatalf("released sender: %v", err)
				}
			}
		})
	}
}

// TestPipelineInOrder: pipelineDepth requests go out while the first is
// still unanswered, the next waits for a slot, and the answers come back
// on the Consumer in the order the requests went out.
func TestPipelineInOrder(t *testing.T) {
	p := newPair(t)
	gate := make(chan struct{})
	serve(t, p.server, func(rpc raft.RPC) {
		<-gate
		req := rpc.Command.(*raft.AppendEntriesRequest)
		last := req.Entries[len(req.Entries)-1].Index
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: last, Success: true}, nil)
	})
	pipe, err := p.client.AppendEntriesPipeline("b", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	const total = 300
	sent := make(chan int, total)
	go func() {
		defer close(sent)
		for i := 0; i < total; i++ {
			if _, err := pipe.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse)); err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			sent <- i
		}
	}()
	// The follower answers one request at a time: pipelineDepth go out
	// unanswered; the one after them waits for a slot.
	for i := 0; i < pipelineDepth; i++ {
		if got := recvWithin(t, sent); got != i {
			t.Fatalf("sent %d, want %d", got, i)
		}
	}
	select {
	case i := <-sent:
		t.Fatalf("request %d went out with %d unanswered", i, pipelineDepth)
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	for i := 0; i < total; i++ {
		var f raft.AppendFuture
		select {
		case f = <-pipe.Consumer():
		case <-time.After(10 * time.Second):
			t.Fatalf("response %d missing", i)
		}
		if err := f.Error(); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		// Queued requests are merged by the follower and answered alike:
		// an answer covers at least its own request's entries.
		if got := f.Response().LastLog; got < uint64(i+1) || f.Request().PrevLogEntry != uint64(i) {
			t.Fatalf("response %d: request %d, last log %d", i, f.Request().PrevLogEntry, got)
		}
	}
	for range sent { // the sender may still be returning from the last send
	}
}

func recvWithin[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing within 10 s")
	}
	panic("unreachable")
}

// TestCloseWhilePeerSilent: the follower never answers, the pipeline is
// full and the sender is parked waiting for a slot. Closing the pipeline,
// or the whole transport, returns at once and releases the sender.
func TestCloseWhilePeerSilent(t *testing.T) {
	tests := []struct {
		name  string
		close func(transportPair, raft.AppendPipeline)
	}{
		{"pipeline", func(_ transportPair, p raft.AppendPipeline) { _ = p.Close() }},
		{"transport", func(tp transportPair, _ raft.AppendPipeline) { _ = tp.client.(raft.WithClose).Close() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			got := make(chan struct{}, 2*pipelineDepth)
			serve(t, p.server, func(raft.RPC) { got <- struct{}{} }) // and never answer
			pipe, err := p.client.AppendEntriesPipeline("b", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			sent := make(chan error, 1)
			go func() {
				var err error
				for i := 0; err == nil; i++ {
					_, err = pipe.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse))
				}
				sent <- err
			}()
			recvWithin(t, got) // the follower holds the first request
			closed := make(chan struct{})
			go func() {
				tc.close(p, pipe)
				close(closed)
			}()
			recvWithin(t, closed)
			if err := recvWithin(t, sent); err == nil {
				t.Fatal("the parked sender got no error")
			}
			if _, err := pipe.AppendEntries(appendReq(0), new(raft.AppendEntriesResponse)); err == nil {
				t.Fatal("a closed pipeline accepted a request")
			}
		})
	}
}

// TestFollowerMergesQueuedAppends: AppendEntries that queue on a pipeline
// while the follower is busy reach its raft as one request when they chain
// (same leader and term, each starting where the last ended), and each
// gets the answer; ones that do not chain go one by one.
func TestFollowerMergesQueuedAppends(t *testing.T) {
	next := func(prev uint64, term uint64, n int) *raft.AppendEntriesRequest {
		r := &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ID: []byte("a"), Addr: []byte("a")}, Term: term,
			PrevLogEntry: prev, PrevLogTerm: term, LeaderCommitIndex: prev,
		}
		for i := range n {
			r.Entries = append(r.Entries, &raft.Log{Index: prev + uint64(i) + 1, Term: term, Data: []byte("x")})
		}
		return r
	}
	tests := []struct {
		name string
		reqs []*raft.AppendEntriesRequest
		want []int // entries per request raft sees
	}{
		{"chained", []*raft.AppendEntriesRequest{next(10, 5, 1), next(11, 5, 2), next(13, 5, 1), next(14, 5, 3)}, []int{1, 6}},
		{"new term", []*raft.AppendEntriesRequest{next(10, 5, 1), next(11, 5, 1), next(12, 6, 1), next(13, 6, 1)}, []int{1, 1, 2}},
		{"gap", []*raft.AppendEntriesRequest{next(10, 5, 1), next(11, 5, 1), next(20, 5, 1)}, []int{1, 1, 1}},
		{"commit only", []*raft.AppendEntriesRequest{next(10, 5, 1), next(11, 5, 1), next(12, 5, 0)}, []int{1, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			gate := make(chan struct{})
			seen := make(chan int, len(tc.reqs))
			serve(t, p.server, func(rpc raft.RPC) {
				req := rpc.Command.(*raft.AppendEntriesRequest)
				seen <- len(req.Entries)
				<-gate
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
			})
			pipe, err := p.client.AppendEntriesPipeline("b", p.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer pipe.Close()
			for i, r := range tc.reqs {
				if _, err := pipe.AppendEntries(r, new(raft.AppendEntriesResponse)); err != nil {
					t.Fatal(err)
				}
				if i == 0 && recvWithin(t, seen) != tc.want[0] {
					t.Fatal("the first request was merged with nothing to merge")
				}
			}
			// The first is with raft; the others queue until it answers.
			close(gate)
			for i := range tc.reqs {
				f := recvWithin(t, pipe.Consumer())
				if f.Error() != nil || !f.Response().Success || f.Request() != tc.reqs[i] {
					t.Fatalf("answer %d: %+v, %v", i, f.Response(), f.Error())
				}
			}
			got := []int{tc.want[0]}
			for range tc.want[1:] {
				got = append(got, recvWithin(t, seen))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(seen) != 0 {
				t.Fatalf("raft saw requests of %v entries (and %d more), want %v", got, len(seen), tc.want)
			}
		})
	}
}
