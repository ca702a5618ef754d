package chaos

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// registers: GET, SET of unique values and compare-and-set by Lua on a few
// keys of every group; each key is checked for linearizability with
// porcupine. A write whose outcome is unknown has an infinite return time
// (it may take effect at any point after its call, or never); a failed
// read observed nothing and is left out.

// registersPerGroup is how many register keys each group holds.
const registersPerGroup = 2

// checkBudget bounds porcupine's search over one workload's keys; a key
// not decided in time makes the verdict inconclusive, never "ok".
const checkBudget = 2 * time.Minute

type registers struct{ keys []string }

func (w *registers) Name() string { return "registers" }

func (w *registers) Setup(k *keyPicker) { w.keys = k.spread("reg", registersPerGroup) }

// Next: half reads, three in ten SETs, two in ten CASes from the value the
// process last saw (or a value no key holds, which must fail).
func (w *registers) Next(rng *rand.Rand, p *process) Op {
	key := w.keys[rng.IntN(len(w.keys))]
	switch r := rng.IntN(10); {
	case r < 5:
		return Op{Kind: "GET", Key: key}
	case r < 8:
		return Op{Kind: "SET", Key: key, Value: p.unique()}
	}
	old, ok := p.seen[key]
	if !ok {
		old = "never-written"
	}
	return Op{Kind: "CAS", Key: key, Old: old, Value: p.unique()}
}

func (w *registers) Finals() []Op {
	ops := make([]Op, len(w.keys))
	for i, k := range w.keys {
		ops[i] = Op{Kind: "GET", Key: k}
	}
	return ops
}

// Check runs porcupine on every key (in parallel, within checkBudget) and
// explains what it can: a read that returned a value overwritten before it
// began is a stale read, whatever porcupine says.
func (w *registers) Check(ctx context.Context, ops []Op, events []Event) Verdict {
	return w.check(ctx, ops, events, true)
}

// CheckPrefix is Check on a prefix of the history, one key at a time and
// without visualisations: every rule of Check holds on a prefix.
// Porcupine gets what is left of ctx's deadline; a key it does not decide
// in time is a note, and the next check tries again.
func (w *registers) CheckPrefix(ctx context.Context, ops []Op) Verdict {
	return w.check(ctx, ops, nil, false)
}

func (w *registers) LiveRules() (live, pending string) {
	return "linearizability per key (porcupine; writes in flight of unknown outcome), stale, phantom and future reads",
		"the final read of each key"
}

// check runs porcupine on every key, two at a time and with porcupine's
// visualisation of an illegal key when final, else one at a time.
func (w *registers) check(ctx context.Context, ops []Op, events []Event, final bool) Verdict {
	v := Verdict{Workload: w.Name(), Result: "ok", viz: map[string][]byte{}}
	byKey := registerHistories(ops)
	keys := slices.Sorted(maps.Keys(byKey))
	results := make([]keyCheck, len(keys))
	var wg sync.WaitGroup
	parallel := 1
	if final {
		parallel = 2
	}
	sem := make(chan struct{}, parallel)
	for i, k := range keys {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := guard(func() { results[i] = checkKey(ctx, k, byKey[k], events, final) }); err != nil {
				results[i] = keyCheck{result: porcupine.Unknown}
			}
		})
	}
	wg.Wait()
	for i, r := range results {
		v.Anomalies = append(v.Anomalies, r.anomalies...)
		switch r.result {
		case porcupine.Illegal:
			if r.viz != nil {
				v.viz[keys[i]] = r.viz
			}
			if len(r.anomalies) == 0 {
				v.Anomalies = append(v.Anomalies, Anomaly{Workload: w.Name(), Kind: "not linearizable", Key: keys[i],
					Text: fmt.Sprintf("porcupine finds no linearization of the %d operations on %s (see its visualisation)", len(byKey[keys[i]]), keys[i])})
			}
		case porcupine.Unknown:
			v.Notes = append(v.Notes, fmt.Sprintf("%s: porcupine did not decide within the budget", keys[i]))
		}
	}
	return v.settle("porcupine ran out of time on some keys")
}

// registerHistories groups the operations that took or may have taken
// effect by key: OK ones, and writes whose outcome is unknown.
func registerHistories(ops []Op) map[string][]Op {
	by := map[string][]Op{}
	for _, op := range ops {
		if op.Workload != "registers" || op.Outcome == Fail {
			continue
		}
		by[op.Key] = append(by[op.Key], op)
	}
	return by
}

// keyCheck is porcupine's verdict on one key, and the anomalies found.
type keyCheck struct {
	result    porcupine.CheckResult
	anomalies []Anomaly
	viz       []byte
}

// checkKey runs porcupine on one key within checkBudget (or what is left
// of ctx's deadline: none left is an undecided key, since porcupine takes
// a zero timeout as none), and with its visualisation when verbose.
func checkKey(ctx context.Context, key string, ops []Op, events []Event, verbose bool) keyCheck {
	kc := keyCheck{result: porcupine.Unknown, anomalies: staleReads(key, ops)}
	budget := checkBudget
	if d, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(d))
	}
	if budget <= 0 {
		return kc
	}
	pops := porcupineOps(ops)
	if !verbose {
		kc.result = porcupine.CheckOperationsTimeout(registerModel, pops, budget)
		return kc
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, pops, budget)
	kc.result = res
	if res == porcupine.Illegal {
		info.AddAnnotations(faultAnnotations(events))
		var buf bytes.Buffer
		if err := porcupine.Visualize(registerModel, info, &buf); err == nil {
			kc.viz = buf.Bytes()
		}
	}
	return kc
}

// porcupineOps turns one key's operations into porcupine's, with client ids
// renumbered from 0 (the visualisation draws one line per client).
func porcupineOps(ops []Op) []porcupine.Operation {
	ids := map[int]int{}
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		id, ok := ids[op.Client]
		if !ok {
			id = len(ids)
			ids[op.Client] = id
		}
		ret := op.Return
		if op.Outcome == Unknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{ClientId: id, Input: op, Call: op.Call, Output: op, Return: ret})
	}
	return out
}

// regState is one register's value.
type regState struct {
	value  string
	exists bool
}

var registerModel = porcupine.Model{
	Init: func() any { return regState{} },
	Step: func(state, input, _ any) (bool, any) {
		return registerStep(state.(regState), input.(Op))
	},
	DescribeOperation: func(input, _ any) string { return describeOp(input.(Op)) },
	DescribeState: func(state any) string {
		st := state.(regState)
		if !st.exists {
			return "(nil)"
		}
		return strconv.Quote(st.value)
	},
}

// registerStep is the sequential specification of one register.
func registerStep(st regState, op Op) (bool, any) {
	switch op.Kind {
	case "GET":
		return op.Nil == !st.exists && (op.Nil || op.Result == st.value), st
	case "SET":
		return true, regState{value: op.Value, exists: true}
	case "CAS":
		match := st.exists && st.value == op.Old
		next := st
		if match {
			next = regState{value: op.Value, exists: true}
		}
		if op.Outcome == Unknown {
			return true, next
		}
		return match == (op.Result == "1"), next
	}
	return false, st
}

// describeOp renders an operation for people: `SET k 1.2 -> OK`.
func describeOp(op Op) string {
	s := op.Kind + " " + op.Key
	switch op.Kind {
	case "SET", "SADD":
		s += " " + op.Value
	case "CAS":
		s += " " + op.Old + "→" + op.Value
	case "INCRBY":
		s += " " + strconv.FormatInt(op.N, 10)
	}
	switch {
	case op.Outcome == Unknown:
		return s + " -> ? (" + op.ErrKind + ")"
	case op.Outcome == Fail:
		return s + " -> failed (" + op.ErrKind + ")"
	case op.Nil:
		return s + " -> (nil)"
	case op.Kind == "SMEMBERS":
		return s + " -> " + strconv.Itoa(len(op.Members)) + " members"
	}
	return s + " -> " + strconv.Quote(op.Result)
}

// faultAnnotations shows the faults on porcupine's timeline.
func faultAnnotations(events []Event) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(events))
	for _, e := range events {
		end := e.End
		if end == 0 {
			end = e.Start
		}
		out = append(out, porcupine.Annotation{Tag: "faults", Start: e.Start, End: end,
			Description: e.Kind, Details: e.Desc, BackgroundColor: "#f6d5d5"})
	}
	return out
}
