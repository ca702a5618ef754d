package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Pub/sub messages carry their send time: 'm' then the nanoseconds since
// the run's clock origin, then ':' and padding. Warm-up messages start with
// 'w' and are not counted.
const (
	pubsubMeasured = 'm'
	pubsubWarmup   = 'w'
)

// pubsubIdle is how long a round waits for one more delivery after the
// publishers finished before it counts the missing messages as lost.
const pubsubIdle = 3 * time.Second

type pubsubFlags struct {
	benchCommon
	subscribers []int
	messages    int
	publishers  int
	size        int
}

// runBenchPubSub implements `slotraft bench pubsub`: for each subscriber
// count, subscribers (one connection each, spread round-robin over the
// addresses) SUBSCRIBE to one channel; publishers (round-robin too) PUBLISH
// --messages messages at pipeline 1; every delivery's latency is its
// receive time minus the send time embedded in the message.
func runBenchPubSub(args []string, stdout, stderr io.Writer) error {
	fs := newBenchFlagSet("pubsub", "PUBLISH to N subscribers spread over the nodes: messages delivered per second, publish-to-delivery latency.", stderr)
	f := &pubsubFlags{}
	f.register(fs, 10*time.Minute)
	fs.Func("subscribers", "comma-separated subscriber counts, one round each (default 1,10,100)", func(s string) error {
		f.subscribers = nil
		for _, p := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 1 {
				return fmt.Errorf("bad subscriber count %q", p)
			}
			f.subscribers = append(f.subscribers, n)
		}
		return nil
	})
	fs.IntVar(&f.messages, "messages", 10000, "messages published per round")
	fs.IntVar(&f.publishers, "publishers", 4, "concurrent publishing connections, one PUBLISH in flight each")
	fs.IntVar(&f.size, "size", 32, "message size in bytes (at least the timestamp)")
	if err := parseBenchFlags(fs, &f.benchCommon, args, stderr); err != nil {
		return err
	}
	if len(f.subscribers) == 0 {
		f.subscribers = []int{1, 10, 100}
	}
	if f.messages < 1 || f.publishers < 1 {
		fmt.Fprintln(stderr, "slotraft bench pubsub: --messages and --publishers must be at least 1")
		return errUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	if f.csv {
		fmt.Fprintln(stdout, benchCSVHeader)
	}
	id := benchRunID()
	for i, subs := range f.subscribers {
		test := "PUBSUB-" + strconv.Itoa(subs)
		r := &pubsubRound{f: f, channel: "bench:pubsub:" + id + ":" + strconv.Itoa(i), subs: subs}
		s, err := r.run(ctx)
		if isUnknownCommand(err) {
			// The target has no pub/sub: say so for every round.
			fmt.Fprintf(stderr, "slotraft bench pubsub: not supported by the target: %v\n", err)
			for _, n := range f.subscribers[i:] {
				writeNotAvailable(stdout, f.csv, "PUBSUB-"+strconv.Itoa(n), err.Error())
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", test, err)
		}
		if s.errors > 0 {
			fmt.Fprintf(stderr, "slotraft bench pubsub: %s: %d of %d deliveries missing or publishes failed\n", test, s.errors, s.count+s.errors)
		}
		writeSummary(stdout, f.csv, test, s)
	}
	return nil
}

// isUnknownCommand tells whether a server answered "unknown command".
func isUnknownCommand(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command")
}

// pubsubRound is one subscriber count's run.
type pubsubRound struct {
	f       *pubsubFlags
	channel string
	subs    int
	origin  time.Time // the clock the embedded send times count from

	warmed    atomic.Int64 // subscribers that saw a warm-up message
	delivered atomic.Int64 // measured messages received, all subscribers
	lastRecv  atomic.Int64 // nanoseconds since origin of the latest delivery
}

// pubsubSub is one subscriber: its connection and what it received.
type pubsubSub struct {
	rdb       *redis.Client
	ps        *redis.PubSub
	warmed    bool
	got       int
	latencies []time.Duration
}

func (r *pubsubRound) run(ctx context.Context) (latencySummary, error) {
	r.origin = time.Now()
	subs, err := r.subscribe(ctx)
	defer closeSubs(subs)
	if err != nil {
		return latencySummary{}, err
	}
	pubs := make([]*redis.Client, r.f.publishers)
	for i := range pubs {
		pubs[i] = redis.NewClient(&redis.Options{Addr: r.f.addrs[i%len(r.f.addrs)], PoolSize: 1, ReadTimeout: 10 * time.Second})
		defer pubs[i].Close()
	}
	var wg sync.WaitGroup
	for _, s := range subs {
		wg.Go(func() { r.receive(ctx, s) })
	}
	if err := r.warmUp(ctx, pubs[0]); err != nil {
		closeSubs(subs)
		wg.Wait()
		return latencySummary{}, err
	}
	start := time.Now()
	published, firstErr := r.publish(ctx, pubs)
	r.drain(ctx, int64(published)*int64(r.subs))
	closeSubs(subs) // ends receivers still waiting for lost messages
	wg.Wait()
	if published == 0 {
		return latencySummary{}, fmt.Errorf("every PUBLISH failed: %w", firstErr)
	}
	var samples []time.Duration
	for _, s := range subs {
		samples = append(samples, s.latencies...)
	}
	// Every delivery that did not happen is an error, whether its PUBLISH
	// failed or the message was lost: count + errors = subscribers × messages.
	missing := r.f.messages*r.subs - len(samples)
	elapsed := r.origin.Add(time.Duration(r.lastRecv.Load())).Sub(start)
	return summarize(samples, max(missing, 0), elapsed), nil
}

// subscribe opens the subscribers and waits for each confirmation, so an
// unknown-command error surfaces here.
func (r *pubsubRound) subscribe(ctx context.Context) ([]*pubsubSub, error) {
	subs := make([]*pubsubSub, 0, r.subs)
	for i := range r.subs {
		rdb := redis.NewClient(&redis.Options{Addr: r.f.addrs[i%len(r.f.addrs)], PoolSize: 1})
		s := &pubsubSub{rdb: rdb, ps: rdb.Subscribe(ctx, r.channel)}
		subs = append(subs, s)
		msg, err := s.ps.Receive(ctx)
		if err != nil {
			return subs, fmt.Errorf("SUBSCRIBE on %s: %w", rdb.Options().Addr, err)
		}
		if _, ok := msg.(*redis.Subscription); !ok {
			return subs, fmt.Errorf("SUBSCRIBE on %s: got %T, want a subscription", rdb.Options().Addr, msg)
		}
	}
	return subs, nil
}

func closeSubs(subs []*pubsubSub) {
	for _, s := range subs {
		_ = s.ps.Close()
		_ = s.rdb.Close()
	}
}

// receive counts s's measured messages until it has all of them or its
// connection is closed.
func (r *pubsubRound) receive(ctx context.Context, s *pubsubSub) {
	for s.got < r.f.messages {
		msg, err := s.ps.ReceiveMessage(ctx)
		if err != nil {
			return // closed at the end of the round, or broken: its messages count as lost
		}
		now := time.Since(r.origin)
		switch payload := msg.Payload; {
		case payload == "":
		case payload[0] == pubsubWarmup:
			if !s.warmed {
				s.warmed = true
				r.warmed.Add(1)
			}
		case payload[0] == pubsubMeasured:
			sent, ok := parseSendTime(payload)
			if !ok {
				continue
			}
			s.latencies = append(s.latencies, now-sent)
			s.got++
			r.delivered.Add(1)
			storeMax(&r.lastRecv, int64(now))
		}
	}
}

// storeMax raises v to n unless it is already larger.
func storeMax(v *atomic.Int64, n int64) {
	for {
		old := v.Load()
		if old >= n || v.CompareAndSwap(old, n) {
			return
		}
	}
}

func parseSendTime(payload string) (time.Duration, bool) {
	digits, _, ok := strings.Cut(payload[1:], ":")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return time.Duration(n), err == nil
}

// warmUp publishes warm-up messages until every subscriber received one:
// a subscription may reach other nodes a little after it was confirmed.
func (r *pubsubRound) warmUp(ctx context.Context, pub *redis.Client) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(15 * time.Second)
	for r.warmed.Load() < int64(r.subs) {
		if err := pub.Publish(ctx, r.channel, string(pubsubWarmup)).Err(); err != nil {
			return fmt.Errorf("PUBLISH on %s: %w", pub.Options().Addr, err)
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("only %d of %d subscribers received a warm-up message within 15s", r.warmed.Load(), r.subs)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// publish sends the round's messages from every publisher and returns how
// many were accepted, and the first failure.
func (r *pubsubRound) publish(ctx context.Context, pubs []*redis.Client) (ok int, firstErr error) {
	var next, okN atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	pad := strings.Repeat("x", r.f.size)
	for _, pub := range pubs {
		wg.Go(func() {
			for ctx.Err() == nil && next.Add(1) <= int64(r.f.messages) {
				msg := string(pubsubMeasured) + strconv.FormatInt(int64(time.Since(r.origin)), 10) + ":"
				msg += pad[:max(0, r.f.size-len(msg))]
				if err := pub.Publish(ctx, r.channel, msg).Err(); err != nil {
					once.Do(func() { firstErr = err })
					continue
				}
				okN.Add(1)
			}
		})
	}
	wg.Wait()
	return int(okN.Load()), firstErr
}

// drain waits until want deliveries arrived, or none arrived for
// pubsubIdle, or ctx ends.
func (r *pubsubRound) drain(ctx context.Context, want int64) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, lastChange := r.delivered.Load(), time.Now()
	for last < want && time.Since(lastChange) < pubsubIdle {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n := r.delivered.Load(); n != last {
			last, lastChange = n, time.Now()
		}
	}
}
