package fsm

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
	"github.com/slotraft/slotraft/store"
)

// t0 is the entries' starting time in tests (unix ms).
const t0 = int64(1_700_000_000_000)

// harness applies one-command entries to a State, as the log would.
type harness struct {
	t   *testing.T
	s   *State
	idx uint64
	now int64
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, s: NewState(), now: t0}
}

// fields splits a command line on spaces; `""` is an empty argument and
// '~' stands for a space inside an argument.
func fields(line string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(line) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(strings.ReplaceAll(f, "~", " ")))
	}
	return out
}

// applyEntry applies e at the next index and the harness's time.
func (h *harness) applyEntry(e *Entry) *ApplyResult {
	h.t.Helper()
	h.idx++
	e.Now = h.now
	r, err := h.s.ApplyResult(h.idx, e)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// cmdLines are command lines as an entry's commands.
func cmdLines(lines ...string) [][][]byte {
	var out [][][]byte
	for _, l := range lines {
		out = append(out, fields(l))
	}
	return out
}

func (h *harness) apply(args [][]byte) resp.Value {
	h.idx++
	r := h.s.Apply(h.idx, &Entry{Type: EntryCommands, Now: h.now, Seed: h.idx, Cmds: [][][]byte{args}})
	return replyOf(r[0])
}

// replyOf renders an outcome as the reply value tests compare: the reply,
// and a redirect as an error naming the group ("ASK <slot> group:<gid>").
func replyOf(o Outcome) resp.Value {
	switch o.Kind {
	case OutcomeAsk:
		return resp.Err(resp.Errorf("ASK %d group:%d", o.Slot, o.Group))
	case OutcomeTryAgain:
		return resp.Err(resp.ErrTryAgain)
	}
	return o.Reply
}

// repliesOf is replyOf of each outcome.
func repliesOf(os []Outcome) []resp.Value {
	out := make([]resp.Value, len(os))
	for i, o := range os {
		out[i] = replyOf(o)
	}
	return out
}

func (h *harness) do(line string) string { return show(h.apply(fields(line))) }

// read runs a read-only command through State.Read (arity checked here as
// the cluster layer does).
func (h *harness) read(line string) string {
	args := fields(line)
	cmd := Lookup(args[0])
	if cmd == nil || !cmd.Meta.ArityOK(len(args)) {
		h.t.Fatalf("read %q: unknown command or bad arity", line)
	}
	return show(replyOf(h.s.Read(h.now, cmd, args)))
}

// step is one command and its expected reply; commands starting with
// "sleep N" advance the clock by N ms, "read " runs through State.Read.
type step struct{ cmd, want string }

func (h *harness) run(steps []step) {
	h.t.Helper()
	for i, st := range steps {
		var got string
		switch {
		case strings.HasPrefix(st.cmd, "sleep "):
			n, _ := strconv.ParseInt(st.cmd[6:], 10, 64)
			h.now += n
			continue
		case strings.HasPrefix(st.cmd, "mklist "):
			// A list key for cross-type tests, planted directly.
			l := store.NewListOf(nil, [][]byte{[]byte("x")})
			h.s.store.Put([]byte(st.cmd[7:]), &store.Object{Type: store.TypeList, Coll: l})
			continue
		case strings.HasPrefix(st.cmd, "read "):
			got = h.read(st.cmd[5:])
		case strings.HasPrefix(st.cmd, "sorted "):
			// Key order is the store's cursor order: compare sorted.
			v := replyOf(h.s.Read(h.now, Lookup(fields(st.cmd[7:])[0]), fields(st.cmd[7:])))
			arr := &v
			if len(v.Elems) == 2 && v.Elems[1].Kind == resp.KindArray {
				arr = &v.Elems[1]
			}
			sort.Slice(arr.Elems, func(i, j int) bool { return string(arr.Elems[i].Str) < string(arr.Elems[j].Str) })
			got = show(v)
		default:
			got = h.do(st.cmd)
		}
		if got != st.want {
			h.t.Errorf("step %d %q: got %s, want %s", i, st.cmd, got, st.want)
		}
	}
}

// show renders a reply compactly: +status, -error, :int, "bulk", nil,
// [a b], {k v}, ,double.
func show(v resp.Value) string {
	switch v.Kind {
	case resp.KindNull, resp.KindNullArray:
		return "nil"
	case resp.KindStatus:
		return "+" + string(v.Str)
	case resp.KindError:
		return "-" + string(v.Str)
	case resp.KindInt:
		return ":" + strconv.FormatInt(v.Int, 10)
	case resp.KindBulk:
		return strconv.Quote(string(v.Str))
	case resp.KindDouble:
		if v.Str != nil { // a double spelled by the command: RESP2 sees this bulk
			return strconv.Quote(string(v.Str))
		}
		return "," + string(resp.FormatDouble(v.Float, true))
	case resp.KindMap:
		return "{" + showAll(v.Elems) + "}"
	case resp.KindArray, resp.KindSet, resp.KindPairs:
		return "[" + showAll(v.Elems) + "]" // pairs flat, as RESP2 sends them
	case resp.KindPairMap: // as RESP2 sends it: [[k v] …]
		pairs := make([]resp.Value, 0, len(v.Elems)/2)
		for i := 0; i+1 < len(v.Elems); i += 2 {
			pairs = append(pairs, resp.Array(v.Elems[i], v.Elems[i+1]))
		}
		return show(resp.Array(pairs...))
	}
	return fmt.Sprintf("?%v", v)
}

func showAll(vs []resp.Value) string {
	s := make([]string, len(vs))
	for i, e := range vs {
		s[i] = show(e)
	}
	return strings.Join(s, " ")
}

// runTable runs named step lists, each on a fresh State.
func runTable(t *testing.T, cases map[string][]step) {
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) { newHarness(t).run(steps) })
	}
}
