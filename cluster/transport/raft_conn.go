package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

const (
	// raftProtoV1 is the first byte a dialler of this transport sends after
	// the mux header. raft.NetworkTransport (the msgpack protocol of
	// earlier releases) always starts with an rpcType, 0 to 4, so an
	// acceptor tells the two apart by this byte. Bytes up to raftProtoMax
	// are kept for later versions: an acceptor answers with the highest
	// version it speaks that is not above the dialler's.
	raftProtoV1  byte = 0xB1
	raftProtoMax byte = 0xBF
	// legacyMaxRPCType is the highest first byte of a msgpack connection.
	legacyMaxRPCType byte = 4
	// muxRefused is what a Mux writes before closing a connection for a
	// group no stream serves, so that a dialler can tell "not (yet) here"
	// from an old node that hung up on an unknown protocol byte.
	muxRefused byte = 0xE0

	readBufSize = 64 << 10
	// keepBufSize: per-connection scratch buffers above this are dropped
	// after use, so one big batch does not pin its memory for good.
	keepBufSize = 1 << 20
	// snapshotTimeoutScale: InstallSnapshot's deadline is the transport's
	// timeout per this many bytes of snapshot (raft.DefaultTimeoutScale).
	snapshotTimeoutScale = raft.DefaultTimeoutScale
)

var (
	errFrameTooLarge = errors.New("transport: raft frame too large")
	errPeerRefused   = errors.New("transport: peer does not serve this raft group")
	errLegacyPeer    = errors.New("transport: peer speaks only the msgpack raft protocol")
)

// raftConn is one connection of the raft transport, dialled or accepted,
// with reusable buffers. Only one goroutine writes and one reads at a time.
type raftConn struct {
	net.Conn
	r    *bufio.Reader
	wbuf []byte
	rbuf []byte
	used time.Time // when it was last returned to a pool
}

func newRaftConn(c net.Conn) *raftConn {
	return &raftConn{Conn: c, r: bufio.NewReaderSize(c, readBufSize)}
}

// writeRequest sends req as one frame, under a write deadline of timeout.
func (c *raftConn) writeRequest(req any, timeout time.Duration) (byte, error) {
	c.wbuf = c.wbuf[:0]
	start := c.beginFrame()
	b, kind, err := encodeRequest(c.wbuf, req)
	c.wbuf = b
	if err == nil {
		err = c.endFrame(start, kind)
	}
	if err != nil {
		return 0, err
	}
	return kind, c.flush(timeout)
}

// writeResponse sends resp, the answer to a request of kind, count times
// in a row (count requests were merged into one, see raft_merge.go).
func (c *raftConn) writeResponse(kind byte, resp raft.RPCResponse, count int, timeout time.Duration) error {
	c.wbuf = c.wbuf[:0]
	for range count {
		start := c.beginFrame()
		c.wbuf = encodeResponse(c.wbuf, kind, resp.Response, resp.Error)
		if err := c.endFrame(start, kind|kindResponse); err != nil {
			return err
		}
	}
	return c.flush(timeout)
}

// beginFrame appends room for a frame header to wbuf and returns where the
// frame starts; endFrame fills the header in once the payload follows it.
func (c *raftConn) beginFrame() int {
	var hdr [frameHeaderLen]byte
	c.wbuf = append(c.wbuf, hdr[:]...)
	return len(c.wbuf) - frameHeaderLen
}

func (c *raftConn) endFrame(start int, kind byte) error {
	n := len(c.wbuf) - start - frameHeaderLen
	if n > maxFrameSize {
		return fmt.Errorf("raft frame of %d bytes: %w", n, errFrameTooLarge)
	}
	c.wbuf[start] = kind
	binary.BigEndian.PutUint32(c.wbuf[start+1:start+frameHeaderLen], uint32(n))
	return nil
}

// flush writes wbuf in one write.
func (c *raftConn) flush(timeout time.Duration) error {
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.Write(c.wbuf)
	if cap(c.wbuf) > keepBufSize {
		c.wbuf = nil
	}
	return err
}

// readFrame reads one frame; idle bounds the wait for its first byte,
// timeout the rest. The payload is valid until the next readFrame.
func (c *raftConn) readFrame(idle, timeout time.Duration) (byte, []byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(idle))
	if _, err := c.r.Peek(1); err != nil {
		return 0, nil, err
	}
	if idle != timeout {
		_ = c.SetReadDeadline(time.Now().Add(timeout))
	}
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrameSize {
		return 0, nil, fmt.Errorf("raft frame of %d bytes: %w", n, errFrameTooLarge)
	}
	p, err := readPayload(c.r, c.rbuf, int(n))
	c.rbuf = p
	if cap(p) > keepBufSize {
		c.rbuf = nil
	}
	return hdr[0], p, err
}

// readPayload reads n bytes into buf. Memory grows only as bytes arrive
// (doubling from 1 MiB), so a lying length costs nothing until the peer
// actually sends that much.
func readPayload(r io.Reader, buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), max(keepBufSize, len(buf)))
		buf = slices.Grow(buf, chunk)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return buf, err
		}
	}
	return buf, nil
}

// readResponse reads the answer to a request of kind into resp. A remote
// error comes back as an error; the connection stays usable after one.
func (c *raftConn) readResponse(kind byte, resp any, timeout time.Duration) (remote bool, err error) {
	got, p, err := c.readFrame(timeout, timeout)
	if err != nil {
		return false, err
	}
	if got != kind|kindResponse {
		return false, fmt.Errorf("transport: raft response kind %d to a request of kind %d", got, kind)
	}
	msg, err := decodeResponse(p, resp)
	if err != nil {
		return false, err
	}
	if msg != "" {
		return true, errors.New(msg)
	}
	return false, nil
}

// roundTrip sends req and reads its response into resp.
func (c *raftConn) roundTrip(req, resp any, timeout time.Duration) (remote bool, err error) {
	kind, err := c.writeRequest(req, timeout)
	if err != nil {
		return false, err
	}
	return c.readResponse(kind, resp, timeout)
}

// clientHandshake sends the protocol byte on a freshly dialled c and reads
// the acceptor's answer. An old node reads the byte as an unknown rpcType
// and hangs up without a word: that is errLegacyPeer.
func clientHandshake(c net.Conn, timeout time.Duration) error {
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if _, err := c.Write([]byte{raftProtoV1}); err != nil {
		return err
	}
	var b [1]byte
	_, err := io.ReadFull(c, b[:])
	switch {
	case err == nil && b[0] == raftProtoV1:
		return nil
	case err == nil && b[0] == muxRefused:
		return errPeerRefused
	case err == nil:
		return fmt.Errorf("transport: peer answered raft protocol byte %#x", b[0])
	case peerHungUp(err):
		return errLegacyPeer
	}
	return err
}

// peerHungUp: the peer closed the connection (as opposed to a timeout or
// our own close).
func peerHungUp(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
