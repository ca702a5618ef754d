package transport

import "time"

// Link is one live bus connection, as CLUSTER LINKS reports the links
// between nodes.
type Link struct {
	// Remote is the other end: its node id for an accepted connection (from
	// its header), the address dialled for one this node opened (mapped to
	// an id by whoever knows the cluster's addresses).
	Remote  string
	Inbound bool
	Group   uint32
	Created time.Time
}

// Links lists the live connections that finished their handshake.
func (m *Mux) Links() []Link {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Link
	for nc := range m.conns {
		if c, ok := nc.(*conn); ok {
			out = append(out, Link{Remote: c.remote, Inbound: c.inbound, Group: c.group, Created: c.created})
		}
	}
	return out
}
