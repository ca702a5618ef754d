package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotraft/slotraft/slots"
)

// Workload is one kind of traffic with its own checker. A workload chooses
// its operations (deterministic in the rng it is given and the process's
// own past), names the reads that end the run, and checks the history.
type Workload interface {
	Name() string
	// Setup picks the workload's keys, spread over the groups' ranges.
	Setup(keys *keyPicker)
	// Next is the next operation of process p: Kind, Key and arguments.
	Next(rng *rand.Rand, p *process) Op
	// Finals are the reads, one per key, made once every fault is healed.
	Finals() []Op
	// Check looks for anomalies in the workload's operations (finals
	// included, marked Final) and the run's events.
	Check(ctx context.Context, ops []Op, events []Event) Verdict
	// CheckPrefix applies, during the run, the rules that hold on a
	// prefix of the history (live.go): ops are the operations done so far
	// and the writes in flight, as of unknown outcome; no final reads. It
	// must find only anomalies that Check finds on the whole history.
	CheckPrefix(ctx context.Context, ops []Op) Verdict
	// LiveRules names what CheckPrefix checks and what only Check can.
	LiveRules() (live, pending string)
}

// Verdict is what a workload's checker found.
type Verdict struct {
	Workload  string    `json:"workload"`
	Result    string    `json:"result"` // ok, anomalies, or inconclusive: why
	Anomalies []Anomaly `json:"anomalies,omitempty"`
	Notes     []string  `json:"notes,omitempty"`
	// viz holds porcupine's visualisation of each non-linearizable key.
	viz map[string][]byte
}

// settle sets the result from what was found: anomalies, or inconclusive
// (why) when there are notes of what could not be checked.
func (v Verdict) settle(why string) Verdict {
	switch {
	case len(v.Anomalies) > 0:
		v.Result = "anomalies"
	case len(v.Notes) > 0:
		v.Result = "inconclusive: " + why
	}
	return v
}

// Anomaly is one violation of what the cluster promises.
type Anomaly struct {
	Workload string `json:"workload"`
	Kind     string `json:"kind"` // stale read, lost write, lost increment, …
	Key      string `json:"key,omitempty"`
	Text     string `json:"text"`
	Ops      []Op   `json:"ops,omitempty"`
}

// workloadKinds is every workload the issue names, built or not.
var workloadKinds = []kind[Workload]{
	{name: "registers", build: func() Workload { return &registers{} }},
	{name: "counters", build: func() Workload { return &counters{} }},
	{name: "sets", build: func() Workload { return &sets{} }},
	{name: "queues", build: func() Workload { return &queues{} }},
	{name: "streams", build: func() Workload { return &streams{} }},
}

func newWorkload(name string) Workload {
	for _, k := range workloadKinds {
		if k.name == name && k.build != nil {
			return k.build()
		}
	}
	panic("chaos: workload not built: " + name)
}

// keyPicker names keys that fall into given slot ranges.
type keyPicker struct {
	prefix string // chaos:<seed>:
	shards []shard
}

// spread returns perGroup keys of every group for workload wl.
func (k *keyPicker) spread(wl string, perGroup int) []string {
	var keys []string
	for gi, s := range k.shards {
		found := 0
		for n := 0; found < perGroup; n++ {
			key := k.prefix + wl + ":" + strconv.Itoa(gi) + ":" + strconv.Itoa(n)
			if slices.ContainsFunc(s.ranges, func(r slots.Range) bool { return r.Contains(slots.Of([]byte(key))) }) {
				keys = append(keys, key)
				found++
			}
		}
	}
	return keys
}

// process is one client of a workload: its rng, its porcupine client id,
// what it saw of each key (for CAS), and a counter for unique values.
type process struct {
	id     int
	client int
	seq    int
	seen   map[string]string
	block  time.Duration // the blocking commands' timeout (blockFor)
	state  any           // the workload's own record of this process, if it keeps one
}

// observer is a workload that learns from each of its operations' outcome
// (to know, say, which entries a process has to acknowledge).
type observer interface {
	observe(p *process, op *Op)
}

// unique is a value no other operation of the run writes.
func (p *process) unique() string {
	p.seq++
	return strconv.Itoa(p.id) + "." + strconv.Itoa(p.seq)
}

// runner drives one workload's processes.
type runner struct {
	wl        Workload
	h         *history
	addrs     func() []string // the members' client addresses now
	seed      uint64
	clients   int
	rate      int
	maxOps    int
	opTimeout time.Duration
	onErr     attemptFunc

	started atomic.Int64
}

// run starts the processes and returns when ctx ends (or maxOps were
// started) and every process has finished its operation in flight. A
// process that panics is an error, not the end of the program: the run
// must still clean up.
func (r *runner) run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, r.clients)
	for i := range r.clients {
		wg.Go(func() { errs[i] = guard(func() { r.process(ctx, i) }) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// process is one client loop, paced so that the workload's processes
// together start at most rate operations per second.
func (r *runner) process(ctx context.Context, i int) {
	cn := newConn(i, r.addrs, r.opTimeout, r.seed^streamOf(r.wl.Name(), i))
	defer cn.close()
	rng := rand.New(rand.NewPCG(r.seed, streamOf(r.wl.Name(), i)))
	p := &process{id: i, client: r.h.newClient(), seen: map[string]string{}, block: blockFor(r.opTimeout)}
	tick := time.NewTicker(time.Duration(r.clients) * time.Second / time.Duration(r.rate))
	defer tick.Stop()
	for int(r.started.Add(1)) <= r.maxOps {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		op := r.wl.Next(rng, p)
		op.Workload, op.Process, op.Client = r.wl.Name(), i, p.client
		execute(context.WithoutCancel(ctx), cn, r.h, &op, r.opTimeout, r.onErr)
		r.h.add(op)
		r.note(p, &op)
		if o, ok := r.wl.(observer); ok {
			o.observe(p, &op)
		}
	}
}

// note updates what p knows after op: a new porcupine client id after an
// Unknown (the op never returns, in porcupine's view, so the same client
// cannot call again), the key's value it saw or wrote.
func (r *runner) note(p *process, op *Op) {
	switch {
	case op.Outcome == Unknown:
		p.client = r.h.newClient()
		delete(p.seen, op.Key)
	case op.Outcome != OK:
	case op.Kind == "GET" && !op.Nil:
		p.seen[op.Key] = op.Result
	case op.Kind == "SET", op.Kind == "CAS" && op.Result == "1":
		p.seen[op.Key] = op.Value
	}
}

// streamOf is the rng stream of process i of workload wl: the same seed
// gives every process the same choices, run after run.
func streamOf(wl string, i int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", wl, i)
	return h.Sum64()
}

// finalReads reads every key the workload names once the faults are
// healed, retrying until each read succeeds or ctx ends. The reads join
// the history (Final).
func finalReads(ctx context.Context, wl Workload, cn conn, h *history, opTimeout time.Duration) error {
	client := h.newClient()
	for _, op := range wl.Finals() {
		for {
			o := op
			o.Workload, o.Process, o.Client, o.Final = wl.Name(), -1, client, true
			execute(ctx, cn, h, &o, opTimeout, func(string) {})
			if o.Outcome == OK {
				h.add(o)
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("final %s %s: %s (%w)", o.Kind, o.Key, o.Err, ctx.Err())
			}
		}
	}
	return nil
}
