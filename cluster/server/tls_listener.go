package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// The TLS listener: tls-port beside the plain client port, as Redis
// allows. Its configuration is swapped whole when a tls-* parameter
// changes (CONFIG SET re-reads the certificate files, so a renewed
// certificate is taken without a restart); connections already open keep
// the session they negotiated.

// tlsHandshakeTimeout bounds a client's TLS handshake: one that never
// finishes cannot hold a goroutine.
const tlsHandshakeTimeout = 10 * time.Second

// errTLSListen is CONFIG SET's text when tls-port cannot be listened on.
var errTLSListen = resp.NewError("Unable to listen on this port. Check server logs.")

type tlsServer struct {
	cfg  atomic.Pointer[tls.Config] // what new connections negotiate with
	mu   sync.Mutex
	port int          // the tls-port asked for; 0: no TLS listener
	ln   net.Listener // listening on port, nil before Serve or with port 0
	done chan struct{}
	// handshaking are the connections still in their handshake, closed by
	// Close.
	handshaking map[net.Conn]struct{}
	wg          sync.WaitGroup
}

// tlsBehaviour is what the tls-* parameters do (applyTLS).
var tlsBehaviour = &sharedBehaviour{run: applyTLS}

// applyTLS is the tls-* parameters' joint behaviour, run once per CONFIG
// SET (or config file) after all its values are stored: it builds the
// configuration from every tls-* value and listens on tls-port.
func applyTLS(s *Server, val func(string) string) error {
	port, _ := strconv.Atoi(val("tls-port"))
	t := tlsSettings{certFile: val("tls-cert-file"), keyFile: val("tls-key-file"), keyPass: val("tls-key-file-pass"),
		caFile: val("tls-ca-cert-file"), caDir: val("tls-ca-cert-dir"), authClients: val("tls-auth-clients"),
		protocols: val("tls-protocols"), ciphers: val("tls-ciphers"), ciphersuites: val("tls-ciphersuites"),
		sessionCaching: val("tls-session-caching") == "yes"}
	return s.tlsSrv.reconfigure(s, port, t)
}

func (ts *tlsServer) reconfigure(s *Server, port int, t tlsSettings) error {
	var cfg *tls.Config
	if port != 0 {
		var err error
		if cfg, err = t.build(); err != nil {
			s.log.Warn("TLS configuration refused", "err", err)
			return errTLSConfig
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if port != ts.port || port == 0 {
		if err := ts.relisten(s, port); err != nil {
			return err
		}
	}
	ts.port = port
	ts.cfg.Store(cfg)
	ts.announce(s)
	return nil
}

// announce tells the other nodes the TLS port this node serves, once it
// listens (0 while it does not). The caller holds mu.
func (ts *tlsServer) announce(s *Server) {
	port := 0
	if ts.ln != nil {
		port = ts.ln.Addr().(*net.TCPAddr).Port
	}
	s.n.SetTLSPort(port)
}

// relisten closes the TLS listener and, for a port, opens one on the
// plain listener's host; before Serve there is no host yet, and Serve
// listens (startTLS). The caller holds mu.
func (ts *tlsServer) relisten(s *Server, port int) error {
	s.mu.Lock()
	plain := s.ln
	s.mu.Unlock()
	if plain == nil {
		ts.port = port
		return nil
	}
	ts.stopLocked()
	if port == 0 {
		return nil
	}
	host, _, _ := net.SplitHostPort(plain.Addr().String())
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		s.log.Warn("TLS listener", "port", port, "err", err)
		return errTLSListen
	}
	ts.serve(s, ln)
	return nil
}

// startTLS opens the TLS listener Serve's plain listener makes possible,
// when a config file asked for one.
func (s *Server) startTLS() error {
	ts := &s.tlsSrv
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.port == 0 || ts.ln != nil {
		return nil
	}
	port := ts.port
	if err := ts.relisten(s, port); err != nil {
		return fmt.Errorf("tls-port %d: %w", port, err)
	}
	ts.announce(s)
	return nil
}

// serve accepts TLS clients on ln until it is closed. The caller holds mu.
func (ts *tlsServer) serve(s *Server, ln net.Listener) {
	ts.ln, ts.done = ln, make(chan struct{})
	if ts.handshaking == nil {
		ts.handshaking = map[net.Conn]struct{}{}
	}
	tlsLn := tls.NewListener(ln, &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		if cfg := ts.cfg.Load(); cfg != nil {
			return cfg, nil
		}
		return nil, errors.New("TLS is not configured")
	}})
	done := ts.done
	go func() {
		defer close(done)
		for {
			nc, err := tlsLn.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					s.log.Warn("TLS accept", "err", err)
				}
				return
			}
			ts.wg.Add(1)
			go ts.handshake(s, nc.(*tls.Conn))
		}
	}()
}

// handshake completes a client's handshake within tlsHandshakeTimeout,
// then serves it as any client.
func (ts *tlsServer) handshake(s *Server, tc *tls.Conn) {
	ts.mu.Lock()
	ts.handshaking[tc] = struct{}{}
	ts.mu.Unlock()
	_ = tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	err := tc.Handshake()
	_ = tc.SetDeadline(time.Time{})
	ts.mu.Lock()
	delete(ts.handshaking, tc)
	ts.mu.Unlock()
	ts.wg.Done()
	if err != nil {
		s.log.Debug("TLS handshake failed", "remote", tc.RemoteAddr().String(), "err", err)
		_ = tc.Close()
		return
	}
	if c := s.accept(tc); c != nil {
		s.serveConn(c)
	}
}

// stopLocked closes the listener and the handshakes in progress and waits
// for the accept loop. The caller holds mu.
func (ts *tlsServer) stopLocked() {
	if ts.ln == nil {
		return
	}
	_ = ts.ln.Close()
	<-ts.done
	ts.ln = nil
	for c := range ts.handshaking {
		_ = c.Close()
	}
}

// close stops TLS for good (Server.Close) and waits for the handshakes.
func (ts *tlsServer) close() {
	ts.mu.Lock()
	ts.stopLocked() // no announcement: the node is closing too
	ts.port = 0
	ts.mu.Unlock()
	ts.wg.Wait()
}

// listenerInfo is INFO's listener line of the TLS port, "" without one.
func (ts *tlsServer) listenerInfo() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.ln == nil {
		return ""
	}
	return "name=tls," + bindAndPort(ts.ln.Addr())
}

// clientAddr is where client c reaches node p: its TLS address (p's host,
// the TLS port p announces) for a client on TLS, as Redis 7.2 answers a
// TLS client with TLS ports, else p's client address.
func (s *Server) clientAddr(c *client, p cluster.Peer) string {
	if c == nil || !c.onTLS {
		return p.ClientAddr
	}
	if port := s.n.TLSPort(p.ID); port > 0 {
		if host, _, err := net.SplitHostPort(p.ClientAddr); err == nil {
			return net.JoinHostPort(host, strconv.Itoa(port))
		}
	}
	return p.ClientAddr
}
