package server

import (
	"strconv"

	"github.com/slotraft/slotraft/cluster"
)

// hz, dynamic-hz and active-expire-effort drive the node's active expiry
// (cluster/expiry_config.go): its cycles run hz times a second, and with
// dynamic-hz the rate doubles, up to 500, while there are more than 200
// clients per tick, as Redis's serverCron does.

// maxClientsPerTick is Redis's MAX_CLIENTS_PER_CLOCK_TICK.
const maxClientsPerTick = 200

// hzParam is hz: any value from 0 is accepted and capped to 1..500, and
// CONFIG GET shows the capped value (Redis's updateHZ).
func hzParam() *configParam {
	spec := plain(0, intMax)
	p := numParam("hz", noAlias, mutable, spec, cluster.DefaultHz)
	p.parse = func(_, v string) (configValue, error) {
		x, err := spec.parse(v)
		if err != nil {
			return x, err
		}
		x.num = min(max(x.num, cluster.MinHz), cluster.MaxHz)
		x.text = strconv.FormatInt(x.num, 10)
		return x, nil
	}
	return p
}

// effectiveHz is the rate the cycles run at: hz, doubled while the
// clients per tick exceed maxClientsPerTick when dynamic-hz is on.
func effectiveHz(hz int, dynamic bool, clients int) int {
	if !dynamic {
		return hz
	}
	for hz < cluster.MaxHz && clients/hz > maxClientsPerTick {
		hz = min(hz*2, cluster.MaxHz)
	}
	return hz
}

// refreshExpiry hands the node the expiry setting of the CONFIG values
// and the number of connected clients.
func (s *Server) refreshExpiry() {
	hz, _ := strconv.Atoi(s.configValue("hz"))
	effort, _ := strconv.Atoi(s.configValue("active-expire-effort"))
	s.mu.Lock()
	clients := len(s.clients)
	s.mu.Unlock()
	c := cluster.ExpiryConfig{Hz: effectiveHz(hz, s.configValue("dynamic-hz") == "yes", clients), Effort: effort}
	if c != s.n.Expiry() {
		s.n.SetExpiry(c)
	}
}
