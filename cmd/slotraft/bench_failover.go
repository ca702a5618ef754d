package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/slots"
)

// failoverTest names the failover row in the results.
const failoverTest = "FAILOVER"

// failoverCSVHeader are the columns of a failover row (times in ms).
const failoverCSVHeader = `"test","victim","pid","recovery_ms","gap_ms","ok_before","ok_after","failed","failed_after_recovery"`

// failoverMaxOps bounds the writes one writer records in a run.
const failoverMaxOps = 2_000_000

// failoverPause is how long a writer waits after a failed write before the
// next one: it bounds the loop's rate while the slots are unavailable, and
// is the resolution of the measurement.
const failoverPause = 5 * time.Millisecond

type failoverFlags struct {
	benchCommon
	pids      map[string]int
	pick      int
	writers   int
	keys      int
	warmup    time.Duration
	maxWait   time.Duration
	tail      time.Duration
	opTimeout time.Duration
	balance   time.Duration
}

// runBenchFailover implements `slotraft bench failover`: it writes in a
// loop to keys of one master's slots, kills that master's process with
// SIGKILL, and reports how long writes to those slots failed: from the kill
// (and from the last success before it) to the first success of a write
// started after it.
func runBenchFailover(args []string, stdout, stderr io.Writer) error {
	fs := newBenchFlagSet("failover", "Steady writes to one master's slots; kill -9 that master; time until writes to its slots succeed again.", stderr)
	f := &failoverFlags{pids: map[string]int{}}
	f.register(fs, 5*time.Minute)
	fs.Func("pids", "comma-separated host:port=pid of every node that may be killed (required)", func(s string) error {
		return parsePids(s, f.pids)
	})
	fs.IntVar(&f.pick, "pick", 0, "kill the master of the pick-th slot range (mod the number of ranges, in slot order)")
	fs.IntVar(&f.writers, "writers", 4, "concurrent writers, one SET in flight each")
	fs.IntVar(&f.keys, "keys", 16, "keys written, all in the victim's slots")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "writes before the kill")
	fs.DurationVar(&f.maxWait, "max-wait", 90*time.Second, "give up when writes still fail this long after the kill")
	fs.DurationVar(&f.tail, "tail", time.Second, "go on writing this long after the first success, to see writes stay up")
	fs.DurationVar(&f.opTimeout, "op-timeout", time.Second, "timeout of one write attempt")
	fs.DurationVar(&f.balance, "balance-wait", 30*time.Second, "wait up to this long for every slot range to have a different master before picking")
	if err := parseBenchFlags(fs, &f.benchCommon, args, stderr); err != nil {
		return err
	}
	if len(f.pids) == 0 || f.writers < 1 || f.keys < 1 {
		fmt.Fprintln(stderr, "slotraft bench failover: --pids is required; --writers and --keys must be at least 1")
		return errUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	router := newSlotRouter(f.addrs, f.opTimeout, f.writers+2)
	defer router.Close()
	if err := waitBalanced(ctx, router, f.balance); err != nil {
		fmt.Fprintf(stderr, "slotraft bench failover: %v (going on)\n", err)
	}
	if err := router.reload(ctx); err != nil {
		return err
	}
	victim, err := pickVictim(router.slotRanges(), f.pick)
	if err != nil {
		return err
	}
	pid, ok := f.pids[victim]
	if !ok {
		return fmt.Errorf("no pid given for the victim %s (--pids has %v)", victim, f.pids)
	}
	keys, err := keysOf(router.slotRanges(), victim, f.keys)
	if err != nil {
		return err
	}
	res, err := measureFailover(ctx, router, f, victim, keys, pid)
	if err != nil {
		return fmt.Errorf("victim %s (pid %d): %w", victim, pid, err)
	}
	res.victim, res.pid = victim, pid
	res.write(stdout, f.csv)
	fmt.Fprintf(stderr, "slotraft bench failover: %s refused connections %s ms after the signal\n", victim, ms(res.dead.Sub(res.killed)))
	if len(res.failedBy) > 0 {
		fmt.Fprintf(stderr, "slotraft bench failover: failed attempts by error: %s\n", formatCounts(res.failedBy))
	}
	return nil
}

// parsePids reads "host:port=pid,…" into m.
func parsePids(s string, m map[string]int) error {
	for _, kv := range strings.Split(s, ",") {
		addr, p, ok := strings.Cut(strings.TrimSpace(kv), "=")
		pid, err := strconv.Atoi(p)
		if !ok || addr == "" || err != nil || pid <= 1 {
			return fmt.Errorf("bad host:port=pid %q", kv)
		}
		m[addr] = pid
	}
	return nil
}

// waitBalanced waits until every slot range has a different master (a
// restarted node may still be taking its leaderships back), up to wait.
func waitBalanced(ctx context.Context, router *slotRouter, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := router.reload(ctx)
		if err == nil {
			err = distinctMasters(router.slotRanges())
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func distinctMasters(ranges []slotRange) error {
	seen := map[string]bool{}
	for _, r := range ranges {
		if seen[r.master] {
			return fmt.Errorf("%s is the master of more than one slot range", r.master)
		}
		seen[r.master] = true
	}
	return nil
}

// pickVictim returns the master of the pick-th range in slot order.
func pickVictim(ranges []slotRange, pick int) (string, error) {
	if len(ranges) == 0 {
		return "", errors.New("CLUSTER SLOTS lists no slot range")
	}
	ranges = slices.Clone(ranges)
	slices.SortFunc(ranges, func(a, b slotRange) int { return a.start - b.start })
	return ranges[((pick%len(ranges))+len(ranges))%len(ranges)].master, nil
}

// keysOf finds n keys whose slots the victim is master of.
func keysOf(ranges []slotRange, victim string, n int) ([]string, error) {
	var mine []slotRange
	for _, r := range ranges {
		if r.master == victim {
			mine = append(mine, r)
		}
	}
	run := benchRunID()
	var keys []string
	for i := 0; len(keys) < n && i < 10_000_000; i++ {
		k := "bench:failover:" + run + ":" + strconv.Itoa(i)
		s := int(slots.Of([]byte(k)))
		for _, r := range mine {
			if r.start <= s && s <= r.end {
				keys = append(keys, k)
				break
			}
		}
	}
	if len(keys) < n {
		return nil, fmt.Errorf("found %d keys in %s's slots, want %d", len(keys), victim, n)
	}
	return keys, nil
}

// writeEvent is one write attempt.
type writeEvent struct {
	start, end time.Time
	ok         bool
	kind       string // the error's kind when !ok
}

// failoverResult is what one run measured.
type failoverResult struct {
	victim            string
	pid               int
	recovery, gap     time.Duration
	okBefore, okAfter int
	failed            int
	failedAfter       int            // failed attempts started after the first success after the kill
	failedBy          map[string]int // failed attempts by errorKind
	killed, dead      time.Time      // signal sent; victim's port refusing connections
	lastBefore        time.Time
}

// measureFailover runs the writers, kills pid once they wrote for the
// warm-up time, and stops them --tail after the first success of a write
// started after the kill (or fails when max-wait passes first).
func measureFailover(ctx context.Context, router *slotRouter, f *failoverFlags, victim string, keys []string, pid int) (failoverResult, error) {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w := &failoverWriters{events: make([][]writeEvent, f.writers), recovered: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range f.writers {
		wg.Go(func() { w.loop(wctx, router, i, keys, f.writers) })
	}
	if err := w.warmUp(ctx, f.warmup); err != nil {
		stop()
		wg.Wait()
		return failoverResult{}, err
	}
	killed, dead, err := killAndConfirm(ctx, pid, victim)
	if err != nil {
		stop()
		wg.Wait()
		return failoverResult{}, err
	}
	w.setDead(dead)
	var waitErr error
	select {
	case <-w.recovered:
		select {
		case <-time.After(f.tail):
		case <-ctx.Done():
		}
	case <-time.After(f.maxWait):
		waitErr = fmt.Errorf("writes to the victim's slots still failing %v after the kill", f.maxWait)
	case <-ctx.Done():
		waitErr = ctx.Err()
	}
	stop()
	wg.Wait()
	if waitErr != nil {
		return failoverResult{}, waitErr
	}
	return w.result(killed, dead), nil
}

// killAndConfirm sends SIGKILL to pid and returns when the signal was sent
// and when victim's client port first refused a connection. Only writes
// started after that count as the recovery: a write started between the
// two may still have been served by the dying process.
func killAndConfirm(ctx context.Context, pid int, victim string) (killed, dead time.Time, err error) {
	if err := killPid(pid); err != nil {
		return killed, dead, fmt.Errorf("kill -9 %d: %w", pid, err)
	}
	killed = time.Now()
	deadline := killed.Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", victim, 100*time.Millisecond)
		if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
			return killed, time.Now(), nil
		}
		if err == nil {
			conn.Close()
		}
		if time.Now().After(deadline) {
			return killed, dead, fmt.Errorf("%s still accepts connections 10s after kill -9 %d: is that pid the node?", victim, pid)
		}
		select {
		case <-ctx.Done():
			return killed, dead, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// killPid sends SIGKILL to pid (os.Process.Kill does on Unix).
func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// failoverWriters is the shared state of the writers.
type failoverWriters struct {
	events [][]writeEvent // per writer, in order

	mu        sync.Mutex
	firstOK   time.Time
	dead      time.Time // zero until the victim is gone
	recovered chan struct{}
	closed    bool
}

// loop writes keys round-robin until ctx ends or it recorded failoverMaxOps.
func (w *failoverWriters) loop(ctx context.Context, router *slotRouter, id int, keys []string, writers int) {
	for i := 0; i < failoverMaxOps && ctx.Err() == nil; i++ {
		key := keys[(id+i*writers)%len(keys)]
		start := time.Now()
		err := router.do(ctx, "set", key, strconv.Itoa(i))
		end := time.Now()
		if ctx.Err() != nil {
			return // cut short by the end of the run: not an outcome
		}
		w.events[id] = append(w.events[id], writeEvent{start: start, end: end, ok: err == nil, kind: errorKind(err)})
		w.note(start, end, err == nil)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(failoverPause):
			}
		}
	}
}

// note counts a success and signals the first one of a write started
// after the kill.
func (w *failoverWriters) note(start, end time.Time, ok bool) {
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.firstOK.IsZero() {
		w.firstOK = end
	}
	if !w.dead.IsZero() && !start.Before(w.dead) && !w.closed {
		w.closed = true
		close(w.recovered)
	}
}

// warmUp waits until writes succeeded for d since the first success.
func (w *failoverWriters) warmUp(ctx context.Context, d time.Duration) error {
	deadline := time.Now().Add(d + 60*time.Second)
	for {
		w.mu.Lock()
		first := w.firstOK
		w.mu.Unlock()
		if !first.IsZero() && time.Since(first) >= d {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("no successful write during the warm-up")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// setDead starts watching for the first success of a write started at
// or after dead.
func (w *failoverWriters) setDead(dead time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = dead
}

// result works out the run's numbers from every writer's events: the last
// success that ended before the kill, the first success of a write started
// once the victim was gone, and the attempts on either side.
func (w *failoverWriters) result(killed, dead time.Time) failoverResult {
	res := failoverResult{killed: killed, dead: dead, failedBy: map[string]int{}}
	var firstAfter time.Time
	for _, evs := range w.events {
		for _, e := range evs {
			switch {
			case !e.ok:
				res.failed++
				res.failedBy[e.kind]++
			case !e.end.After(killed):
				res.okBefore++
				if e.end.After(res.lastBefore) {
					res.lastBefore = e.end
				}
			default:
				res.okAfter++
				if !e.start.Before(dead) && (firstAfter.IsZero() || e.end.Before(firstAfter)) {
					firstAfter = e.end
				}
			}
		}
	}
	for _, evs := range w.events {
		for _, e := range evs {
			if !e.ok && e.start.After(firstAfter) {
				res.failedAfter++
			}
		}
	}
	res.recovery = firstAfter.Sub(killed)
	res.gap = firstAfter.Sub(res.lastBefore)
	return res
}

func (r failoverResult) write(w io.Writer, csv bool) {
	if csv {
		fmt.Fprintln(w, failoverCSVHeader)
		fmt.Fprintf(w, "%q,%q,\"%d\",\"%s\",\"%s\",\"%d\",\"%d\",\"%d\",\"%d\"\n",
			failoverTest, r.victim, r.pid, ms(r.recovery), ms(r.gap), r.okBefore, r.okAfter, r.failed, r.failedAfter)
		return
	}
	fmt.Fprintf(w, "killed %s (pid %d): writes to its slots succeeded again %s ms after the kill, %s ms after the last success before it (%d ok before, %d ok after, %d failed attempts, %d of them after the recovery)\n",
		r.victim, r.pid, ms(r.recovery), ms(r.gap), r.okBefore, r.okAfter, r.failed, r.failedAfter)
}

// errorKind condenses an error for the failure counts: a Redis error's
// first word (MOVED, CLUSTERDOWN, TRYAGAIN, ERR…), or the network failure.
func errorKind(err error) string {
	var rerr redis.Error
	var nerr net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &rerr):
		word, _, _ := strings.Cut(rerr.Error(), " ")
		return word
	case errors.Is(err, errNoMaster):
		return "no master in CLUSTER SLOTS"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection reset"
	case errors.As(err, &nerr) && nerr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "other"
	}
}

// formatCounts renders counts as "kind n, …", largest first.
func formatCounts(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + " " + strconv.Itoa(m[k])
	}
	return strings.Join(parts, ", ")
}
