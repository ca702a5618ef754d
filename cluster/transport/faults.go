package transport

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrLinkCut is returned by dials and I/O on a link cut by Faults.
var ErrLinkCut = errors.New("transport: link cut by fault injection")

type link struct{ from, to string }

// Faults injects network faults between in-process nodes (tests). Nodes
// sharing one *Faults are named by their node ids. The zero value is not
// usable; call NewFaults. A nil *Faults injects nothing.
type Faults struct {
	mu    sync.Mutex
	cut   map[link]bool
	delay map[link]time.Duration
	ids   map[string]string // bus address -> node id
	conns map[*conn]struct{}
}

// NewFaults returns a Faults with every link healthy.
func NewFaults() *Faults {
	return &Faults{
		cut:   make(map[link]bool),
		delay: make(map[link]time.Duration),
		ids:   make(map[string]string),
		conns: make(map[*conn]struct{}),
	}
}

// Cut stops delivery from node from to node to: new dials fail, and
// connections between the two are closed (a connection carries both
// requests and replies, so it cannot survive a one-way cut).
func (f *Faults) Cut(from, to string) {
	f.mu.Lock()
	f.cut[link{from, to}] = true
	var victims []*conn
	for c := range f.conns {
		if (c.local == from && c.remote == to) || (c.local == to && c.remote == from) {
			victims = append(victims, c)
		}
	}
	f.mu.Unlock()
	for _, c := range victims {
		_ = c.Close()
	}
}

// Partition cuts both directions between a and b.
func (f *Faults) Partition(a, b string) {
	f.Cut(a, b)
	f.Cut(b, a)
}

// Isolate cuts node id off from every other node known to f.
func (f *Faults) Isolate(id string) {
	for _, other := range f.nodes() {
		if other != id {
			f.Partition(id, other)
		}
	}
}

// Heal restores delivery from node from to node to.
func (f *Faults) Heal(from, to string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cut, link{from, to})
}

// HealAll removes every cut and delay.
func (f *Faults) HealAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cut)
	clear(f.delay)
}

// Delay holds every write from node from to node to for d (0 removes it).
func (f *Faults) Delay(from, to string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d <= 0 {
		delete(f.delay, link{from, to})
		return
	}
	f.delay[link{from, to}] = d
}

func (f *Faults) nodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := make(map[string]bool)
	var ids []string
	for _, id := range f.ids {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// register records that node id listens on addr.
func (f *Faults) register(addr, id string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids[addr] = id
}

// idOf maps a bus address to a node id (the address itself if unknown).
func (f *Faults) idOf(addr string) string {
	if f == nil {
		return addr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if id, ok := f.ids[addr]; ok {
		return id
	}
	return addr
}

func (f *Faults) isCut(from, to string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cut[link{from, to}]
}

func (f *Faults) delayOf(from, to string) time.Duration {
	if f == nil {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delay[link{from, to}]
}

// track adds c to the live connections; false if its link is already cut,
// in which case the caller must close it.
func (f *Faults) track(c *conn) bool {
	if f == nil {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut[link{c.local, c.remote}] || f.cut[link{c.remote, c.local}] {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Faults) untrack(c *conn) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.conns, c)
}

// conn is a bus connection: it knows both ends' node ids and its group,
// applies Faults on every read and write, and is tracked so the Mux (and
// Faults) can close it.
type conn struct {
	net.Conn
	local, remote string
	group         uint32
	faults        *Faults
	onClose       func(*conn)
	once          sync.Once
	inbound       bool      // accepted, not dialled (Links)
	created       time.Time // when it was set up (Links)
}

func (c *conn) Write(b []byte) (int, error) {
	if c.faults != nil {
		if c.faults.isCut(c.local, c.remote) {
			_ = c.Close()
			return 0, ErrLinkCut
		}
		if d := c.faults.delayOf(c.local, c.remote); d > 0 {
			time.Sleep(d)
		}
	}
	return c.Conn.Write(b)
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && c.faults.isCut(c.remote, c.local) {
		_ = c.Close()
		return 0, ErrLinkCut
	}
	return n, err
}

func (c *conn) Close() error {
	var err error
	c.once.Do(func() {
		err = c.Conn.Close()
		c.faults.untrack(c)
		if c.onClose != nil {
			c.onClose(c)
		}
	})
	return err
}
