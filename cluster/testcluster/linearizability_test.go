package testcluster_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/cluster/transport"
)

// Linearizability under faults: concurrent clients read and write a few
// keys of every group while a leader is stopped and restarted, and while a
// leader is cut off into a minority and healed. Porcupine checks the
// recorded history; lostWrites checks that every acknowledged write shows
// at the end. TestLinearizabilityCheckerSeesStaleReads proves the checker
// can fail.

const (
	linClients   = 8
	linMaxOps    = 8000                  // history size bound: porcupine stays fast
	linPace      = 15 * time.Millisecond // a client starts at most one operation per linPace
	linMaxTime   = 60 * time.Second      // the workload's own bound, whatever the test does
	linOpTimeout = 5 * time.Second       // a client's patience for one operation
	linProgress  = 50                    // successful operations that show a group serves
	linWait      = 30 * time.Second      // how long a phase may wait for progress
)

// linKey is a key of the workload: a register (SET/GET) or a counter
// (INCR/GET) in group index gi.
type linKey struct {
	name    string
	counter bool
	gi      int
}

// linKeys are two registers and a counter in every group.
func linKeys(t *testing.T, c *testcluster.Cluster) []linKey {
	t.Helper()
	var keys []linKey
	for gi := range len(c.Node(firstRunning(c)).Groups()) {
		for j, counter := range []bool{false, false, true} {
			k, _ := keyInGroup(t, c, gi, fmt.Sprintf("lin:%d:%d:", gi, j))
			keys = append(keys, linKey{name: k, counter: counter, gi: gi})
		}
	}
	return keys
}

// workload runs the clients and records their history.
type workload struct {
	h      *history
	addrs  []string
	keys   []linKey
	ok     []atomic.Int64 // successful operations per group index
	ops    atomic.Int64   // operations started
	values atomic.Int64   // SET values, unique
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	unknown atomic.Int64
	dropped atomic.Int64
}

func newWorkload(c *testcluster.Cluster, keys []linKey) *workload {
	return &workload{
		h: newHistory(), addrs: c.Addrs(), keys: keys,
		ok: make([]atomic.Int64, len(c.Node(firstRunning(c)).Groups())), stop: make(chan struct{}),
	}
}

func (w *workload) start(clients int) {
	deadline := time.Now().Add(linMaxTime)
	for i := range clients {
		w.wg.Go(func() { w.client(i, deadline) })
	}
}

// halt stops the clients and waits for them; safe to call twice.
func (w *workload) halt() {
	w.once.Do(func() { close(w.stop) })
	w.wg.Wait()
}

func (w *workload) client(i int, deadline time.Time) {
	kc := newKVClient(w.addrs, i)
	defer kc.close()
	rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	id := w.h.newClient()
	tick := time.NewTicker(linPace)
	defer tick.Stop()
	for w.ops.Add(1) <= linMaxOps && time.Now().Before(deadline) {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		k := w.keys[rng.IntN(len(w.keys))]
		in := kvInput{op: opGet, key: k.name}
		switch {
		case rng.IntN(2) == 0:
		case k.counter:
			in.op = opIncr
		default:
			in.op, in.value = opSet, strconv.FormatInt(w.values.Add(1), 10)
		}
		if w.do(kc, id, k, in) {
			id = w.h.newClient()
		}
	}
}

// do runs one operation and records it; true if its outcome is unknown
// (the client must take a new id).
func (w *workload) do(kc *kvClient, id int, k linKey, in kvInput) bool {
	call := w.h.now()
	r, err := kc.do(in.key, in.args(), time.Now().Add(linOpTimeout))
	ret := w.h.now()
	switch {
	case err == nil:
		w.h.add(id, in, call, outputOf(r), ret)
		w.ok[k.gi].Add(1)
		return false
	case in.op == opGet || errors.Is(err, errDefinite):
		w.dropped.Add(1)
		return false
	}
	w.h.add(id, in, call, kvOutput{unknown: true}, ret)
	w.unknown.Add(1)
	return true
}

func (in kvInput) args() []string {
	switch in.op {
	case opSet:
		return []string{"SET", in.key, in.value}
	case opIncr:
		return []string{"INCR", in.key}
	}
	return []string{"GET", in.key}
}

func outputOf(r reply) kvOutput {
	return kvOutput{value: r.text, exists: !r.isNil}
}

// waitProgress waits until each group of gis has served n more operations
// than when it was called.
func (w *workload) waitProgress(t *testing.T, gis []int, n int64, phase string) {
	t.Helper()
	base := make([]int64, len(gis))
	for i, gi := range gis {
		base[i] = w.ok[gi].Load()
	}
	deadline := time.Now().Add(linWait)
	for {
		done := true
		for i, gi := range gis {
			done = done && w.ok[gi].Load() >= base[i]+n
		}
		if done {
			return
		}
		if time.Now().After(deadline) || w.ops.Load() > linMaxOps {
			w.halt()
			t.Fatalf("%s: groups %v served no %d operations within %v (%d operations so far)", phase, gis, n, linWait, w.ops.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func allGroups(w *workload) []int {
	gis := make([]int, len(w.ok))
	for i := range gis {
		gis[i] = i
	}
	return gis
}

func TestLinearizableUnderFaults(t *testing.T) {
	faults := transport.NewFaults()
	c := testcluster.New(t, 3, testcluster.Options{Faults: faults})
	c.WaitReady(30 * time.Second)
	keys := linKeys(t, c)
	w := newWorkload(c, keys)
	begin := time.Now()
	w.start(linClients)
	defer w.halt()
	w.waitProgress(t, allGroups(w), linProgress, "warm-up")

	// (a) Stop the leader of group 0 and start it again.
	victim := waitLeader(t, c, 0)
	t0 := time.Now()
	c.StopNode(victim)
	w.waitProgress(t, []int{0}, linProgress, fmt.Sprintf("after stopping node %d", victim))
	t.Logf("group 0 served again %v after its leader (node %d) stopped", time.Since(t0).Round(time.Millisecond), victim)
	c.RestartNode(victim)
	// The restarted node takes back the leadership of the groups that
	// prefer it (a leadership transfer under load); wait for that, so that
	// no transfer moves the leader of (b) under the test's feet.
	c.WaitReady(linWait)
	w.waitProgress(t, allGroups(w), linProgress, fmt.Sprintf("after restarting node %d", victim))

	// (b) Cut the leader of group 1 off from the other nodes' bus links.
	// Clients still reach it: it must neither serve a read nor acknowledge
	// a write, before or after it notices it is deposed.
	gi := 1
	x := waitLeader(t, c, gi)
	probeKey := keys[gi*3].name // a register of group gi
	px := newProber(t, w, c.Addrs()[x], probeKey)
	t1 := time.Now()
	faults.Isolate(c.Peers()[x].ID)
	px.probe("right after the cut")
	w.waitProgress(t, []int{gi}, linProgress, fmt.Sprintf("after cutting off node %d", x))
	t.Logf("group %d served again %v after its leader (node %d) was cut off", gi, time.Since(t1).Round(time.Millisecond), x)
	px.probe("once the majority serves")
	faults.HealAll()
	c.WaitLeaders(linWait)
	w.waitProgress(t, allGroups(w), linProgress, "after healing")
	w.halt()
	t.Logf("workload: %d operations recorded (%d outcome unknown, %d failed and dropped) in %v",
		len(w.h.operations()), w.unknown.Load(), w.dropped.Load(), time.Since(begin).Round(time.Millisecond))

	final := finalReads(t, w)
	ops := w.h.operations()
	t.Logf("median latency: %s", medianLatencies(ops))
	for _, msg := range lostWrites(ops, final) {
		t.Errorf("lost write: %s", msg)
	}
	checkLinearizable(t, ops, porcupine.Ok)
}

// waitLeader is the index of the node leading group gi, once there is one.
func waitLeader(t *testing.T, c *testcluster.Cluster, gi int) int {
	t.Helper()
	deadline := time.Now().Add(linWait)
	for {
		if li := c.LeaderIndex(gi); li >= 0 {
			return li
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %d has no leader after %v", gi, linWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finalReads reads every key once the faults are healed, recording the
// reads in the history too.
func finalReads(t *testing.T, w *workload) map[string]kvOutput {
	t.Helper()
	kc := newKVClient(w.addrs, 0)
	defer kc.close()
	id := w.h.newClient()
	final := map[string]kvOutput{}
	for _, k := range w.keys {
		in := kvInput{op: opGet, key: k.name}
		call := w.h.now()
		r, err := kc.do(k.name, in.args(), time.Now().Add(linWait))
		if err != nil {
			t.Fatalf("final GET %s: %v", k.name, err)
		}
		out := outputOf(r)
		w.h.add(id, in, call, out, w.h.now())
		final[k.name] = out
	}
	return final
}

// prober sends commands straight to one node, following no redirect.
type prober struct {
	t    *testing.T
	w    *workload
	addr string
	key  string
}

func newProber(t *testing.T, w *workload, addr, key string) *prober {
	return &prober{t: t, w: w, addr: addr, key: key}
}

// probe sends a GET and a SET at once, on two connections, and fails the
// test if the node answers either with anything but an error. Both are
// recorded: a read that returned a value, a write whose outcome is unknown.
func (p *prober) probe(when string) {
	p.t.Helper()
	var wg sync.WaitGroup
	results := make([]string, 2)
	for i, in := range []kvInput{
		{op: opGet, key: p.key},
		{op: opSet, key: p.key, value: strconv.FormatInt(p.w.values.Add(1), 10)},
	} {
		wg.Go(func() { results[i] = p.one(in) })
	}
	wg.Wait()
	for _, r := range results {
		if r != "" {
			p.t.Errorf("%s: %s", when, r)
		}
	}
}

// one sends in and returns a complaint, or "" if the node refused it.
func (p *prober) one(in kvInput) string {
	kc := newKVClient([]string{p.addr}, 0)
	kc.once = true
	defer kc.close()
	id := p.w.h.newClient()
	call := p.w.h.now()
	r, err := kc.do(in.key, in.args(), time.Now().Add(linWait))
	ret := p.w.h.now()
	switch {
	case err == nil:
		p.w.h.add(id, in, call, outputOf(r), ret)
		return fmt.Sprintf("the deposed leader answered %s %s with %q", in.op, in.key, r.text)
	case errors.Is(err, errDefinite):
	case in.op != opGet:
		p.w.h.add(id, in, call, kvOutput{unknown: true}, ret)
	}
	p.t.Logf("deposed leader refused %s: %v", in.op, err)
	return ""
}

// TestLinearizabilityCheckerSeesStaleReads proves the checker can fail. A
// READONLY connection reads from a follower (stale by design, as in Redis
// Cluster) that was cut off before a newer write was acknowledged by the
// majority: the read returns the older value after the newer write
// returned, which porcupine must call Illegal. The same read without
// READONLY is redirected to the leader and the history stays linearizable.
// Every step waits for the previous one, so the anomaly is certain.
func TestLinearizabilityCheckerSeesStaleReads(t *testing.T) {
	faults := transport.NewFaults()
	c := testcluster.New(t, 3, testcluster.Options{Faults: faults})
	c.WaitReady(30 * time.Second)
	gi := 0
	key, _ := keyInGroup(t, c, gi, "stale:")
	leader := waitLeader(t, c, gi)
	follower := (leader + 1) % c.Len()
	h := newHistory()
	writer := newKVClient(c.Addrs(), leader)
	defer writer.close()
	set := func(v string) {
		t.Helper()
		in := kvInput{op: opSet, key: key, value: v}
		call := h.now()
		r, err := writer.do(key, in.args(), time.Now().Add(linWait))
		if err != nil {
			t.Fatalf("SET %s %s: %v", key, v, err)
		}
		h.add(h.newClient(), in, call, outputOf(r), h.now())
	}
	stale := newKVClient([]string{c.Addrs()[follower]}, 0)
	stale.readonly, stale.once = true, true
	defer stale.close()

	set("1")
	pollFollower(t, stale, key, "1") // the follower has applied SET 1
	faults.Isolate(c.Peers()[follower].ID)
	defer faults.HealAll()
	set("2") // acknowledged by the leader and the other follower

	staleRead := readInto(t, h, stale, key)
	if staleRead.Output.(kvOutput).value != "1" {
		t.Fatalf("READONLY GET on the cut-off follower = %s, want the stale \"1\"", staleRead.Output)
	}
	linear := newKVClient(c.Addrs(), follower) // first asks the follower, which redirects
	defer linear.close()
	linearRead := readInto(t, h, linear, key)
	if linearRead.Output.(kvOutput).value != "2" {
		t.Fatalf("GET = %s, want \"2\"", linearRead.Output)
	}

	ops := h.operations()
	t.Run("without the stale read", func(t *testing.T) {
		var ok []porcupine.Operation
		for _, op := range ops {
			if op.ClientId != staleRead.ClientId {
				ok = append(ok, op)
			}
		}
		checkLinearizable(t, ok, porcupine.Ok)
	})
	t.Run("with the stale read", func(t *testing.T) {
		checkLinearizable(t, ops, porcupine.Illegal)
	})
}

// pollFollower waits until a READONLY read of key returns want.
func pollFollower(t *testing.T, kc *kvClient, key, want string) {
	t.Helper()
	deadline := time.Now().Add(linWait)
	for {
		r, err := kc.do(key, []string{"GET", key}, deadline)
		if err == nil && r.text == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("follower: GET %s = %q, %v; want %q", key, r.text, err, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readInto GETs key through kc and records the read in h.
func readInto(t *testing.T, h *history, kc *kvClient, key string) porcupine.Operation {
	t.Helper()
	in := kvInput{op: opGet, key: key}
	call := h.now()
	r, err := kc.do(key, in.args(), time.Now().Add(linWait))
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	op := porcupine.Operation{ClientId: h.newClient(), Input: in, Call: call, Output: outputOf(r), Return: h.now()}
	h.add(op.ClientId, in, call, outputOf(r), op.Return)
	return op
}

// TestLinearizabilityModel checks the model and lostWrites on small
// histories written by hand.
func TestLinearizabilityModel(t *testing.T) {
	get := func(v string) kvOutput { return kvOutput{value: v, exists: v != ""} }
	ok := kvOutput{value: "OK", exists: true}
	unknown := kvOutput{unknown: true}
	op := func(client int, o kvOp, value string, call, ret int64, out kvOutput) porcupine.Operation {
		if out.unknown {
			ret = unknownReturn
		}
		return porcupine.Operation{ClientId: client, Input: kvInput{op: o, key: "k", value: value}, Call: call, Output: out, Return: ret}
	}
	tests := []struct {
		name  string
		ops   []porcupine.Operation
		want  porcupine.CheckResult
		final kvOutput // the key's value at the end
		bad   bool     // lostWrites reports a violation
	}{
		{"set then get", []porcupine.Operation{op(0, opSet, "a", 0, 10, ok), op(1, opGet, "", 20, 30, get("a"))}, porcupine.Ok, get("a"), false},
		{"stale get", []porcupine.Operation{op(0, opSet, "a", 0, 10, ok), op(0, opSet, "b", 20, 30, ok), op(1, opGet, "", 40, 50, get("a"))}, porcupine.Illegal, get("b"), false},
		{"concurrent get sees either", []porcupine.Operation{op(0, opSet, "a", 0, 10, ok), op(0, opSet, "b", 20, 50, ok), op(1, opGet, "", 30, 40, get("a"))}, porcupine.Ok, get("b"), false},
		{"unknown set applied", []porcupine.Operation{op(0, opSet, "a", 0, 10, ok), op(1, opSet, "b", 20, 0, unknown), op(2, opGet, "", 40, 50, get("b"))}, porcupine.Ok, get("b"), false},
		{"unknown set not applied", []porcupine.Operation{op(0, opSet, "a", 0, 10, ok), op(1, opSet, "b", 20, 0, unknown), op(2, opGet, "", 40, 50, get("a"))}, porcupine.Ok, get("a"), false},
		{"unknown set applied, then undone", []porcupine.Operation{op(1, opSet, "b", 0, 0, unknown), op(0, opGet, "", 10, 20, get("b")), op(0, opGet, "", 30, 40, get(""))}, porcupine.Illegal, get(""), false},
		{"lost set", []porcupine.Operation{op(0, opSet, "a", 0, 10, ok), op(0, opSet, "b", 20, 30, ok)}, porcupine.Ok, get("a"), true},
		{"incr", []porcupine.Operation{op(0, opIncr, "", 0, 10, get("1")), op(1, opIncr, "", 5, 15, get("2")), op(0, opGet, "", 20, 30, get("2"))}, porcupine.Ok, get("2"), false},
		{"incr applied twice", []porcupine.Operation{op(0, opIncr, "", 0, 10, get("2")), op(0, opGet, "", 20, 30, get("2"))}, porcupine.Illegal, get("2"), true},
		{"unknown incr", []porcupine.Operation{op(1, opIncr, "", 0, 0, unknown), op(0, opIncr, "", 5, 10, get("2"))}, porcupine.Ok, get("2"), false},
		{"lost incr", []porcupine.Operation{op(0, opIncr, "", 0, 10, get("1")), op(0, opIncr, "", 20, 30, get("2"))}, porcupine.Ok, get("1"), true},
		{"phantom incr", []porcupine.Operation{op(0, opIncr, "", 0, 10, get("1"))}, porcupine.Ok, get("2"), true},
	}
	for _, tc := range tests {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if got := porcupine.CheckOperations(kvModel, tc.ops); got != (tc.want == porcupine.Ok) {
				t.Errorf("linearizable = %v, want %s", got, tc.want)
			}
			lost := lostWrites(tc.ops, map[string]kvOutput{"k": tc.final})
			if (len(lost) > 0) != tc.bad {
				t.Errorf("lostWrites = %q, want a violation: %v", lost, tc.bad)
			}
		})
	}
}

// medianLatencies describes the median latency of each kind of operation
// whose outcome is known.
func medianLatencies(ops []porcupine.Operation) string {
	byOp := map[kvOp][]time.Duration{}
	for _, op := range ops {
		if op.Return != unknownReturn {
			o := op.Input.(kvInput).op
			byOp[o] = append(byOp[o], time.Duration(op.Return-op.Call))
		}
	}
	var parts []string
	for _, o := range []kvOp{opGet, opSet, opIncr} {
		if d := byOp[o]; len(d) > 0 {
			slices.Sort(d)
			parts = append(parts, fmt.Sprintf("%s %v (%d)", o, d[len(d)/2].Round(100*time.Microsecond), len(d)))
		}
	}
	return strings.Join(parts, ", ")
}
