package transport

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// refusals counts failed bus handshakes and logs them at WARN, at most one
// line per remote host, direction and reason per refusalLogEvery: a port
// scan or a misconfigured node retrying every second must not flood the
// log, nor hide another problem of the same host (a second node behind one
// address, refused for another reason). The lines say how many refusals
// they stand for.
type refusals struct {
	count atomic.Uint64
	now   func() time.Time // time.Now; tests step a clock

	mu    sync.Mutex
	hosts map[string]*refusalHost
}

type refusalHost struct {
	logged     time.Time // when the last line for this host was written
	suppressed int       // refusals since, not logged
}

const (
	refusalLogEvery = 10 * time.Second
	// refusalHostsMax bounds the hosts remembered; past it, hosts not
	// logged recently are forgotten, and if all were, new hosts go
	// unlogged (still counted) until some are.
	refusalHostsMax = 1024
)

func newRefusals() *refusals {
	return &refusals{now: time.Now, hosts: map[string]*refusalHost{}}
}

// note counts a refused handshake with remote and logs it unless this host
// was logged less than refusalLogEvery ago.
func (r *refusals) note(log *slog.Logger, remote net.Addr, inbound bool, err error) {
	r.count.Add(1)
	addr := remote.String()
	host, _, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		host = addr
	}
	dir := "inbound"
	if !inbound {
		dir = "outbound"
	}
	reason := refusalReason(err)
	suppressed, ok := r.mayLog(dir + " " + host + " " + reason)
	if !ok {
		return
	}
	log.Warn("bus handshake refused", "remote", addr, "direction", dir, "reason", reason,
		"err", err, "suppressed_since_last", suppressed)
}

// mayLog says whether host may be logged now, and how many of its
// refusals went unlogged since its last line.
func (r *refusals) mayLog(host string) (int, bool) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hosts[host]
	if h == nil {
		if len(r.hosts) >= refusalHostsMax {
			r.forget(now)
		}
		if len(r.hosts) >= refusalHostsMax {
			return 0, false
		}
		h = &refusalHost{}
		r.hosts[host] = h
	} else if now.Sub(h.logged) < refusalLogEvery {
		h.suppressed++
		return 0, false
	}
	n := h.suppressed
	h.logged, h.suppressed = now, 0
	return n, true
}

// forget drops the hosts whose last line is old enough to log again.
func (r *refusals) forget(now time.Time) {
	for k, h := range r.hosts {
		if now.Sub(h.logged) >= refusalLogEvery {
			delete(r.hosts, k)
		}
	}
}

// refusalReason is a short, stable word for why a handshake failed.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrBadProof):
		return "bad proof"
	case errors.Is(err, ErrPinMismatch):
		return "tls key not the proven one"
	case errors.Is(err, ErrCertUntrusted):
		return "certificate not trusted"
	case errors.Is(err, ErrCertID):
		return "node id not in certificate"
	case errors.Is(err, ErrPeerRefusedTLS):
		return "peer refused our certificate"
	case errors.Is(err, ErrPeerHasNoSecret):
		return "peer has no secret"
	case errors.Is(err, ErrNoLocalSecret):
		return "this node has no secret"
	case errors.Is(err, ErrNoLocalTLS):
		return "this node has no bus TLS"
	case errors.Is(err, ErrHandshakeTimeout):
		return "timeout"
	case errors.Is(err, ErrNotHandshake), errors.Is(err, ErrHandshakeVersion):
		return "no handshake"
	case errors.Is(err, ErrHandshakeHangUp):
		return "hang-up"
	}
	return "error"
}

// AuthFailures is how many bus handshakes failed, both ways (accepted
// connections refused, and dials whose peer failed or refused the
// handshake), since the Mux started: for a metric.
func (m *Mux) AuthFailures() uint64 { return m.refusals.count.Load() }
