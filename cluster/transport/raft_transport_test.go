package transport

import (
	"bytes"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// echo answers every RPC kind as a follower that agrees with everything;
// a TimeoutNow from "fail" is answered with an error, and a snapshot is a
// success only if its bytes are snapshotData's.
func echo(rpc raft.RPC) {
	switch req := rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry + uint64(len(req.Entries)), Success: true}, nil)
	case *raft.RequestVoteRequest:
		rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
	case *raft.RequestPreVoteRequest:
		rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: true}, nil)
	case *raft.TimeoutNowRequest:
		if string(req.ID) == "fail" {
			rpc.Respond(nil, errors.New("refused by the test"))
			return
		}
		rpc.Respond(&raft.TimeoutNowResponse{RPCHeader: raft.RPCHeader{ID: []byte("b")}}, nil)
	case *raft.InstallSnapshotRequest:
		got, err := io.ReadAll(rpc.Reader)
		ok := err == nil && bytes.Equal(got, snapshotData(req.Size))
		rpc.Respond(&raft.InstallSnapshotResponse{Term: req.Term, Success: ok}, nil)
	}
}

func snapshotData(n int64) []byte { return bytes.Repeat([]byte("snap"), int(n/4)) }

func mixedPairs() map[string]pairFunc {
	return map[string]pairFunc{
		"new to new":                        newPair,
		"new to new, with a cluster secret": secretPair,
		"new to msgpack": func(t *testing.T) transportPair {
			a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
			return transportPair{client: raftTransport(t, a), server: netTransport(t, b, 1), addr: raft.ServerAddress(b.Addr().String()), a: a, b: b}
		},
		"msgpack to new": func(t *testing.T) transportPair {
			a, b := newMux(t, "a", nil, nil), newMux(t, "b", nil, nil)
			return transportPair{client: netTransport(t, a, 1), server: raftTransport(t, b), addr: raft.ServerAddress(b.Addr().String()), a: a, b: b}
		},
	}
}

// TestRaftRPCs sends every RPC kind between every mix of protocols.
func TestRaftRPCs(t *testing.T) {
	hdr := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("a"), Addr: []byte("a:1")}
	snap := &raft.InstallSnapshotRequest{RPCHeader: hdr, SnapshotVersion: 1, Term: 3, Size: 1 << 20}
	calls := []struct {
		name string
		call func(raft.Transport, raft.ServerAddress) error
		ok   bool
	}{
		{"append", func(tr raft.Transport, addr raft.ServerAddress) error {
			var resp raft.AppendEntriesResponse
			err := tr.AppendEntries("b", addr, appendReq(41), &resp)
			return want(err, resp.Success && resp.LastLog == 42 && resp.Term == 5)
		}, true},
		{"vote", func(tr raft.Transport, addr raft.ServerAddress) error {
			var resp raft.RequestVoteResponse
			err := tr.RequestVote("b", addr, &raft.RequestVoteRequest{RPCHeader: hdr, Term: 8}, &resp)
			return want(err, resp.Granted && resp.Term == 8)
		}, true},
		{"prevote", func(tr raft.Transport, addr raft.ServerAddress) error {
			var resp raft.RequestPreVoteResponse
			err := tr.(raft.WithPreVote).RequestPreVote("b", addr, &raft.RequestPreVoteRequest{RPCHeader: hdr, Term: 9}, &resp)
			return want(err, resp.Granted && resp.Term == 9)
		}, true},
		{"timeout now", func(tr raft.Transport, addr raft.ServerAddress) error {
			var resp raft.TimeoutNowResponse
			err := tr.TimeoutNow("b", addr, &raft.TimeoutNowRequest{RPCHeader: hdr}, &resp)
			return want(err, string(resp.ID) == "b")
		}, true},
		{"remote error", func(tr raft.Transport, addr raft.ServerAddress) error {
			var resp raft.TimeoutNowResponse
			err := tr.TimeoutNow("b", addr, &raft.TimeoutNowRequest{RPCHeader: raft.RPCHeader{ID: []byte("fail")}}, &resp)
			if err == nil || err.Error() != "refused by the test" {
				return errors.New("want the remote error, got " + errString(err))
			}
			return nil
		}, true},
		{"install snapshot", func(tr raft.Transport, addr raft.ServerAddress) error {
			var resp raft.InstallSnapshotResponse
			err := tr.InstallSnapshot("b", addr, snap, &resp, bytes.NewReader(snapshotData(snap.Size)))
			return want(err, resp.Success && resp.Term == 3)
		}, true},
	}
	for name, pair := range mixedPairs() {
		t.Run(name, func(t *testing.T) {
			p := pair(t)
			serve(t, p.server, echo)
			var beats atomic.Int32
			p.server.SetHeartbeatHandler(func(rpc raft.RPC) { beats.Add(1); echo(rpc) })
			for _, c := range calls {
				// Twice: the second goes on a pooled connection.
				for range 2 {
					if err := c.call(p.client, p.addr); err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
				}
			}
			var resp raft.AppendEntriesResponse
			beat := &raft.AppendEntriesRequest{RPCHeader: hdr, Term: 5}
			if err := p.client.AppendEntries("b", p.addr, beat, &resp); err != nil || !resp.Success {
				t.Fatalf("heartbeat: %+v, %v", resp, err)
			}
			if beats.Load() != 1 {
				t.Fatalf("the heartbeat handler saw %d heartbeats, want 1", beats.Load())
			}
		})
	}
}

func want(err error, ok bool) error {
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("unexpected response")
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestFallbackToMsgpack: towards a node of an earlier release the new
// transport finds out on its first dial, then speaks msgpack without
// pipelining; towards a node that merely lacks the group it does not.
func TestFallbackToMsgpack(t *testing.T) {
	a, old, bare := newMux(t, "a", nil, nil), newMux(t, "old", nil, nil), newMux(t, "bare", nil, nil)
	serve(t, netTransport(t, old, 1), echo)
	tr := raftTransport(t, a)
	oldAddr, bareAddr := raft.ServerAddress(old.Addr().String()), raft.ServerAddress(bare.Addr().String())

	var resp raft.AppendEntriesResponse
	if err := tr.AppendEntries("old", oldAddr, appendReq(1), &resp); err != nil || !resp.Success {
		t.Fatalf("append to an old node: %+v, %v", resp, err)
	}
	if !tr.legacy.speaks(oldAddr) {
		t.Fatal("the old node is not remembered as speaking msgpack")
	}
	if _, err := tr.AppendEntriesPipeline("old", oldAddr); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("pipeline to an old node: %v", err)
	}

	err := tr.AppendEntries("bare", bareAddr, appendReq(1), &resp)
	if !errors.Is(err, errPeerRefused) || tr.legacy.speaks(bareAddr) {
		t.Fatalf("append to a node without the group: %v (msgpack: %v)", err, tr.legacy.speaks(bareAddr))
	}
}

// TestHeartbeatDuringSnapshot: while a big snapshot is on its way to a
// follower that is busy with it, heartbeats and plain RPCs to the same
// follower still get through at once.
func TestHeartbeatDuringSnapshot(t *testing.T) {
	p := newPair(t)
	busy, release := make(chan struct{}), make(chan struct{})
	serve(t, p.server, func(rpc raft.RPC) {
		if _, ok := rpc.Command.(*raft.InstallSnapshotRequest); ok {
			close(busy)
			<-release // reads nothing: the sender blocks on a full socket
			rpc.Respond(&raft.InstallSnapshotResponse{}, errors.New("released"))
			return
		}
		echo(rpc)
	})
	p.server.SetHeartbeatHandler(echo)
	snapDone := make(chan error, 1)
	go func() {
		req := &raft.InstallSnapshotRequest{Term: 3, Size: 256 << 20}
		var resp raft.InstallSnapshotResponse
		snapDone <- p.client.InstallSnapshot("b", p.addr, req, &resp, io.LimitReader(zeros{}, req.Size))
	}()
	recvWithin(t, busy)
	for i := range 20 {
		start := time.Now()
		var resp raft.AppendEntriesResponse
		beat := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("a:1")}, Term: 5}
		if err := p.client.AppendEntries("b", p.addr, beat, &resp); err != nil || !resp.Success {
			t.Fatalf("heartbeat %d: %+v, %v", i, resp, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("heartbeat %d took %v", i, d)
		}
	}
	var vote raft.RequestVoteResponse
	if err := p.client.RequestVote("b", p.addr, &raft.RequestVoteRequest{Term: 6}, &vote); err != nil || !vote.Granted {
		t.Fatalf("vote during the snapshot: %+v, %v", vote, err)
	}
	close(release)
	if err := recvWithin(t, snapDone); err == nil {
		t.Fatal("the snapshot succeeded")
	}
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// TestPipelineFailsOnCutLink: fault injection's cut closes a pipeline's
// connection; the pipeline fails (raft falls back to plain RPCs), the
// dial that follows fails, and after the heal the new protocol is used
// again (a cut is not taken for an old node).
func TestPipelineFailsOnCutLink(t *testing.T) {
	f := NewFaults()
	a, b := newMux(t, "a", f, nil), newMux(t, "b", f, nil)
	client, server := raftTransport(t, a), raftTransport(t, b)
	serve(t, server, echo)
	addr := raft.ServerAddress(b.Addr().String())
	pipe, err := client.AppendEntriesPipeline("b", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pipe.Close()
	if _, err := pipe.AppendEntries(appendReq(1), new(raft.AppendEntriesResponse)); err != nil {
		t.Fatal(err)
	}
	if fut := recvWithin(t, pipe.Consumer()); fut.Error() != nil || !fut.Response().Success {
		t.Fatalf("before the cut: %+v, %v", fut.Response(), fut.Error())
	}
	f.Partition("a", "b")
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if _, err := pipe.AppendEntries(appendReq(i), new(raft.AppendEntriesResponse)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pipeline outlived the cut")
		}
		// Each send is answered with a failed future (the connection is
		// closed): wait for it instead of spinning.
		recvWithin(t, pipe.Consumer())
	}
	if _, err := client.AppendEntriesPipeline("b", addr); !errors.Is(err, ErrLinkCut) {
		t.Fatalf("pipeline across a cut: %v", err)
	}
	f.HealAll()
	pipe2, err := client.AppendEntriesPipeline("b", addr)
	if err != nil || client.legacy.speaks(addr) {
		t.Fatalf("after the heal: %v (msgpack: %v)", err, client.legacy.speaks(addr))
	}
	_ = pipe2.Close()
}

// BenchmarkAppendEntries: one AppendEntries of 64 entries of 100 bytes,
// sent and answered over loopback, by each transport, and by this one
// over a bus with a cluster secret (TLS).
func BenchmarkAppendEntries(b *testing.B) {
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("a"), Addr: []byte("a:1")}, Term: 5, PrevLogEntry: 1, LeaderCommitIndex: 1}
	for i := range 64 {
		req.Entries = append(req.Entries, &raft.Log{Index: uint64(i + 2), Term: 5, Data: bytes.Repeat([]byte{'x'}, 100), AppendedAt: time.Now()})
	}
	for _, kind := range []string{"new", "msgpack", "new+secret"} {
		b.Run(kind, func(b *testing.B) {
			a, s := newMux(b, "a", nil, nil), newMux(b, "b", nil, nil)
			if kind == "new+secret" {
				a, _ = secretMux(b, "a", secretA, 5*time.Second)
				s, _ = secretMux(b, "b", secretA, 5*time.Second)
			}
			o := TransportOptions{MaxPool: 3, Timeout: 10 * time.Second, Logger: hclog.NewNullLogger()}
			var client, server raft.Transport
			if kind != "msgpack" {
				client, server = newRaftTransport(stream(b, a, 1), o), newRaftTransport(stream(b, s, 1), o)
			} else {
				client, server = newNetworkTransport(stream(b, a, 1), o), newNetworkTransport(stream(b, s, 1), o)
			}
			b.Cleanup(func() {
				_ = client.(raft.WithClose).Close()
				_ = server.(raft.WithClose).Close()
			})
			serve(b, server, echo)
			addr := raft.ServerAddress(s.Addr().String())
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var resp raft.AppendEntriesResponse
				if err := client.AppendEntries("b", addr, req, &resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
