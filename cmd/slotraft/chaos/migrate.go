package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/slotraft/slotraft/slots"
)

// migrateWait bounds how long the heal of a slot move waits for it to end.
const migrateWait = 90 * time.Second

// maxMove is the most slots one migrate fault moves.
const maxMove = 200

// migrateFault moves a range of slots from one slot group to another with
// SLOTRAFT MOVE-SLOTS while the workloads run: in two faults of three the
// range holds a workload key's slot, so clients must follow ASK while the
// keys move and MOVED once the owner flips. Heal waits until the target
// group owns every moved slot. Nothing moves them back: a later migrate
// fault moves what the groups own then.
type migrateFault struct{}

func (migrateFault) Kind() string { return "migrate" }

// topoWait bounds how long a slot move waits for the members to report
// two groups: just after every node restarted, their maps are still
// loading and STATUS shows fewer.
const topoWait = 10 * time.Second

// waitMove asks the topology until a move can be chosen, or topoWait ends.
func waitMove(ctx context.Context, e *env, pick uint64) (slotMove, error) {
	deadline := time.Now().Add(topoWait)
	for {
		groups, err := e.topo.shards(ctx)
		if err == nil {
			if mv, ok := chooseMove(pick, groups, e.keySlots); ok {
				return mv, nil
			}
			err = fmt.Errorf("migrate: needs two slot groups, the members report %d", len(groups))
		}
		if time.Now().After(deadline) {
			return slotMove{}, err
		}
		select {
		case <-ctx.Done():
			return slotMove{}, ctx.Err()
		case <-time.After(250 * time.Millisecond): // ask again: the maps load
		}
	}
}

func (migrateFault) Inject(ctx context.Context, e *env, pick uint64) (Injected, error) {
	mv, err := waitMove(ctx, e, pick)
	if err != nil {
		return Injected{}, err
	}
	live := e.procs.live()
	if len(live) == 0 {
		return Injected{}, errors.New("migrate: no running node")
	}
	asker := live[pick%uint64(len(live))]
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	n, err := e.topo.client(asker.idx).Do(c, "SLOTRAFT", "MOVE-SLOTS", mv.to, mv.slots.String()).Int()
	cancel()
	if err != nil {
		return Injected{}, fmt.Errorf("SLOTRAFT MOVE-SLOTS %d %s on %s: %w", mv.to, mv.slots, asker.id, err)
	}
	desc := fmt.Sprintf("move slots %s (%d, %d of them with workload keys) from group %d to group %d: %d migrations recorded (via %s)",
		mv.slots, mv.slots.Len(), mv.keyed, mv.from, mv.to, n, asker.id)
	begin := time.Now()
	return Injected{
		Desc:    desc,
		Targets: []string{"group" + strconv.Itoa(int(mv.from)), "group" + strconv.Itoa(int(mv.to))},
		Heal: func(ctx context.Context) (string, error) {
			if err := waitOwned(ctx, e, mv.to, mv.slots); err != nil {
				return "", err
			}
			return fmt.Sprintf(" (all moved %.1fs after the command)", time.Since(begin).Seconds()), nil
		},
	}, nil
}

// slotMove is one migrate fault's choice.
type slotMove struct {
	from, to uint32
	slots    slots.Range // all owned by from when chosen
	keyed    int         // how many workload keys live in those slots
}

// chooseMove picks, from pick alone given the groups and the workload keys'
// slots, the source group (one owning slots), the target (any other
// group), and a range of up to maxMove of the source's slots: in two
// picks of three around a key slot of the source, if it has one.
func chooseMove(pick uint64, groups []shard, keySlots []uint16) (slotMove, bool) {
	var sources []shard
	for _, g := range groups {
		if len(g.ranges) > 0 {
			sources = append(sources, g)
		}
	}
	if len(groups) < 2 || len(sources) == 0 {
		return slotMove{}, false
	}
	rng := rand.New(rand.NewPCG(pick, 0x6d6f7665))
	src := sources[rng.IntN(len(sources))]
	others := slices.DeleteFunc(slices.Clone(groups), func(g shard) bool { return g.id == src.id })
	dst := others[rng.IntN(len(others))]
	owned := slots.NewSet(src.ranges...)
	keyed := slices.DeleteFunc(slices.Clone(keySlots), func(s uint16) bool { return !owned.Has(s) })
	var centre uint16
	if len(keyed) > 0 && rng.IntN(3) != 0 {
		centre = keyed[rng.IntN(len(keyed))]
	} else {
		all := owned.Ranges()
		r := all[rng.IntN(len(all))]
		centre = r.Start + uint16(rng.IntN(r.Len()))
	}
	within := src.ranges[slices.IndexFunc(src.ranges, func(r slots.Range) bool { return r.Contains(centre) })]
	size := 1 + rng.IntN(maxMove)
	start := max(int(within.Start), int(centre)-rng.IntN(size))
	end := min(int(within.End), start+size-1)
	mv := slotMove{from: src.id, to: dst.id, slots: slots.Range{Start: uint16(start), End: uint16(end)}}
	for _, s := range keySlots {
		if mv.slots.Contains(s) {
			mv.keyed++
		}
	}
	return mv, true
}

// waitOwned waits, up to migrateWait, until the newest map the running
// nodes report gives every slot of r to group to.
func waitOwned(ctx context.Context, e *env, to uint32, r slots.Range) error {
	err := poll(ctx, migrateWait, func(ctx context.Context) error {
		groups, err := e.topo.shards(ctx)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(groups, func(g shard) bool { return g.id == to }); i >= 0 && ownsAll(groups[i], r) {
			return nil
		}
		return fmt.Errorf("group %d does not own all of %s yet", to, r)
	})
	if err != nil {
		return fmt.Errorf("slots %s not moved to group %d within %v: %w", r, to, migrateWait, err)
	}
	return nil
}

// poll calls try every 200 ms until it succeeds or wait has passed; then
// it returns try's last error.
func poll(ctx context.Context, wait time.Duration, try func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := try(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// ownsAll reports whether g owns every slot of r.
func ownsAll(g shard, r slots.Range) bool {
	owned := slots.NewSet(g.ranges...)
	for s := int(r.Start); s <= int(r.End); s++ {
		if !owned.Has(uint16(s)) {
			return false
		}
	}
	return true
}
