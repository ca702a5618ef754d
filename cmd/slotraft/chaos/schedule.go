package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// The schedule is computed from the seed before the run starts: when each
// fault begins, which kind, how long it holds, and the random number it
// makes its choices from. One fault is in effect at a time, with a quiet
// gap (everything healed) before the next.
const (
	warmUp  = 3 * time.Second // workloads run alone this long first
	quietLo = 2 * time.Second
	quietHi = 5 * time.Second
	holdLo  = 3 * time.Second
	holdHi  = 7 * time.Second
	// A power loss holds shorter: the nodes are down, not degraded.
	restartHoldLo = time.Second
	restartHoldHi = 3 * time.Second
)

// step is one fault of the schedule.
type step struct {
	At   time.Duration `json:"at"` // since the workloads started
	Kind string        `json:"kind"`
	Hold time.Duration `json:"hold"`
	Pick uint64        `json:"pick"`
}

// makeSchedule lays out faults of the given kinds over d: first every kind
// once, in a shuffled order (so a run long enough injects each kind it was
// asked for), then kinds at random.
func makeSchedule(seed uint64, kinds []string, d time.Duration) []step {
	if len(kinds) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65736973))
	first := rng.Perm(len(kinds))
	var plan []step
	at := warmUp
	for {
		k := kinds[rng.IntN(len(kinds))]
		if len(plan) < len(first) {
			k = kinds[first[len(plan)]]
		}
		s := step{At: at, Kind: k, Pick: rng.Uint64()}
		lo, hi := holdLo, holdHi
		if s.Kind == "restart-all" {
			lo, hi = restartHoldLo, restartHoldHi
		}
		s.Hold = between(rng, lo, hi)
		if s.At+s.Hold > d {
			return plan
		}
		plan = append(plan, s)
		at = s.At + s.Hold + between(rng, quietLo, quietHi)
	}
}

// between is a duration in [lo, hi), in whole milliseconds.
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	ms := int64((hi - lo) / time.Millisecond)
	return lo + time.Duration(rng.Int64N(ms))*time.Millisecond
}

// nemesis runs the schedule against env, recording every fault in h.
type nemesis struct {
	env    *env
	h      *history
	faults map[string]Fault
	say    func(format string, args ...any)
	// acts serialises an injection or a healing with the dashboard's
	// actions (ui.go), which must not hit a node the nemesis is hitting.
	acts *sync.Mutex
}

// run executes plan from begin until it is done or ctx ends; a fault in
// effect when ctx ends is healed. A fault that cannot be injected is
// recorded and skipped; one that cannot be healed ends the run with its
// error, since the cluster is then not in the state the run believes.
func (nm *nemesis) run(ctx context.Context, begin time.Time, plan []step) error {
	for _, s := range plan {
		if !waitUntil(ctx, begin.Add(s.At)) {
			return nil
		}
		nm.acts.Lock()
		t0 := nm.h.now()
		inj, err := nm.faults[s.Kind].Inject(ctx, nm.env, s.Pick)
		if err != nil {
			i := nm.h.begin(Event{Kind: s.Kind, Desc: "not injected"})
			nm.h.end(i, "", err)
			nm.acts.Unlock()
			nm.say("fault %s not injected: %v", s.Kind, err)
			continue
		}
		i := nm.h.beginAt(Event{Kind: s.Kind, Desc: inj.Desc, Targets: inj.Targets}, t0)
		nm.acts.Unlock()
		nm.say("fault: %s", inj.Desc)
		waitUntil(ctx, time.Now().Add(s.Hold))
		nm.acts.Lock()
		extra, err := inj.Heal(context.WithoutCancel(ctx))
		nm.h.end(i, inj.Desc+extra, err)
		nm.acts.Unlock()
		if err != nil {
			return fmt.Errorf("heal %s (%s): %w", s.Kind, inj.Desc, err)
		}
		nm.say("healed: %s%s", inj.Desc, extra)
	}
	return nil
}

// waitUntil waits for t; false if ctx ended first.
func waitUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
