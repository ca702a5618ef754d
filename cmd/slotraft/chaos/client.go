package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// casScript sets KEYS[1] to ARGV[2] if it holds ARGV[1]: 1 if it did, 0
// if not. One EVAL is one log entry, so the compare and the set are atomic.
const casScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`

// Retry pacing of attempts that were refused before reaching a log.
const (
	retryFirst = 5 * time.Millisecond
	retryMax   = 20 * time.Millisecond
)

// conn is how a client process reaches the cluster. Two kinds exist, as
// in the wild: a slot-map client (go-redis's ClusterClient) that sends each
// command to the node its map names, and a hopping client that sends each
// command to a random node and follows the redirect, as redis-cli -c does.
// The second asks nodes that are not the leader all the time, so a node
// that wrongly believes it leads, or a new leader that has not caught up,
// is asked too, within milliseconds of an election.
type conn interface {
	// attempt sends cmd once, following MOVED as the client does.
	attempt(ctx context.Context, cmd redis.Cmder) error
	// refused hears that an attempt was refused (kind), before a retry.
	refused(ctx context.Context, kind string)
	close()
}

// newConn is process i's connection: even processes use the slot map
// (seeded with the members at the start; it learns joined nodes from
// CLUSTER SLOTS), odd ones hop, starting each attempt at one of the
// members of that moment (addrs).
func newConn(i int, addrs func() []string, opTimeout time.Duration, seed uint64) conn {
	if i%2 == 0 {
		return clusterConn{newClusterClient(addrs(), opTimeout)}
	}
	return newHopConn(addrs, opTimeout, seed)
}

// newClusterClient is a go-redis cluster client. It follows MOVED and ASK
// itself; every other retry is the workload's, which retries only what
// certainly did not happen (noRetry): go-redis would otherwise resend a
// write after a lost connection, and an INCRBY applied twice is not the
// server's fault.
func newClusterClient(addrs []string, opTimeout time.Duration) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                      addrs,
		MaxRedirects:               8,
		DialTimeout:                500 * time.Millisecond,
		DialerRetries:              1, // a refused dial is retried by execute, after a pause
		ReadTimeout:                opTimeout,
		WriteTimeout:               opTimeout,
		ContextTimeoutEnabled:      true,
		PoolSize:                   2,
		DisableRoutingPolicies:     true,
		ClusterStateReloadInterval: time.Second,
	})
}

// clusterConn is the slot-map client.
type clusterConn struct{ rc *redis.ClusterClient }

func (c clusterConn) attempt(ctx context.Context, cmd redis.Cmder) error {
	_ = c.rc.Process(ctx, noRetry{cmd})
	return cmd.Err()
}

func (c clusterConn) refused(ctx context.Context, kind string) {
	if kind == "connection refused" || kind == "CLUSTERDOWN" {
		c.rc.ReloadState(ctx) // a dead or deposed node: ask again who leads
	}
}

func (c clusterConn) close() { _ = c.rc.Close() }

// noRetry makes go-redis hand every error back at once instead of resending
// the command itself (it still follows redirects).
type noRetry struct{ redis.Cmder }

func (noRetry) NoRetry() bool { return true }

// quietLogger drops go-redis's own log lines (every refused dial while a
// node is down): the run counts failed attempts by kind instead.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// maxHops bounds the redirects one attempt of the hopping client follows.
const maxHops = 5

// hopConn is the hopping client: one go-redis client per node.
type hopConn struct {
	addrs   func() []string
	clients map[string]*redis.Client
	opts    redis.Options
	rng     *rand.Rand
}

func newHopConn(addrs func() []string, opTimeout time.Duration, seed uint64) *hopConn {
	return &hopConn{addrs: addrs, clients: map[string]*redis.Client{}, rng: rand.New(rand.NewPCG(seed, 0x686f70)),
		opts: redis.Options{DialTimeout: 500 * time.Millisecond, DialerRetries: 1, ReadTimeout: opTimeout, WriteTimeout: opTimeout,
			ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1}}
}

func (c *hopConn) client(addr string) *redis.Client {
	cl := c.clients[addr]
	if cl == nil {
		o := c.opts
		o.Addr = addr
		cl = redis.NewClient(&o)
		c.clients[addr] = cl
	}
	return cl
}

// attempt starts at a random node and follows MOVED (ASKING before a
// command sent after ASK), up to maxHops.
func (c *hopConn) attempt(ctx context.Context, cmd redis.Cmder) error {
	addrs := c.addrs()
	addr := addrs[c.rng.IntN(len(addrs))]
	asking := false
	for range maxHops {
		cl := c.client(addr)
		if asking {
			pipe := cl.Pipeline()
			pipe.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
			pipe.Process(ctx, cmd)
			_, _ = pipe.Exec(ctx)
		} else {
			_ = cl.Process(ctx, cmd)
		}
		err := cmd.Err()
		to, ask, ok := redirect(err)
		if !ok {
			return err
		}
		addr, asking = to, ask
		cmd.SetErr(nil)
	}
	return cmd.Err()
}

// redirect parses a MOVED or ASK error: the address and whether it was ASK.
func redirect(err error) (addr string, ask, ok bool) {
	var rerr redis.Error
	if err == nil || !errors.As(err, &rerr) {
		return "", false, false
	}
	f := strings.Fields(rerr.Error())
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return "", false, false
	}
	return f[2], f[0] == "ASK", true
}

func (c *hopConn) refused(context.Context, string) {} // the next attempt starts at another random node

func (c *hopConn) close() {
	for _, cl := range c.clients {
		_ = cl.Close()
	}
}

// attemptFunc reports a refused or failed attempt, by kind, as it happens.
type attemptFunc func(kind string)

// execute runs op through rc until it succeeds, fails in a way that may
// have changed state, or its deadline passes. Attempts refused before they
// reached a log are retried after a pause. It fills op's outcome and times.
func execute(ctx context.Context, cn conn, h *history, op *Op, opTimeout time.Duration, onErr attemptFunc) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	op.Call = h.now()
	h.call(op)
	pause := retryFirst
	for {
		op.Attempts++
		cmd := newCommand(ctx, op)
		err := decodeReply(op, cmd, cn.attempt(ctx, cmd))
		op.Return = h.now()
		out, kind := classify(err, op.write())
		op.Outcome, op.ErrKind = out, kind
		if err == nil {
			op.Err = ""
			return
		}
		op.Err = err.Error()
		onErr(kind)
		if out != Fail || ctx.Err() != nil {
			return
		}
		cn.refused(ctx, kind)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, retryMax)
	}
}

// refusals are replies to commands that never reached a log, so nothing
// happened and a retry is safe.
var refusals = map[string]bool{
	"MOVED": true, "ASK": true, "CLUSTERDOWN": true, "TRYAGAIN": true,
	"LOADING": true, "MASTERDOWN": true, "READONLY": true,
}

// outcomeUnknownText starts resp.ErrOutcomeUnknown's reply.
const outcomeUnknownText = "ERR write outcome unknown"

// classify tells what an error means for an operation: Fail when it
// certainly did not happen (or is a read), Unknown when a write may have.
// kind names the error for the counts.
func classify(err error, write bool) (Outcome, string) {
	if err == nil {
		return OK, ""
	}
	maybe := Fail
	if write {
		maybe = Unknown
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		word, _, _ := strings.Cut(msg, " ")
		switch {
		case refusals[word]:
			return Fail, word
		case strings.HasPrefix(msg, outcomeUnknownText):
			return maybe, "outcome unknown"
		}
		return maybe, "error reply " + word
	}
	var op *net.OpError
	switch {
	case errors.As(err, &op) && op.Op == "dial":
		return Fail, "connection refused" // nothing was sent
	case errors.Is(err, redis.ErrClosed), strings.Contains(err.Error(), "connection pool timeout"):
		return Fail, "no connection"
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return maybe, "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return maybe, "connection lost"
	case errors.Is(err, context.Canceled):
		return maybe, "cancelled"
	}
	return maybe, fmt.Sprintf("other (%T)", err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
