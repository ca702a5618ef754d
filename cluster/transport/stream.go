package transport

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Stream is one group's raft.StreamLayer on a shared Mux.
type Stream struct {
	mux    *Mux
	group  uint32
	accept chan net.Conn
	done   chan struct{}
	once   sync.Once
}

var _ raft.StreamLayer = (*Stream)(nil)

// Accept waits for the next connection routed to this group.
func (s *Stream) Accept() (net.Conn, error) {
	select {
	case c := <-s.accept:
		return c, nil
	case <-s.done:
		return nil, ErrClosed
	}
}

// Close unregisters the group and closes all its connections.
func (s *Stream) Close() error {
	s.once.Do(func() {
		close(s.done)
		m := s.mux
		m.mu.Lock()
		if m.streams[s.group] == s {
			delete(m.streams, s.group)
		}
		m.mu.Unlock()
		m.closeConns(func(c net.Conn) bool {
			bc, ok := c.(*conn)
			return ok && bc.group == s.group
		})
	})
	return nil
}

// Addr is the advertised bus address.
func (s *Stream) Addr() net.Addr { return advertised(s.mux.cfg.Advertise) }

// Dial connects to a peer's bus for this group.
func (s *Stream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	select {
	case <-s.done:
		return nil, ErrClosed
	default:
	}
	c, err := s.mux.dial(string(address), s.group, timeout)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// advertised is a net.Addr for an advertised host:port (maybe a hostname).
type advertised string

func (a advertised) Network() string { return "tcp" }
func (a advertised) String() string  { return string(a) }
