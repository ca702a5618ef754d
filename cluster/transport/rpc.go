package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// RPCGroup is the reserved group id of node-to-node calls: pub/sub fan-out,
// forwarding a proposal to a group's leader, and whatever else one node asks
// of another outside Raft.
const RPCGroup uint32 = 0xFFFFFFFF

// Service names what an RPC asks for; the cluster package defines the values.
type Service byte

// RPCHandler answers one call. Calls on one connection are answered in the
// order they were sent, one at a time, so a caller that sends in order over
// one connection is served in order.
type RPCHandler func(ctx context.Context, from string, svc Service, payload []byte) ([]byte, error)

// RemoteError is an error returned by the remote handler (as opposed to a
// transport failure: with a RemoteError the call was delivered and answered).
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return e.Msg }

// MaxRPCPayload bounds one request or response, as Redis bounds a bulk string.
const MaxRPCPayload = 512 << 20

const (
	rpcOK     byte = 0
	rpcFailed byte = 1
	// rpcIdle closes a served connection nobody used for this long; callers
	// keep their idle connections for less, so they never pick a dead one.
	rpcIdle     = 2 * time.Minute
	rpcPoolIdle = time.Minute
	rpcPoolSize = 4
)

var errRPCTooLarge = errors.New("transport: rpc payload too large")

// serveRPC answers calls on c until it is closed, idle or broken.
func (m *Mux) serveRPC(c *conn) {
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-m.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(rpcIdle))
		svc, payload, err := readFrame(r)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				m.log.Debug("bus: rpc read failed", "from", c.remote, "err", err)
			}
			return
		}
		status, out := rpcOK, []byte(nil)
		if m.cfg.Handler == nil {
			status, out = rpcFailed, []byte("no rpc handler")
		} else if out, err = m.cfg.Handler(ctx, c.remote, Service(svc), payload); err != nil {
			status, out = rpcFailed, []byte(err.Error())
		}
		_ = c.SetWriteDeadline(time.Now().Add(ctlTimeout))
		if err := writeFrame(w, status, out); err != nil {
			return
		}
	}
}

// Call sends payload to the node whose bus address is addr and waits for
// its answer. A *RemoteError means the handler answered with an error; any
// other error means the call may or may not have been delivered.
func (m *Mux) Call(ctx context.Context, addr string, svc Service, payload []byte) ([]byte, error) {
	if len(payload) > MaxRPCPayload {
		return nil, errRPCTooLarge
	}
	c, err := m.rpcConn(ctx, addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(ctlTimeout)
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	status, out, err := c.roundTrip(byte(svc), payload)
	if !stop() || err != nil {
		_ = c.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("rpc to %s: %w", addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	m.putRPCConn(addr, c)
	if status != rpcOK {
		return nil, &RemoteError{Msg: string(out)}
	}
	return out, nil
}

// rpcConn is a dialled connection with its own buffers.
type rpcConn struct {
	*conn
	r    *bufio.Reader
	w    *bufio.Writer
	used time.Time
}

func (c *rpcConn) roundTrip(svc byte, payload []byte) (byte, []byte, error) {
	if err := writeFrame(c.w, svc, payload); err != nil {
		return 0, nil, err
	}
	return readFrame(c.r)
}

func (m *Mux) rpcConn(ctx context.Context, addr string) (*rpcConn, error) {
	// Connections are closed after m.mu is released: Close untracks them,
	// which takes m.mu.
	var stale []*rpcConn
	defer func() {
		for _, c := range stale {
			_ = c.Close()
		}
	}()
	m.mu.Lock()
	if m.rpcPool == nil {
		m.rpcPool = map[string][]*rpcConn{}
	}
	for pool := m.rpcPool[addr]; len(pool) > 0; pool = m.rpcPool[addr] {
		c := pool[len(pool)-1]
		m.rpcPool[addr] = pool[:len(pool)-1]
		if time.Since(c.used) < rpcPoolIdle {
			m.mu.Unlock()
			return c, nil
		}
		stale = append(stale, c)
	}
	m.mu.Unlock()
	timeout := ctlTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	c, err := m.dial(addr, RPCGroup, timeout)
	if err != nil {
		return nil, fmt.Errorf("rpc dial %s: %w", addr, err)
	}
	return &rpcConn{conn: c, r: bufio.NewReader(c), w: bufio.NewWriter(c)}, nil
}

func (m *Mux) putRPCConn(addr string, c *rpcConn) {
	c.used = time.Now()
	m.mu.Lock()
	keep := !m.closed && len(m.rpcPool[addr]) < rpcPoolSize
	if keep {
		m.rpcPool[addr] = append(m.rpcPool[addr], c)
	}
	m.mu.Unlock()
	if !keep {
		_ = c.Close() // outside m.mu: Close untracks, which takes it
	}
}

// A frame is a kind byte (service or status), a 4-byte length and the payload.
func writeFrame(w *bufio.Writer, kind byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	if _, err := w.Write(payload); err != nil {
		return err
	}
	return w.Flush()
}

// readFrame reads one frame. Memory grows only as bytes arrive, so a lying
// length costs nothing until the peer actually sends that much.
func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxRPCPayload {
		return 0, nil, errRPCTooLarge
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return hdr[0], buf.Bytes(), nil
}
