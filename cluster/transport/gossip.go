package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// Gossip (hashicorp/memberlist) runs over the bus port too, so a firewall
// opens one port per node for everything between nodes. memberlist's
// streams are bus connections of GossipStreamGroup; its packets, UDP in
// memberlist's own transport, travel as frames on a bus connection of
// GossipPacketGroup per destination. Both go through the Faults, so a test
// partition cuts gossip as it cuts Raft, and both are dialled by Mux.dial,
// so they leave from the node's bus address as Raft's connections do (a
// packet filter between node addresses cuts gossip too).
const (
	GossipStreamGroup uint32 = 0xFFFFFFFE
	GossipPacketGroup uint32 = 0xFFFFFFFD
)

// maxGossipPacket bounds one packet frame; memberlist keeps packets under
// its UDPBufferSize (1400 bytes by default), so this is generous.
const maxGossipPacket = 64 << 10

// GossipTransport is a memberlist.Transport over a Mux.
type GossipTransport struct {
	mux     *Mux
	stream  *Stream
	packetc chan *memberlist.Packet
	streamc chan net.Conn
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu      sync.Mutex
	senders map[string]*packetSender
}

var _ memberlist.Transport = (*GossipTransport)(nil)

// Gossip registers the gossip groups on m and returns memberlist's transport.
func (m *Mux) Gossip() (*GossipTransport, error) {
	s, err := m.stream(GossipStreamGroup)
	if err != nil {
		return nil, err
	}
	t := &GossipTransport{
		mux: m, stream: s,
		packetc: make(chan *memberlist.Packet, 256),
		streamc: make(chan net.Conn),
		done:    make(chan struct{}),
		senders: map[string]*packetSender{},
	}
	m.mu.Lock()
	m.gossip = t
	m.mu.Unlock()
	t.wg.Add(1)
	go t.acceptStreams()
	return t, nil
}

func (t *GossipTransport) acceptStreams() {
	defer t.wg.Done()
	for {
		c, err := t.stream.Accept()
		if err != nil {
			return
		}
		select {
		case t.streamc <- c:
		case <-t.done:
			_ = c.Close()
			return
		}
	}
}

// FinalAdvertiseAddr is the bus address this node advertises, as an IP.
func (t *GossipTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	host, portStr, err := net.SplitHostPort(t.mux.cfg.Advertise)
	if err != nil {
		return nil, 0, fmt.Errorf("gossip advertise %q: %w", t.mux.cfg.Advertise, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, 0, fmt.Errorf("gossip advertise %q: %w", t.mux.cfg.Advertise, err)
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip, port, nil
	}
	// A pod's own DNS name (StatefulSet behind a headless Service) may
	// appear a few seconds after the container starts.
	deadline := time.Now().Add(advertiseResolveWait)
	for {
		ips, err := net.LookupIP(host)
		if err == nil && len(ips) > 0 {
			return ips[0], port, nil
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("gossip advertise %q: cannot resolve: %w", host, err)
		}
		time.Sleep(advertiseResolveRetry)
	}
}

// How long, and how often, a node retries resolving its own advertised
// host name at start.
const (
	advertiseResolveWait  = 30 * time.Second
	advertiseResolveRetry = 500 * time.Millisecond
)

// WriteTo queues packet b for addr; packets are best effort, as over UDP.
func (t *GossipTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if len(b) > maxGossipPacket {
		return time.Time{}, fmt.Errorf("gossip packet of %d bytes", len(b))
	}
	s := t.sender(addr)
	if s == nil {
		return time.Time{}, ErrClosed
	}
	select {
	case s.queue <- append([]byte(nil), b...):
	default: // a full queue drops, as a full socket buffer would
	}
	return time.Now(), nil
}

// PacketCh delivers received packets.
func (t *GossipTransport) PacketCh() <-chan *memberlist.Packet { return t.packetc }

// DialTimeout opens a gossip stream to addr.
func (t *GossipTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.mux.dial(addr, GossipStreamGroup, timeout)
}

// StreamCh delivers accepted gossip streams.
func (t *GossipTransport) StreamCh() <-chan net.Conn { return t.streamc }

// Shutdown stops the packet senders and the stream acceptor.
func (t *GossipTransport) Shutdown() error {
	t.once.Do(func() {
		close(t.done)
		_ = t.stream.Close()
		t.mu.Lock()
		for _, s := range t.senders {
			s.close()
		}
		t.mu.Unlock()
	})
	t.wg.Wait()
	return nil
}

// packetSender owns one connection to a destination and writes the queued
// packets on it, redialling after a failure.
type packetSender struct {
	t     *GossipTransport
	addr  string
	queue chan []byte
	stop  chan struct{}
	once  sync.Once
}

func (s *packetSender) close() { s.once.Do(func() { close(s.stop) }) }

func (t *GossipTransport) sender(addr string) *packetSender {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
		return nil
	default:
	}
	s := t.senders[addr]
	if s == nil {
		s = &packetSender{t: t, addr: addr, queue: make(chan []byte, 64), stop: make(chan struct{})}
		t.senders[addr] = s
		t.wg.Add(1)
		go s.run()
	}
	return s
}

func (s *packetSender) run() {
	defer s.t.wg.Done()
	var c *conn
	var w *bufio.Writer
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	for {
		var b []byte
		select {
		case b = <-s.queue:
		case <-s.stop:
			return
		}
		if c == nil {
			var err error
			if c, err = s.t.mux.dial(s.addr, GossipPacketGroup, time.Second); err != nil {
				c = nil
				continue // dropped, as a packet to an unreachable host is
			}
			w = bufio.NewWriter(c)
		}
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		if err := writePacket(w, b); err != nil {
			_ = c.Close()
			c = nil
		}
	}
}

func writePacket(w *bufio.Writer, b []byte) error {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(b)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

func readPacket(r *bufio.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxGossipPacket {
		return nil, errors.New("transport: gossip packet too large")
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// servePackets reads packet frames from an accepted connection.
func (m *Mux) servePackets(c *conn) {
	defer c.Close()
	m.mu.Lock()
	t := m.gossip
	m.mu.Unlock()
	if t == nil {
		return
	}
	from := c.RemoteAddr()
	r := bufio.NewReader(c)
	for {
		b, err := readPacket(r)
		if err != nil {
			return
		}
		select {
		case t.packetc <- &memberlist.Packet{Buf: b, From: from, Timestamp: time.Now()}:
		case <-t.done:
			return
		case <-m.done:
			return
		}
	}
}
