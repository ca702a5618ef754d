package transport

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// acceptLoop serves every connection the Mux routes to this group.
func (t *RaftTransport) acceptLoop() {
	for {
		c, err := t.stream.Accept()
		if err != nil {
			return // the stream is closed
		}
		go t.serveConn(c)
	}
}

// serveConn tells the protocols apart by the first byte: this transport's
// protocol byte, or an rpcType of raft.NetworkTransport's msgpack protocol,
// whose connections go to the embedded NetworkTransport.
func (t *RaftTransport) serveConn(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(t.timeout))
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		_ = c.Close()
		return
	}
	switch {
	case b[0] >= raftProtoV1 && b[0] <= raftProtoMax:
		_ = c.SetWriteDeadline(time.Now().Add(t.timeout))
		if _, err := c.Write([]byte{raftProtoV1}); err != nil {
			_ = c.Close()
			return
		}
		t.serveV1(newRaftConn(c))
	case b[0] <= legacyMaxRPCType:
		_ = c.SetReadDeadline(time.Time{})
		t.legacy.handOff(&peekedConn{Conn: c, first: b[0]})
	default:
		t.log.Debug("dropping raft connection with an unknown protocol byte", "remote", c.RemoteAddr().String(), "byte", b[0])
		_ = c.Close()
	}
}

// serveV1 answers requests on c one at a time, in order, until the peer
// closes it, it idles for rpcIdle, or something breaks.
func (t *RaftTransport) serveV1(c *raftConn) {
	defer c.Close()
	for {
		kind, p, err := c.readFrame(rpcIdle, t.timeout)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				t.log.Debug("raft connection read failed", "remote", c.RemoteAddr().String(), "error", err)
			}
			return
		}
		req, err := decodeRequest(kind, p)
		if err != nil {
			t.log.Warn("dropping raft connection", "remote", c.RemoteAddr().String(), "error", err)
			return
		}
		count := 1
		if ae, ok := req.(*raft.AppendEntriesRequest); ok && !isHeartbeat(ae) {
			count = c.mergeBuffered(ae)
		}
		if !t.serveOne(c, kind, req, count) {
			return
		}
	}
}

// serveOne hands req (standing for count requests) to raft and writes
// raft's answer to each; false if c is done with (a snapshot's connection
// is used once, as by the sender).
func (t *RaftTransport) serveOne(c *raftConn, kind byte, req any, count int) bool {
	respCh := make(chan raft.RPCResponse, 1)
	rpc := raft.RPC{Command: req, RespChan: respCh}
	snap, isSnap := req.(*raft.InstallSnapshotRequest)
	if isSnap {
		_ = c.SetReadDeadline(time.Now().Add(snapshotTimeout(t.timeout, snap.Size)))
		rpc.Reader = io.LimitReader(c.r, snap.Size)
	}
	ae, isAppend := req.(*raft.AppendEntriesRequest)
	if err := t.dispatch(rpc, isAppend && isHeartbeat(ae)); err != nil {
		return false
	}
	var resp raft.RPCResponse
	select {
	case resp = <-respCh:
	case <-t.shutdown:
		return false
	}
	if err := c.writeResponse(kind, resp, count, t.timeout); err != nil {
		t.log.Debug("raft connection write failed", "remote", c.RemoteAddr().String(), "error", err)
		return false
	}
	return !isSnap
}

// dispatch gives rpc to the heartbeat handler if it is a heartbeat and one
// is set, else to raft's consumer.
func (t *RaftTransport) dispatch(rpc raft.RPC, heartbeat bool) error {
	if heartbeat {
		t.hbMu.Lock()
		fn := t.hbFn
		t.hbMu.Unlock()
		if fn != nil {
			fn(rpc)
			return nil
		}
	}
	select {
	case t.consume <- rpc:
		return nil
	case <-t.shutdown:
		return raft.ErrTransportShutdown
	}
}
