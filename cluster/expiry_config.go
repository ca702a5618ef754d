package cluster

import "time"

// How often and how hard active expiry runs: Redis's hz (the rate of its
// serverCron, which runs the slow expire cycle) and active-expire-effort
// (1-10), mapped onto slotraft's cycle of proposed batches.

const (
	// MinHz and MaxHz are Redis's CONFIG_MIN_HZ and CONFIG_MAX_HZ: hz is
	// a hint, capped to them.
	MinHz = 1
	MaxHz = 500
	// DefaultHz is Redis's CONFIG_DEFAULT_HZ.
	DefaultHz = 10

	expireBatchBase  = 200 // keys per proposed batch at effort 1
	expireRoundsBase = 4   // batches per cycle at effort 1
	// expireSlowPerc is Redis's ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC: the
	// share of a cycle's period it may take at effort 1.
	expireSlowPerc = 25
)

// ExpiryConfig is how active expiry runs in the groups led here.
type ExpiryConfig struct {
	Hz     int // cycles per second, capped to MinHz..MaxHz
	Effort int // active-expire-effort, 1..10
}

// DefaultExpiry is Redis's defaults: hz 10, effort 1.
var DefaultExpiry = ExpiryConfig{Hz: DefaultHz, Effort: 1}

func (c ExpiryConfig) effort() int { return min(max(c.Effort, 1), 10) - 1 }

// period is the time between two cycles.
func (c ExpiryConfig) period() time.Duration {
	return time.Second / time.Duration(min(max(c.Hz, MinHz), MaxHz))
}

// batch grows with the effort as Redis's keys per loop do (20 + 20/4 per
// step of effort above 1).
func (c ExpiryConfig) batch() int { return expireBatchBase + expireBatchBase/4*c.effort() }

// rounds is how many full batches one cycle may propose.
func (c ExpiryConfig) rounds() int { return expireRoundsBase + c.effort() }

// budget is the time one cycle may take: Redis's slow cycle's share of
// its period (25% + 2% per step of effort).
func (c ExpiryConfig) budget() time.Duration {
	return c.period() * time.Duration(expireSlowPerc+2*c.effort()) / 100
}

// SetExpiry sets how active expiry runs in the groups led here; the next
// cycle of each group uses it.
func (n *Node) SetExpiry(c ExpiryConfig) { n.expiryCfg.Store(&c) }

// Expiry is this node's active expiry setting.
func (n *Node) Expiry() ExpiryConfig {
	if c := n.expiryCfg.Load(); c != nil {
		return *c
	}
	return DefaultExpiry
}
