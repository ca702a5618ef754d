package transport

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Config configures a Mux.
type Config struct {
	Listener      net.Listener  // the bus listener (required); the Mux owns it from now on
	LocalID       string        // this node's id, sent in every header
	Advertise     string        // advertised bus address (defaults to Listener.Addr())
	Faults        *Faults       // optional fault injection (tests)
	Logger        *slog.Logger  // optional
	HeaderTimeout time.Duration // deadline for reading a header (default 5 s)
	Control       ControlFunc   // answers control queries (nil: every group unknown)
	Handler       RPCHandler    // answers node-to-node calls (nil: every call fails)
	// Secret, if set (at least MinSecretLen bytes), must be proven by both
	// ends of every bus connection before anything else, which then runs
	// encrypted (auth.go). Without it, anyone who reaches the port is a
	// member.
	Secret Secret
	// TLS, if set, is the operator's PKI for the bus (auth_pki.go): every
	// connection is TLS 1.3 between certificates of its CA that name the
	// nodes' ids. PeerID maps a dialled bus address to the node id
	// expected there ("" when unknown: any certificate of the CA).
	TLS    *BusTLS
	PeerID func(addr string) string
}

// ErrClosed is returned after the Mux or a Stream is closed.
var ErrClosed = errors.New("transport: closed")

// Mux multiplexes many Raft groups over one listener.
type Mux struct {
	cfg     Config
	log     *slog.Logger
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
	streams map[uint32]*Stream
	conns   map[net.Conn]struct{} // every live conn: handshaking, accepted, dialled
	rpcPool map[string][]*rpcConn // idle dialled rpc connections by address
	gossip  *GossipTransport      // set by Gossip

	auth     *authenticator // nil without a secret or bus TLS
	refusals *refusals
}

// New starts serving cfg.Listener.
func New(cfg Config) (*Mux, error) {
	if cfg.Listener == nil {
		return nil, errors.New("transport: no listener")
	}
	if len(cfg.LocalID) > maxIDLen {
		return nil, fmt.Errorf("transport: node id longer than %d bytes", maxIDLen)
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 5 * time.Second
	}
	if cfg.Advertise == "" {
		cfg.Advertise = cfg.Listener.Addr().String()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m := &Mux{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "bus"),
		done:     make(chan struct{}),
		streams:  make(map[uint32]*Stream),
		conns:    make(map[net.Conn]struct{}),
		refusals: newRefusals(),
	}
	auth, err := newAuthenticator(cfg.Secret, cfg.TLS, cfg.LocalID)
	if err != nil {
		return nil, err
	}
	m.auth = auth
	cfg.Faults.register(cfg.Listener.Addr().String(), cfg.LocalID)
	cfg.Faults.register(cfg.Advertise, cfg.LocalID)
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

// Addr is the bound bus address.
func (m *Mux) Addr() net.Addr { return m.cfg.Listener.Addr() }

// Conns is how many bus connections are open (handshaking, accepted or
// dialled): INFO's cluster_connections.
func (m *Mux) Conns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}

// Close stops accepting, closes every stream and connection, and waits for
// the Mux's goroutines.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.done)
	streams := make([]*Stream, 0, len(m.streams))
	for _, s := range m.streams {
		streams = append(streams, s)
	}
	m.mu.Unlock()
	err := m.cfg.Listener.Close()
	for _, s := range streams {
		_ = s.Close()
	}
	m.closeConns(func(net.Conn) bool { return true })
	m.wg.Wait()
	return err
}

func (m *Mux) closeConns(match func(net.Conn) bool) {
	m.mu.Lock()
	var victims []net.Conn
	for c := range m.conns {
		if match(c) {
			victims = append(victims, c)
		}
	}
	m.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
}

// track records c as live; false (and c is not tracked) once the Mux is closed.
func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.conns[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.conns, c)
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.cfg.Listener.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Warn("bus accept failed", "err", err, "retry_in", delay)
			select {
			case <-m.done:
				return
			case <-time.After(delay):
			}
			continue
		}
		delay = 0
		if !m.track(c) {
			_ = c.Close()
			return
		}
		m.wg.Add(1)
		go m.handshake(c)
	}
}

// handshake authenticates an accepted conn (with a secret or bus TLS),
// reads its header and routes it.
func (m *Mux) handshake(raw net.Conn) {
	defer m.wg.Done()
	_ = raw.SetDeadline(time.Now().Add(m.cfg.HeaderTimeout))
	sc, h, err := m.acceptHeader(raw)
	m.untrack(raw)
	if err != nil {
		m.dropAccepted(raw, err)
		return
	}
	_ = sc.SetDeadline(time.Time{})
	c, err := m.wrap(sc, h.from, h.group, true)
	if err != nil {
		return
	}
	switch h.group {
	case ControlGroup:
		m.serveControl(c)
		return
	case RPCGroup:
		m.serveRPC(c)
		return
	case GossipPacketGroup:
		m.servePackets(c)
		return
	}
	m.mu.Lock()
	s := m.streams[h.group]
	m.mu.Unlock()
	if s == nil {
		m.log.Debug("bus: connection for unknown group", "group", h.group, "from", h.from)
		m.refuse(c)
		return
	}
	select {
	case s.accept <- c:
	case <-s.done:
		m.refuse(c)
	case <-time.After(m.cfg.HeaderTimeout):
		m.log.Warn("bus: group not accepting connections", "group", h.group)
		m.refuse(c)
	}
}

// acceptHeader runs the secret's handshake and TLS, if configured, then
// reads the header (and, with a PKI, checks that the certificate names the
// node id it claims); it returns the connection the header came on.
func (m *Mux) acceptHeader(raw net.Conn) (net.Conn, header, error) {
	c := raw
	if m.auth != nil {
		var err error
		if c, err = m.auth.acceptSide(raw); err != nil {
			return nil, header{}, err
		}
	}
	h, err := readHeader(c)
	if err != nil {
		return nil, header{}, handshakeErr(err)
	}
	if tc, ok := c.(*tlsConn); ok {
		if err := m.auth.checkPeerID(tc, h.from); err != nil {
			return nil, header{}, err
		}
	}
	return c, h, nil
}

// dropAccepted closes an accepted connection whose handshake failed. A
// failure of the secret's handshake or TLS, or a peer with a secret or TLS
// knocking on a node without, is a refusal: counted and logged at WARN.
// Other bad headers (nothing configured here) stay at debug, as before.
//
// The refusal is counted before the connection is closed, so that a peer
// that sees the hang-up also sees the count.
func (m *Mux) dropAccepted(raw net.Conn, err error) {
	defer raw.Close()
	select {
	case <-m.done:
		return // closed under it by Close
	default:
	}
	if m.auth != nil || errors.Is(err, ErrNoLocalSecret) || errors.Is(err, ErrNoLocalTLS) {
		m.refusals.note(m.log, raw.RemoteAddr(), true, err)
		return
	}
	m.log.Debug("bus: dropping connection", "remote", raw.RemoteAddr().String(), "err", err)
}

// refuse closes a connection for a group no stream serves, saying so first
// (muxRefused): a raft transport dialler then knows the group is not here
// (yet), rather than taking the hang-up for an old node's. Its own write
// side is closed first and what the dialler sent is drained, so that the
// close sends no reset that could discard the byte before it is read.
func (m *Mux) refuse(c *conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(m.cfg.HeaderTimeout))
	if _, err := c.Write([]byte{muxRefused}); err != nil {
		return
	}
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
	}
}

// wrap turns raw into a tracked, fault-checked conn; on error raw is closed.
func (m *Mux) wrap(raw net.Conn, remote string, group uint32, inbound bool) (*conn, error) {
	c := &conn{Conn: raw, local: m.cfg.LocalID, remote: remote, group: group, faults: m.cfg.Faults,
		inbound: inbound, created: time.Now()}
	c.onClose = func(c *conn) { m.untrack(c) }
	if !m.track(c) {
		_ = raw.Close()
		return nil, ErrClosed
	}
	if !m.cfg.Faults.track(c) {
		_ = c.Close()
		return nil, ErrLinkCut
	}
	return c, nil
}

// dial opens a conn to addr for group and writes the header.
func (m *Mux) dial(addr string, group uint32, timeout time.Duration) (*conn, error) {
	select {
	case <-m.done:
		return nil, ErrClosed
	default:
	}
	remote := m.cfg.Faults.idOf(addr)
	if m.cfg.Faults.isCut(m.cfg.LocalID, remote) {
		return nil, fmt.Errorf("dial %s: %w", addr, ErrLinkCut)
	}
	hdr, err := header{group: group, from: m.cfg.LocalID}.encode()
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: timeout, LocalAddr: localDialAddr(m.cfg.Listener.Addr(), addr)}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if raw, err = m.secureDialled(raw, addr, timeout); err != nil {
		return nil, fmt.Errorf("bus handshake: %w", err)
	}
	c, err := m.wrap(raw, remote, group, false)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
	}
	if _, err := c.Write(hdr); err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// secureDialled runs the secret's handshake and TLS, if configured, on a
// dialled raw connection to addr, within timeout (the header timeout if
// none); the connection is tracked meanwhile so that Close interrupts it.
// On error raw is closed and the refusal counted and logged.
func (m *Mux) secureDialled(raw net.Conn, addr string, timeout time.Duration) (net.Conn, error) {
	if m.auth == nil {
		return raw, nil
	}
	if !m.track(raw) {
		_ = raw.Close()
		return nil, ErrClosed
	}
	defer m.untrack(raw)
	if timeout <= 0 {
		timeout = m.cfg.HeaderTimeout
	}
	_ = raw.SetDeadline(time.Now().Add(timeout))
	wantID := ""
	if m.cfg.PeerID != nil {
		wantID = m.cfg.PeerID(addr)
	}
	c, err := m.auth.dialSide(raw, wantID)
	if err != nil {
		_ = raw.Close()
		select {
		case <-m.done:
			return nil, ErrClosed
		default:
		}
		m.refusals.note(m.log, raw.RemoteAddr(), false, err)
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// Stream registers group and returns its raft.StreamLayer.
func (m *Mux) Stream(group uint32) (*Stream, error) {
	if group == ControlGroup || group >= GossipPacketGroup {
		return nil, fmt.Errorf("transport: group %d is reserved", group)
	}
	return m.stream(group)
}

func (m *Mux) stream(group uint32) (*Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if _, dup := m.streams[group]; dup {
		return nil, fmt.Errorf("transport: group %d already registered", group)
	}
	s := &Stream{mux: m, group: group, accept: make(chan net.Conn), done: make(chan struct{})}
	m.streams[group] = s
	return s, nil
}

// TransportOptions tunes the raft transport of one group.
type TransportOptions struct {
	Logger  hclog.Logger  // default: discard
	MaxPool int           // idle connections kept per peer for plain RPCs, default 3
	Timeout time.Duration // I/O deadline, default 10 s (scaled up for snapshots)
}

// Transport registers group and returns a raft transport over its stream.
func (m *Mux) Transport(group uint32, o TransportOptions) (*RaftTransport, error) {
	s, err := m.Stream(group)
	if err != nil {
		return nil, err
	}
	if o.MaxPool <= 0 {
		o.MaxPool = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return newRaftTransport(s, o), nil
}

// localDialAddr is the address a dial to target leaves from: the
// listener's IP when the listener is bound to one, so that traffic between
// nodes comes from each node's own address and a packet filter between
// node addresses (nodes on distinct loopback addresses of one host, as the
// chaos playground runs them) cuts all of it. nil (the system's choice)
// for a listener on every interface, and for a loopback listener dialling a
// literal address that is not loopback, which a loopback source cannot reach.
func localDialAddr(listen net.Addr, target string) *net.TCPAddr {
	la, ok := listen.(*net.TCPAddr)
	if !ok || la.IP == nil || la.IP.IsUnspecified() {
		return nil
	}
	if la.IP.IsLoopback() {
		host, _, err := net.SplitHostPort(target)
		if ip := net.ParseIP(host); err == nil && ip != nil && !ip.IsLoopback() {
			return nil
		}
	}
	return &net.TCPAddr{IP: la.IP, Zone: la.Zone}
}
