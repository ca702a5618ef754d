package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

// `slotraft bench reshard` (issue #4) starts a cluster of three `slotraft
// server` processes of its own (3 groups x 3 replicas, data in a temp dir,
// ports from the OS), loads keys, runs a client at a fixed rate, then moves
// the last third of every group's slots to the next group and reports how
// fast keys moved and the client's latency before and during the move.
// It moves slots of a cluster it started, never of one it was pointed at.

// reshardAdminTimeout bounds one SLOTRAFT request of the bench.
const reshardAdminTimeout = 30 * time.Second

// reshardBatch is the pipeline depth of loading and reading back.
const reshardBatch = 500

// reshardLoaders is how many pipelines load or read back at once.
const reshardLoaders = 8

// reshardWarmUp is client load left out of the baseline: the first
// operations dial the connections and load the slot map.
const reshardWarmUp = time.Second

type reshardFlags struct {
	keys      int
	valueSize int
	rate      int
	conns     int
	before    time.Duration
	maxMove   time.Duration
	timeout   time.Duration
	basePort  int
	verify    bool
	keepData  bool
	logLevel  string
}

// runBenchReshard implements `slotraft bench reshard`.
func runBenchReshard(args []string, stdout, stderr io.Writer) error {
	f, err := parseReshardFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sigs := make(chan os.Signal, 1) // waitReady's way to hear Ctrl-C
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	c, err := startReshardCluster(f, sigs, stderr)
	if err != nil {
		return err
	}
	err = runReshard(ctx, c.addrs(), f, stdout, stderr)
	return c.stop(err, f.keepData, stderr)
}

func parseReshardFlags(args []string, stderr io.Writer) (*reshardFlags, error) {
	fs := newBenchFlagSet("reshard", "Start a 3-node cluster, load keys, run a client at a fixed rate, move the last third of each group's slots\nto the next group; report keys/s moved and the client's p50/p99 before and during the move.", stderr)
	f := &reshardFlags{}
	fs.IntVar(&f.keys, "keys", 1_000_000, "keys to load")
	quick := fs.Bool("quick", false, "a short run: 20000 keys, a 3s baseline (unless --keys or --before say otherwise)")
	fs.IntVar(&f.valueSize, "value-size", 100, "bytes per value")
	fs.IntVar(&f.rate, "rate", 500, "client operations per second (GET and SET half each, on random loaded keys)")
	fs.IntVar(&f.conns, "conns", 50, "client connections; each runs its share of the rate, one operation in flight")
	fs.DurationVar(&f.before, "before", 10*time.Second, "client load measured before the move")
	fs.DurationVar(&f.maxMove, "max-move", 30*time.Minute, "fail when the migrations are not over after this long")
	fs.DurationVar(&f.timeout, "timeout", time.Hour, "upper bound on the whole run")
	fs.IntVar(&f.basePort, "base-port", 0, "client port of node1 (node N: +N-1, bus ports +10000); 0 picks a free one")
	fs.BoolVar(&f.verify, "verify", true, "read every key back after the move")
	fs.BoolVar(&f.keepData, "keep-data", false, "keep the nodes' data dirs and logs (they are always kept when the run fails)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "the nodes' log level")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errUsage
	}
	if *quick {
		applyQuick(fs, f)
	}
	if fs.NArg() > 0 || f.keys < 1 || f.valueSize < 16 || f.rate < 1 || f.conns < 1 || f.before <= 0 || f.maxMove <= 0 || f.timeout <= 0 {
		fmt.Fprintln(stderr, "slotraft bench reshard: no arguments; --keys, --rate, --conns at least 1, --value-size at least 16, durations positive")
		return nil, errUsage
	}
	return f, nil
}

// applyQuick shrinks the defaults the command line left alone.
func applyQuick(fs *flag.FlagSet, f *reshardFlags) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["keys"] {
		f.keys = 20_000
	}
	if !set["before"] {
		f.before = 3 * time.Second
	}
}

// reshardCluster is the bench's own cluster, made with `slotraft dev`'s
// helpers: real server processes, children of this one.
type reshardCluster struct {
	dir   string
	nodes []*devNode
	exits chan devExit
}

func startReshardCluster(f *reshardFlags, sigs <-chan os.Signal, stderr io.Writer) (*reshardCluster, error) {
	dir, err := os.MkdirTemp("", "slotraft-bench-reshard-")
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	df := &devFlags{dataDir: dir, host: "127.0.0.1", basePort: f.basePort, nodes: 3, groups: 3, replicas: 3,
		logLevel: f.logLevel, logFormat: "text", wait: 90 * time.Second}
	nodes, err := planFreePorts(df)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c := &reshardCluster{dir: dir, nodes: nodes, exits: make(chan devExit, len(nodes))}
	for _, n := range nodes {
		if err = n.start(c.exits); err != nil {
			break
		}
	}
	if err == nil {
		err = waitReady(nodes, df.wait, c.exits, sigs)
	}
	if err != nil {
		return nil, c.stop(err, true, stderr)
	}
	fmt.Fprintf(stderr, "bench reshard: 3 nodes up on %s (data and logs in %s)\n", strings.Join(c.addrs(), ","), dir)
	return c, nil
}

// planFreePorts plans the nodes on --base-port, or on ports the OS says
// are free when it is 0.
func planFreePorts(df *devFlags) ([]*devNode, error) {
	if df.basePort != 0 {
		nodes, err := df.plan()
		if err == nil {
			err = checkPortsFree(nodes)
		}
		return nodes, err
	}
	for range 50 {
		base, err := freePort()
		if err != nil {
			return nil, err
		}
		if base+df.nodes-1+busPortOffset > 65535 {
			continue // the bus ports would not fit
		}
		df.basePort = base
		nodes, err := df.plan()
		if err == nil && checkPortsFree(nodes) == nil {
			return nodes, nil
		}
	}
	return nil, errors.New("found no free run of client and bus ports on 127.0.0.1")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func (c *reshardCluster) addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.client
	}
	return out
}

// stop stops the nodes started here (SIGINT, then SIGKILL after dev's
// grace) and removes their data unless the run failed or keep is set.
// SIGINT, not SIGTERM: every node stops, so none should hand its
// leaderships to the others first.
func (c *reshardCluster) stop(runErr error, keep bool, stderr io.Writer) error {
	err := errors.Join(runErr, stopNodes(c.nodes, c.exits, os.Interrupt, stderr))
	if err != nil || keep {
		fmt.Fprintf(stderr, "bench reshard: data and node logs kept in %s\n", c.dir)
		return err
	}
	return os.RemoveAll(c.dir)
}

// reshardKeys names the loaded keys and their values: key i always holds
// value(i), so any read can be checked.
type reshardKeys struct {
	prefix string
	n      int
	filler string // pads a value to its size
}

func newReshardKeys(n, size int) *reshardKeys {
	return &reshardKeys{prefix: "bench:reshard:" + benchRunID() + ":", n: n, filler: strings.Repeat("v", size)}
}

func (k *reshardKeys) key(i int) string { return k.prefix + strconv.Itoa(i) }

func (k *reshardKeys) value(i int) string {
	head := strconv.Itoa(i) + ":"
	return head + k.filler[min(len(head), len(k.filler)):]
}

// inSlots counts the keys whose slots set holds.
func (k *reshardKeys) inSlots(set *slots.Set) int {
	n := 0
	for i := range k.n {
		if set.Has(slots.Of([]byte(k.key(i)))) {
			n++
		}
	}
	return n
}

// reshardResult is what a run measured; a run that fails part-way has
// what it got to.
type reshardResult struct {
	loadTime          time.Duration
	moves             []slotMove
	keysInMoved       int
	moved             progressStats
	before, during    latencySummary // from when each operation was due
	beforeSent        latencySummary // from when it was sent
	duringSent        latencySummary
	errorsBy          map[string]int
	firstErr          error
	verified, missing int
	wrong             int
	slotsAfter        map[uint32]int
	nodes             []string       // the nodes' client addresses (SAVE goes to each)
	snapTime          time.Duration  // how long SAVE took on every node at once
	snap, snapSent    latencySummary // the client while the snapshots were written
}

// runReshard loads the keys, runs the client, moves the slots, checks.
func runReshard(ctx context.Context, addrs []string, f *reshardFlags, stdout, stderr io.Writer) error {
	admin := redis.NewClient(&redis.Options{Addr: addrs[0], ReadTimeout: reshardAdminTimeout,
		MaxRetries: -1, DisableIdentity: true, Protocol: 2})
	defer admin.Close()
	waitLeadersSpread(ctx, addrs, stderr)
	rdb := newBenchClient(addrs, true, f.conns+reshardLoaders)
	defer rdb.Close()
	keys := newReshardKeys(f.keys, f.valueSize)
	res := &reshardResult{nodes: addrs}
	err := res.run(ctx, admin, rdb, keys, f, stderr)
	res.write(stdout, f, keys)
	switch {
	case errors.Is(err, context.Canceled):
		err = errors.New("interrupted")
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		err = fmt.Errorf("the run took longer than --timeout %v: %w", f.timeout, err)
	}
	return errors.Join(err, res.failure())
}

// waitLeadersSpread waits until every group has a different leader: leader
// spreading moves leaderships for a few seconds after start, which would
// disturb the baseline.
func waitLeadersSpread(ctx context.Context, addrs []string, stderr io.Writer) {
	router := newSlotRouter(addrs, time.Second, 2)
	defer router.Close()
	if err := waitBalanced(ctx, router, 30*time.Second); err != nil {
		fmt.Fprintf(stderr, "bench reshard: %v (going on)\n", err)
	}
}

func (res *reshardResult) run(ctx context.Context, admin *redis.Client, rdb redis.UniversalClient, keys *reshardKeys, f *reshardFlags, stderr io.Writer) error {
	start := time.Now()
	if err := forBatches(ctx, keys.n, "loaded", stderr, func(ctx context.Context, lo, hi int) error {
		return loadBatch(ctx, rdb, keys, lo, hi)
	}); err != nil {
		return fmt.Errorf("load: %w", err)
	}
	res.loadTime = time.Since(start)
	st, err := fetchStatus(ctx, admin, reshardAdminTimeout)
	if err != nil {
		return err
	}
	if res.moves, err = planReshard(st.Groups); err != nil {
		return err
	}
	res.keysInMoved = keys.inSlots(movedSet(res.moves))
	if err := res.underLoad(ctx, admin, rdb, keys, f, stderr); err != nil {
		return err
	}
	if err := res.checkOwners(ctx, admin); err != nil {
		return err
	}
	if f.verify {
		return res.readBack(ctx, rdb, keys, stderr)
	}
	return nil
}

// underLoad runs the client for the baseline, then through the move.
func (res *reshardResult) underLoad(ctx context.Context, admin *redis.Client, rdb redis.UniversalClient, keys *reshardKeys, f *reshardFlags, stderr io.Writer) error {
	client := newReshardClient(keys, f.rate, f.conns)
	cctx, stopClient := context.WithCancel(ctx)
	defer stopClient()
	clientStart := time.Now()
	maxOps := int((reshardWarmUp+f.before+f.maxMove+time.Minute).Seconds()*float64(f.rate)/float64(f.conns)) + 1
	var wg sync.WaitGroup
	wg.Go(func() { client.run(cctx, rdb, clientStart, maxOps) })
	fmt.Fprintf(stderr, "bench reshard: client at %d ops/s; baseline for %v\n", f.rate, f.before)
	select {
	case <-ctx.Done():
	case <-time.After(reshardWarmUp + f.before):
	}
	snapStart := time.Now()
	snapErr := res.saveAll(ctx, stderr)
	moveStart := time.Now()
	moveErr := res.move(ctx, admin, f.maxMove, stderr)
	moveEnd := time.Now()
	stopClient()
	wg.Wait()
	res.snapTime = moveStart.Sub(snapStart)
	res.snap, res.snapSent = client.summary(snapStart, moveStart)
	res.before, res.beforeSent = client.summary(clientStart.Add(reshardWarmUp), snapStart)
	res.during, res.duringSent = client.summary(moveStart, moveEnd)
	res.errorsBy, res.firstErr = client.errors()
	return errors.Join(snapErr, moveErr)
}

// move sends the moves and follows them until none is pending.
func (res *reshardResult) move(ctx context.Context, admin *redis.Client, maxMove time.Duration, stderr io.Writer) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	base, err := fetchMigrations(ctx, admin, reshardAdminTimeout)
	if err != nil {
		return err
	}
	prog := newMigrationProgress(migrationSample(base, time.Now()))
	recorded := 0
	for _, m := range res.moves {
		n, err := moveSlots(ctx, admin, reshardAdminTimeout, m.to, m.ranges)
		if err != nil {
			return err
		}
		recorded += n
	}
	fmt.Fprintf(stderr, "bench reshard: %d slot migrations recorded\n", recorded)
	prog.atLeast(base.Pending + recorded)
	printer := newProgressPrinter(stderr, progressPlain)
	printer.period = 5 * time.Second
	follow := migrationFollow{
		poll: func(ctx context.Context) (cluster.MigrationStatus, error) {
			return fetchMigrations(ctx, admin, reshardAdminTimeout)
		},
		interval: 500 * time.Millisecond, patience: reshardAdminTimeout, printer: printer, now: time.Now,
	}
	mctx, cancel := context.WithTimeout(ctx, maxMove)
	defer cancel()
	last, err := follow.run(mctx, prog)
	res.moved = prog.stats()
	if err != nil {
		return fmt.Errorf("migrations not over after %v: %s: %w", res.moved.elapsed.Round(time.Second), pendingText(last), err)
	}
	return nil
}

// slotMove is one MOVE-SLOTS of the bench.
type slotMove struct {
	from, to uint32
	ranges   []slots.Range
	count    int
}

// planReshard moves the last third (in slot order) of every group's slots
// to the next group by id, the last group's to the first: a third of all
// slots move, every group gives and takes at once, and each ends with as
// many slots as it had, so a run leaves the cluster balanced.
func planReshard(groups []cluster.GroupStatus) ([]slotMove, error) {
	gs := slices.SortedFunc(slices.Values(groups), func(a, b cluster.GroupStatus) int { return cmp.Compare(a.ID, b.ID) })
	if len(gs) < 2 {
		return nil, fmt.Errorf("%d slot groups: the bench needs at least 2", len(gs))
	}
	moves := make([]slotMove, 0, len(gs))
	for i, g := range gs {
		owned, err := groupSlots(g)
		if err != nil {
			return nil, err
		}
		give := lastSlots(owned, owned.Len()/3)
		moves = append(moves, slotMove{from: g.ID, to: gs[(i+1)%len(gs)].ID, ranges: give.Ranges(), count: give.Len()})
	}
	return moves, nil
}

// lastSlots is the n highest slots of set.
func lastSlots(set *slots.Set, n int) *slots.Set {
	out := new(slots.Set)
	for s := slots.Count - 1; s >= 0 && out.Len() < n; s-- {
		if set.Has(uint16(s)) {
			out.Add(uint16(s))
		}
	}
	return out
}

func movedSet(moves []slotMove) *slots.Set {
	set := new(slots.Set)
	for _, m := range moves {
		for _, r := range m.ranges {
			set.AddRange(r)
		}
	}
	return set
}

// checkOwners checks that every moved slot is now its target's, and
// records the slots per group.
func (res *reshardResult) checkOwners(ctx context.Context, admin *redis.Client) error {
	st, err := fetchStatus(ctx, admin, reshardAdminTimeout)
	if err != nil {
		return err
	}
	owned := map[uint32]*slots.Set{}
	res.slotsAfter = map[uint32]int{}
	for _, g := range st.Groups {
		if owned[g.ID], err = groupSlots(g); err != nil {
			return err
		}
		res.slotsAfter[g.ID] = owned[g.ID].Len()
	}
	for _, m := range res.moves {
		for _, r := range m.ranges {
			for s := int(r.Start); s <= int(r.End); s++ {
				if set := owned[m.to]; set == nil || !set.Has(uint16(s)) {
					return fmt.Errorf("after the move, group %d does not own slot %d (of %s)", m.to, s, r)
				}
			}
		}
	}
	return nil
}

// forBatches runs fn over [0, n) in batches of reshardBatch on
// reshardLoaders goroutines, retrying a failed batch (its commands are
// idempotent), and logs its progress every few seconds.
func forBatches(ctx context.Context, n int, what string, stderr io.Writer, fn func(ctx context.Context, lo, hi int) error) error {
	var next, done atomic.Int64
	var failed atomic.Bool
	errs := make([]error, reshardLoaders)
	var wg sync.WaitGroup
	for w := range reshardLoaders {
		wg.Go(func() {
			for !failed.Load() {
				lo := int(next.Add(reshardBatch)) - reshardBatch
				if lo >= n {
					return
				}
				hi := min(lo+reshardBatch, n)
				if errs[w] = retryBatch(ctx, func() error { return fn(ctx, lo, hi) }); errs[w] != nil {
					failed.Store(true) // the others stop too: the run is lost
					return
				}
				done.Add(int64(hi - lo))
			}
		})
	}
	stopLog := logEvery(5*time.Second, func() { fmt.Fprintf(stderr, "bench reshard: %s %d/%d keys\n", what, done.Load(), n) })
	wg.Wait()
	stopLog()
	return errors.Join(errs...)
}

// retryBatch tries a batch up to 5 times, 200 ms apart: a leader change
// fails a pipeline for a moment, not for good.
func retryBatch(ctx context.Context, try func() error) error {
	var err error
	for range 5 {
		if err = try(); err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return err
}

// logEvery calls fn every period until the returned stop is called.
func logEvery(period time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func loadBatch(ctx context.Context, rdb redis.UniversalClient, keys *reshardKeys, lo, hi int) error {
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := lo; i < hi; i++ {
			p.Set(ctx, keys.key(i), keys.value(i), 0)
		}
		return nil
	})
	return err
}

// readBack reads every key after the move: none may be missing or wrong.
func (res *reshardResult) readBack(ctx context.Context, rdb redis.UniversalClient, keys *reshardKeys, stderr io.Writer) error {
	var missing, wrong atomic.Int64
	err := forBatches(ctx, keys.n, "read back", stderr, func(ctx context.Context, lo, hi int) error {
		m, w, err := checkBatch(ctx, rdb, keys, lo, hi)
		if err == nil {
			missing.Add(int64(m))
			wrong.Add(int64(w))
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("read back: %w", err)
	}
	res.verified, res.missing, res.wrong = keys.n, int(missing.Load()), int(wrong.Load())
	return nil
}

// checkBatch GETs keys [lo, hi) and counts the missing and wrong values; any
// other error fails the batch, to be retried.
func checkBatch(ctx context.Context, rdb redis.UniversalClient, keys *reshardKeys, lo, hi int) (missing, wrong int, err error) {
	cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := lo; i < hi; i++ {
			p.Get(ctx, keys.key(i))
		}
		return nil
	})
	if len(cmds) != hi-lo {
		return 0, 0, fmt.Errorf("pipeline of %d GETs answered %d", hi-lo, len(cmds))
	}
	for j, c := range cmds {
		v, err := c.(*redis.StringCmd).Result()
		switch {
		case errors.Is(err, redis.Nil):
			missing++
		case err != nil:
			return 0, 0, err
		case v != keys.value(lo+j):
			wrong++
		}
	}
	return missing, wrong, nil
}

// reshardClient runs GET and SET at a fixed rate, each connection on its
// own schedule. An operation's latency runs from when it was due, not from
// when it was sent, so a stall shows in full in the operations it delays.
type reshardClient struct {
	keys  *reshardKeys
	rate  int
	conns []clientConn
}

type clientConn struct {
	ops      []opSample
	errorsBy map[string]int
	firstErr error
}

type opSample struct {
	due     time.Time
	latency time.Duration // from due to done
	service time.Duration // from sent to done
	ok      bool
}

// errBadRead: a GET of a loaded key found it missing or changed.
var errBadRead = errors.New("GET of a loaded key returned another value or none")

func newReshardClient(keys *reshardKeys, rate, conns int) *reshardClient {
	c := &reshardClient{keys: keys, rate: rate, conns: make([]clientConn, conns)}
	for i := range c.conns {
		c.conns[i].errorsBy = map[string]int{}
	}
	return c
}

// run drives every connection until ctx ends or each ran maxOps.
func (c *reshardClient) run(ctx context.Context, rdb redis.UniversalClient, start time.Time, maxOps int) {
	var wg sync.WaitGroup
	for id := range c.conns {
		wg.Go(func() { c.loop(ctx, rdb, id, start, maxOps) })
	}
	wg.Wait()
}

func (c *reshardClient) loop(ctx context.Context, rdb redis.UniversalClient, id int, start time.Time, maxOps int) {
	conn := &c.conns[id]
	every := time.Second * time.Duration(len(c.conns)) / time.Duration(c.rate)
	due := start.Add(time.Second * time.Duration(id) / time.Duration(c.rate))
	rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(id)))
	for range maxOps {
		if !sleepUntil(ctx, due) {
			return
		}
		sent := time.Now()
		err := c.op(ctx, rdb, rng.IntN(c.keys.n), rng.IntN(2) == 0)
		if ctx.Err() != nil {
			return // cut short by the end of the run: not an outcome
		}
		done := time.Now()
		conn.ops = append(conn.ops, opSample{due: due, latency: done.Sub(due), service: done.Sub(sent), ok: err == nil})
		if err != nil {
			conn.errorsBy[opErrorKind(err)]++
			conn.firstErr = cmp.Or(conn.firstErr, err)
		}
		due = due.Add(every)
	}
}

// opErrorKind is errorKind, or "bad read" for a GET that found a loaded key
// missing or changed.
func opErrorKind(err error) string {
	if errors.Is(err, errBadRead) {
		return "bad read"
	}
	return errorKind(err)
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	if d := time.Until(t); d > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
		}
	}
	return ctx.Err() == nil
}

// op GETs key i and checks its value, or SETs it to the same value.
func (c *reshardClient) op(ctx context.Context, rdb redis.UniversalClient, i int, get bool) error {
	if !get {
		return rdb.Set(ctx, c.keys.key(i), c.keys.value(i), 0).Err()
	}
	v, err := rdb.Get(ctx, c.keys.key(i)).Result()
	if errors.Is(err, redis.Nil) || (err == nil && v != c.keys.value(i)) {
		return fmt.Errorf("%s: %w", c.keys.key(i), errBadRead)
	}
	return err
}

// summary condenses the operations due in [from, to): their latency from
// when they were due, and from when they were sent.
func (c *reshardClient) summary(from, to time.Time) (due, sent latencySummary) {
	var lat, svc []time.Duration
	failed := 0
	for i := range c.conns {
		for _, o := range c.conns[i].ops {
			switch {
			case o.due.Before(from) || !o.due.Before(to):
			case o.ok:
				lat = append(lat, o.latency)
				svc = append(svc, o.service)
			default:
				failed++
			}
		}
	}
	return summarize(lat, failed, to.Sub(from)), summarize(svc, failed, to.Sub(from))
}

func (c *reshardClient) errors() (map[string]int, error) {
	by := map[string]int{}
	var first error
	for i := range c.conns {
		for k, n := range c.conns[i].errorsBy {
			by[k] += n
		}
		first = cmp.Or(first, c.conns[i].firstErr)
	}
	return by, first
}

// failure is the run's verdict beyond errors that stopped it: the client
// must see no error, and every key must read back intact.
func (res *reshardResult) failure() error {
	var errs []error
	if len(res.errorsBy) > 0 {
		errs = append(errs, fmt.Errorf("the client saw errors (%s); first: %w", formatCounts(res.errorsBy), res.firstErr))
	}
	if res.missing+res.wrong > 0 {
		errs = append(errs, fmt.Errorf("read back after the move: %d keys missing, %d wrong", res.missing, res.wrong))
	}
	return errors.Join(errs...)
}

// write prints the report, with whatever the run got to.
func (res *reshardResult) write(w io.Writer, f *reshardFlags, keys *reshardKeys) {
	if res.loadTime == 0 || len(res.moves) == 0 {
		fmt.Fprintf(w, "\nreshard: the run stopped before the move (%d keys to load)\n", keys.n)
		return
	}
	fmt.Fprintf(w, "\nreshard: 3 nodes, 3 groups x 3 replicas; %d keys of %d bytes loaded in %.1fs (%.0f keys/s)\n",
		keys.n, f.valueSize, res.loadTime.Seconds(), float64(keys.n)/res.loadTime.Seconds())
	parts := make([]string, len(res.moves))
	for i, m := range res.moves {
		parts[i] = fmt.Sprintf("%d->%d %d slots (%s)", m.from, m.to, m.count, rangeList(m.ranges, 3))
	}
	fmt.Fprintf(w, "move: the last third of each group's slots to the next group: %s\n", strings.Join(parts, ", "))
	if res.moved.at.IsZero() {
		fmt.Fprintln(w, "the run stopped before the migrations were recorded")
	} else {
		fmt.Fprintln(w, renderSummary(res.moved)+fmt.Sprintf(", %.1f slots/s; the moved slots held %d of the loaded keys",
			float64(res.moved.done)/max(res.moved.elapsed.Seconds(), 1e-9), res.keysInMoved))
	}
	fmt.Fprintf(w, "client: %d ops/s over %d connections, GET (value checked) and SET half each on random loaded keys;\n", f.rate, f.conns)
	fmt.Fprintln(w, "latency from when each operation was due (a stall counts in full, queueing behind it too);")
	fmt.Fprintln(w, "/sent: from when it was sent (the server's answer time)")
	writeSummary(w, false, "before", res.before)
	writeSummary(w, false, "during", res.during)
	writeSummary(w, false, "before/sent", res.beforeSent)
	writeSummary(w, false, "during/sent", res.duringSent)
	res.writeSnapshot(w)
	fmt.Fprintf(w, "p99 during/before: %s (/sent %s)  p50 during/before: %s (/sent %s)\n",
		ratio(res.during.p99, res.before.p99), ratio(res.duringSent.p99, res.beforeSent.p99),
		ratio(res.during.p50, res.before.p50), ratio(res.duringSent.p50, res.beforeSent.p50))
	fmt.Fprintf(w, "client errors: %d", res.before.errors+res.during.errors)
	if len(res.errorsBy) > 0 {
		fmt.Fprintf(w, " (%s; first: %v)", formatCounts(res.errorsBy), res.firstErr)
	}
	fmt.Fprintln(w)
	if res.verified > 0 {
		fmt.Fprintf(w, "read back after the move: %d keys, %d missing, %d wrong\n", res.verified, res.missing, res.wrong)
	}
	if len(res.slotsAfter) > 0 {
		fmt.Fprintf(w, "slots per group after: %s\n", slotCounts(res.slotsAfter))
	}
}

func ratio(a, b time.Duration) string {
	if a <= 0 || b <= 0 {
		return "n/a"
	}
	return strconv.FormatFloat(float64(a)/float64(b), 'f', 2, 64) + "x"
}

func slotCounts(m map[uint32]int) string {
	ids := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("group %d %d", id, m[id])
	}
	return strings.Join(parts, ", ")
}
