package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The snapshot phase of `slotraft bench reshard` (issue #16): between the
// baseline and the move, every node is sent SAVE at once, so every
// replica of every group writes a Raft snapshot of all the loaded keys
// while the client goes on; the client's latency in that window against
// the baseline's shows what writing a snapshot costs the clients.

// saveAll sends SAVE to every node at once and waits for all replies.
func (res *reshardResult) saveAll(ctx context.Context, stderr io.Writer) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(stderr, "bench reshard: SAVE on %d nodes (a Raft snapshot of every group)\n", len(res.nodes))
	errs := make([]error, len(res.nodes))
	var wg sync.WaitGroup
	for i, addr := range res.nodes {
		wg.Go(func() {
			rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: reshardAdminTimeout,
				MaxRetries: -1, DisableIdentity: true, Protocol: 2})
			defer rdb.Close()
			if err := rdb.Do(ctx, "SAVE").Err(); err != nil {
				errs[i] = fmt.Errorf("SAVE on %s: %w", addr, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// writeSnapshot reports the client's latency while the snapshots were
// written, against the baseline.
func (res *reshardResult) writeSnapshot(w io.Writer) {
	if res.snap.count == 0 {
		return
	}
	fmt.Fprintf(w, "snapshot: SAVE on every node took %.2fs\n", res.snapTime.Seconds())
	writeSummary(w, false, "snapshot", res.snap)
	writeSummary(w, false, "snapshot/sent", res.snapSent)
	fmt.Fprintf(w, "p99 snapshot/before: %s (/sent %s)\n",
		ratio(res.snap.p99, res.before.p99), ratio(res.snapSent.p99, res.beforeSent.p99))
}
