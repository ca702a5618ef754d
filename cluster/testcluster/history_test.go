package testcluster_test

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// A history of single-key operations and a porcupine model for it: each key
// is a register (SET, GET) or a counter (INCR, GET), checked one key at a
// time. Writes whose outcome is unknown stay in the history with an
// infinite return time (they may take effect at any point after their call,
// or never); reads that failed are dropped, since they observed nothing.

type kvOp uint8

const (
	opGet kvOp = iota
	opSet
	opIncr
)

func (o kvOp) String() string { return [...]string{"GET", "SET", "INCR"}[o] }

type kvInput struct {
	op    kvOp
	key   string
	value string // SET only
}

// kvOutput is what a client saw: a value (GET: exists=false is nil; INCR:
// the new value) or, for a write, unknown.
type kvOutput struct {
	value   string
	exists  bool
	unknown bool
}

// kvState is one key's value.
type kvState struct {
	value  string
	exists bool
}

// unknownReturn is the return time of an operation whose outcome is unknown.
const unknownReturn = math.MaxInt64

var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(kvInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		slices.Sort(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return kvState{} },
	Step: func(state, input, output any) (bool, any) {
		return kvStep(state.(kvState), input.(kvInput), output.(kvOutput))
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		call := in.op.String() + " " + in.key
		if in.op == opSet {
			call += " " + in.value
		}
		return call + " -> " + out.String()
	},
	DescribeState: func(state any) string {
		st := state.(kvState)
		if !st.exists {
			return "(nil)"
		}
		return strconv.Quote(st.value)
	},
}

func kvStep(st kvState, in kvInput, out kvOutput) (bool, any) {
	switch in.op {
	case opGet:
		return out.exists == st.exists && out.value == st.value, st
	case opSet:
		return true, kvState{value: in.value, exists: true}
	case opIncr:
		n := int64(0)
		if st.exists {
			var err error
			if n, err = strconv.ParseInt(st.value, 10, 64); err != nil {
				// An INCR of a non-integer changes nothing and fails; the
				// workload never records a failed INCR, so only an
				// unknown one fits here.
				return out.unknown, st
			}
		}
		next := strconv.FormatInt(n+1, 10)
		return out.unknown || out.value == next, kvState{value: next, exists: true}
	}
	return false, st
}

func (o kvOutput) String() string {
	switch {
	case o.unknown:
		return "?"
	case !o.exists:
		return "(nil)"
	}
	return strconv.Quote(o.value)
}

// history collects operations from concurrent clients. Timestamps are
// nanoseconds on the monotonic clock since the history began.
type history struct {
	start   time.Time
	clients atomic.Int64 // porcupine client ids handed out
	mu      sync.Mutex
	ops     []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) now() int64 { return int64(time.Since(h.start)) }

// newClient is a fresh porcupine client id. A client whose write outcome is
// unknown takes a new id, as if it were a new process: in porcupine's
// view its unknown write never returns, so the same client cannot call again.
func (h *history) newClient() int { return int(h.clients.Add(1) - 1) }

func (h *history) add(client int, in kvInput, call int64, out kvOutput, ret int64) {
	if out.unknown {
		ret = unknownReturn
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// checkLinearizable runs porcupine on ops. On a result other than want,
// or when the test failed already (a lost write), it writes the
// visualisation (see artifactDir); on a result other than want it fails
// the test.
func checkLinearizable(t *testing.T, ops []porcupine.Operation, want porcupine.CheckResult) {
	t.Helper()
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(kvModel, ops, 60*time.Second)
	t.Logf("porcupine: %s for %d operations in %v", res, len(ops), time.Since(start).Round(time.Millisecond))
	if res == want && !t.Failed() {
		return
	}
	path := filepath.Join(artifactDir(t), strings.ReplaceAll(t.Name(), "/", "_")+".html")
	if err := porcupine.VisualizePath(kvModel, info, path); err != nil {
		t.Errorf("write porcupine visualisation: %v", err)
	} else {
		t.Logf("porcupine visualisation: %s", path)
	}
	if res != want {
		t.Fatalf("porcupine says %s, want %s", res, want)
	}
}

// artifactDir is $SLOTRAFT_TEST_ARTIFACTS, or else a new directory under
// the system's temporary directory: not t.TempDir(), which is removed when
// the test ends, taking the visualisation of a failure with it.
func artifactDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("SLOTRAFT_TEST_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir
		}
	}
	dir, err := os.MkdirTemp("", "slotraft-linearizability-")
	if err != nil {
		return t.TempDir()
	}
	return dir
}

// lostWrites checks, independently of porcupine, that every acknowledged
// write shows in final (each key's value read after the faults healed):
//   - a counter's value is at least its number of acknowledged INCRs and
//     the largest value an INCR returned, and at most acknowledged plus
//     unknown INCRs;
//   - a register holds the value of a SET that did not finish before an
//     acknowledged SET began (else that acknowledged SET was lost), and is
//     set at all if any SET was acknowledged.
//
// SET values are unique per key. It returns one description per violation.
func lostWrites(ops []porcupine.Operation, final map[string]kvOutput) []string {
	type incrs struct{ acked, unknown, maxSeen int64 }
	counters := map[string]*incrs{}
	sets := map[string][]porcupine.Operation{}
	for _, op := range ops {
		in, out := op.Input.(kvInput), op.Output.(kvOutput)
		switch in.op {
		case opIncr:
			c := counters[in.key]
			if c == nil {
				c = &incrs{}
				counters[in.key] = c
			}
			if out.unknown {
				c.unknown++
				continue
			}
			c.acked++
			n, _ := strconv.ParseInt(out.value, 10, 64)
			c.maxSeen = max(c.maxSeen, n)
		case opSet:
			sets[in.key] = append(sets[in.key], op)
		}
	}
	var bad []string
	for key, c := range counters {
		f := final[key]
		n, err := strconv.ParseInt(f.value, 10, 64)
		if !f.exists {
			n, err = 0, nil
		}
		if err != nil || n < c.acked || n < c.maxSeen || n > c.acked+c.unknown {
			bad = append(bad, fmt.Sprintf("counter %s = %s after %d acknowledged INCRs (largest reply %d) and %d unknown",
				key, f, c.acked, c.maxSeen, c.unknown))
		}
	}
	for key, ss := range sets {
		if msg := lostSet(key, ss, final[key]); msg != "" {
			bad = append(bad, msg)
		}
	}
	slices.Sort(bad)
	return bad
}

// lostSet checks one register (see lostWrites); "" if it is fine.
func lostSet(key string, sets []porcupine.Operation, f kvOutput) string {
	var writer *porcupine.Operation
	for i, s := range sets {
		if f.exists && s.Input.(kvInput).value == f.value {
			writer = &sets[i]
		}
	}
	for _, s := range sets {
		if s.Output.(kvOutput).unknown {
			continue
		}
		switch {
		case writer == nil:
			return fmt.Sprintf("register %s = %s, written by no SET, but SET %s was acknowledged",
				key, f, s.Input.(kvInput).value)
		case writer.Return < s.Call:
			return fmt.Sprintf("register %s = %s, whose SET returned before the acknowledged SET %s began: that SET was lost",
				key, f, s.Input.(kvInput).value)
		}
	}
	if f.exists && writer == nil {
		return fmt.Sprintf("register %s = %s, a value no SET wrote", key, f)
	}
	return ""
}

// kvClient is a small cluster client for recording histories: one
// connection per node, MOVED followed by hand, so the test (not a client
// library) decides what may be retried. A redirect, CLUSTERDOWN or a
// refused dial means the command never reached a log, so it is retried; an
// I/O error or any other error reply after a write was sent leaves its
// outcome unknown, and a library that resent it would hide an INCR applied
// twice.
type kvClient struct {
	addrs    []string
	readonly bool // send READONLY on every new connection
	once     bool // one attempt: no redirect followed, no retry after CLUSTERDOWN
	conns    map[string]*kvConn
	route    map[string]string // key -> address that last answered for it
	next     int
}

type kvConn struct {
	c  net.Conn
	rd *bufio.Reader
}

func newKVClient(addrs []string, first int) *kvClient {
	return &kvClient{addrs: addrs, conns: map[string]*kvConn{}, route: map[string]string{}, next: first}
}

// errDefinite means a command was certainly not applied (every attempt was
// redirected, refused or rejected before reaching a log).
var errDefinite = errors.New("not applied")

// reply is a parsed RESP reply: a bulk or simple string, an integer
// (as text), nil, or an error.
type reply struct {
	text   string
	isNil  bool
	errMsg string
}

// do runs args for key until deadline. It returns the reply, an error
// wrapping errDefinite when the command surely had no effect, or another
// error when its effect is unknown (reads: it failed).
func (kc *kvClient) do(key string, args []string, deadline time.Time) (reply, error) {
	for {
		if !time.Now().Before(deadline) {
			return reply{}, fmt.Errorf("%w: deadline passed", errDefinite)
		}
		addr := kc.addrFor(key)
		cn, err := kc.conn(addr, deadline)
		if err != nil { // nothing was sent
			if kc.once {
				return reply{}, fmt.Errorf("%w: %w", errDefinite, err)
			}
			kc.forget(key)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		r, err := cn.roundTrip(args, deadline)
		if err != nil {
			kc.drop(addr)
			kc.forget(key)
			return reply{}, fmt.Errorf("%s: %w", addr, err)
		}
		if r.errMsg == "" {
			kc.route[key] = addr
			return r, nil
		}
		f := strings.Fields(r.errMsg)
		redirect := len(f) == 3 && (f[0] == "MOVED" || f[0] == "ASK")
		electing := len(f) > 0 && (f[0] == "CLUSTERDOWN" || f[0] == "TRYAGAIN")
		switch {
		case !redirect && !electing:
			return r, fmt.Errorf("%s: %s", addr, r.errMsg)
		case kc.once:
			return r, fmt.Errorf("%w: %s", errDefinite, r.errMsg)
		case redirect:
			kc.route[key] = f[2]
		default:
			kc.forget(key)
			time.Sleep(20 * time.Millisecond) // the group is electing
		}
	}
}

// addrFor is the node to ask about key: the last one that answered, else
// the next node in turn.
func (kc *kvClient) addrFor(key string) string {
	if a, ok := kc.route[key]; ok {
		return a
	}
	a := kc.addrs[kc.next%len(kc.addrs)]
	kc.next++
	return a
}

func (kc *kvClient) forget(key string) { delete(kc.route, key) }

func (kc *kvClient) conn(addr string, deadline time.Time) (*kvConn, error) {
	if cn, ok := kc.conns[addr]; ok {
		return cn, nil
	}
	c, err := net.DialTimeout("tcp", addr, min(time.Until(deadline), 2*time.Second))
	if err != nil {
		return nil, err
	}
	cn := &kvConn{c: c, rd: bufio.NewReader(c)}
	if kc.readonly {
		if r, err := cn.roundTrip([]string{"READONLY"}, deadline); err != nil || r.text != "OK" {
			c.Close()
			return nil, fmt.Errorf("READONLY: %v %s", err, r.errMsg)
		}
	}
	kc.conns[addr] = cn
	return cn, nil
}

// drop closes the connection to addr: after an I/O error or a timeout a
// late reply would be taken for the next command's.
func (kc *kvClient) drop(addr string) {
	if cn, ok := kc.conns[addr]; ok {
		cn.c.Close()
		delete(kc.conns, addr)
	}
}

func (kc *kvClient) close() {
	for addr := range kc.conns {
		kc.drop(addr)
	}
}

func (cn *kvConn) roundTrip(args []string, deadline time.Time) (reply, error) {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	_ = cn.c.SetDeadline(deadline)
	if _, err := cn.c.Write(b); err != nil {
		return reply{}, err
	}
	raw, err := readReply(cn.rd)
	if err != nil {
		return reply{}, err
	}
	return parseReply(raw)
}

// parseReply parses the replies the workload gets: simple strings,
// errors, integers and bulk strings.
func parseReply(raw string) (reply, error) {
	body := strings.TrimSuffix(raw, "\r\n")
	switch raw[0] {
	case '+', ':':
		return reply{text: body[1:]}, nil
	case '-':
		return reply{errMsg: body[1:]}, nil
	case '_':
		return reply{isNil: true}, nil
	case '$':
		if strings.HasPrefix(raw, "$-1") {
			return reply{isNil: true}, nil
		}
		_, s, _ := strings.Cut(body, "\r\n")
		return reply{text: s}, nil
	}
	return reply{}, fmt.Errorf("unexpected reply %q", raw)
}
