package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/slotraft/slotraft/cluster"
)

// Who believed it led which group, over the run: a poller asks every
// running node for SLOTRAFT STATUS and keeps only the node's own view of
// itself (the entry with its own id), so two nodes that both believe they
// lead a group — a deposed leader that has not noticed, or one paused and
// woken — both show. Groups are keyed by group id, which stays a group's
// name when its slots move.

const (
	leaderPollEvery   = 400 * time.Millisecond
	leaderPollTimeout = 1500 * time.Millisecond // STATUS waits up to 1 s for unreachable peers
)

// LeaderSpan is one node's belief that it led one group, from the first to
// the last poll that saw it (times since the history's start, ns).
type LeaderSpan struct {
	Group uint32 `json:"group"`
	Node  string `json:"node"`
	Term  uint64 `json:"term"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
}

// leaderPoller records LeaderSpans; addrs says, at each round, which client
// addresses to ask (the running nodes: a paused one would only time out).
type leaderPoller struct {
	addrs func() []string
	now   func() int64
	learn bool // also ask the nodes STATUS names (--target: only the seeds are known)

	mu      sync.Mutex
	clients map[string]*redis.Client
	open    map[spanKey]int // index in spans of a belief seen at the last poll of its node
	learned map[string]bool // client addresses of the nodes STATUS named
	spans   []LeaderSpan
}

type spanKey struct {
	group uint32
	node  string
	term  uint64
}

func newLeaderPoller(addrs func() []string, now func() int64) *leaderPoller {
	return &leaderPoller{addrs: addrs, now: now, clients: map[string]*redis.Client{}, open: map[spanKey]int{}, learned: map[string]bool{}}
}

// run polls until ctx ends, then closes its connections.
func (p *leaderPoller) run(ctx context.Context) {
	defer p.close()
	t := time.NewTicker(leaderPollEvery)
	defer t.Stop()
	for {
		p.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round asks every address at once (a node cut off by a partition takes
// a second to answer; the others must not wait for it) and records what
// each said of itself.
func (p *leaderPoller) round(ctx context.Context) {
	var wg sync.WaitGroup
	for _, a := range p.targets() {
		c := p.client(a)
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, leaderPollTimeout)
			defer cancel()
			cs, err := askStatus(cctx, c)
			if err == nil {
				p.observe(cs, p.now())
			}
		})
	}
	wg.Wait()
}

func askStatus(ctx context.Context, c *redis.Client) (cluster.ClusterStatus, error) {
	var cs cluster.ClusterStatus
	b, err := c.Do(ctx, "SLOTRAFT", "STATUS").Text()
	if err != nil {
		return cs, err
	}
	if err := json.Unmarshal([]byte(b), &cs); err != nil {
		return cs, fmt.Errorf("SLOTRAFT STATUS: %w", err)
	}
	return cs, nil
}

// targets are the addresses to ask this round, each once.
func (p *leaderPoller) targets() []string {
	addrs := p.addrs()
	p.mu.Lock()
	defer p.mu.Unlock()
	for a := range p.learned {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// observe extends the spans of the groups cs.Self leads in its own view
// and closes those of its groups it no longer leads.
func (p *leaderPoller) observe(cs cluster.ClusterStatus, t int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[spanKey]bool{}
	for _, n := range cs.Nodes {
		if p.learn && n.ClientAddr != "" {
			p.learned[n.ClientAddr] = true
		}
	}
	for _, g := range cs.Groups {
		for _, r := range g.Replicas {
			if r.Node != cs.Self || r.State != "Leader" {
				continue
			}
			k := spanKey{group: g.ID, node: cs.Self, term: r.Term}
			seen[k] = true
			if i, ok := p.open[k]; ok {
				p.spans[i].End = t
				continue
			}
			p.open[k] = len(p.spans)
			p.spans = append(p.spans, LeaderSpan{Group: g.ID, Node: cs.Self, Term: r.Term, Start: t, End: t})
		}
	}
	for k := range p.open {
		if k.node == cs.Self && !seen[k] {
			delete(p.open, k)
		}
	}
}

func (p *leaderPoller) client(addr string) *redis.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.clients[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 300 * time.Millisecond,
			ReadTimeout: leaderPollTimeout, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 1})
		p.clients[addr] = c
	}
	return c
}

func (p *leaderPoller) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.clients {
		_ = c.Close()
	}
	clear(p.clients)
}

// result is the spans recorded, in the order they began.
func (p *leaderPoller) result() []LeaderSpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]LeaderSpan(nil), p.spans...)
}

// pollLeaders starts the poller; the returned func stops it and returns
// what it recorded.
func (r *chaosRun) pollLeaders(ctx context.Context) func() []LeaderSpan {
	p := newLeaderPoller(r.runningAddrs, r.h.now)
	p.learn = len(r.o.Target) > 0
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx)
	}()
	return func() []LeaderSpan {
		cancel()
		<-done
		return p.result()
	}
}

// runningAddrs are the client addresses of the nodes running right now.
func (r *chaosRun) runningAddrs() []string {
	var out []string
	for _, n := range r.nodes {
		if n.running() {
			out = append(out, n.client)
		}
	}
	return out
}
