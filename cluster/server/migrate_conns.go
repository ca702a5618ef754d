package server

import (
	"bufio"
	"context"
	"net"
	"sync"
	"time"
)

// MIGRATE's connections to its targets are kept for reuse, as Redis's
// migrate_cached_sockets: at most migrateMaxConns targets, each closed
// after migrateConnIdle unused; a connection remembers the database it
// selected, so SELECT is sent only when the next MIGRATE wants another.
// A connection that failed is closed, never kept. One MIGRATE uses a
// connection at a time: it takes it out of the cache and puts it back.

const (
	migrateConnIdle = 10 * time.Second // Redis's MIGRATE_SOCKET_CACHE_TTL
	migrateMaxConns = 64               // Redis's MIGRATE_SOCKET_CACHE_ITEMS
)

// migrateConn is one open connection to a target.
type migrateConn struct {
	nc   net.Conn
	br   *bufio.Reader
	db   int64 // the database selected on it (a new connection starts on 0)
	used time.Time
}

// migrateConns is the cache, by "host:port".
type migrateConns struct {
	mu     sync.Mutex
	idle   map[string]*migrateConn
	closed bool // the server closed: nothing is kept any more
}

// take returns the cached connection to addr, or dials a new one.
func (m *migrateConns) take(ctx context.Context, addr string, timeout time.Duration) (*migrateConn, error) {
	m.mu.Lock()
	c := m.idle[addr]
	delete(m.idle, addr)
	m.mu.Unlock()
	if c != nil {
		return c, nil
	}
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &migrateConn{nc: nc, br: bufio.NewReaderSize(nc, migrateMaxLine)}, nil
}

// put keeps c for addr; a connection already kept for addr (another
// MIGRATE's meanwhile) or one over the cache's size is closed instead.
func (m *migrateConns) put(addr string, c *migrateConn, now time.Time) {
	c.used = now
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.idle == nil {
		m.idle = map[string]*migrateConn{}
	}
	if _, dup := m.idle[addr]; dup || m.closed || len(m.idle) >= migrateMaxConns {
		_ = c.nc.Close()
		return
	}
	m.idle[addr] = c
}

// closeIdle closes the connections unused for migrateConnIdle at now.
func (m *migrateConns) closeIdle(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for addr, c := range m.idle {
		if now.Sub(c.used) >= migrateConnIdle {
			_ = c.nc.Close()
			delete(m.idle, addr)
		}
	}
}

// cached is the number of connections kept (INFO's migrate_cached_sockets).
func (m *migrateConns) cached() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.idle)
}

// closeAll closes every kept connection (the server closes).
func (m *migrateConns) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for addr, c := range m.idle {
		_ = c.nc.Close()
		delete(m.idle, addr)
	}
}
