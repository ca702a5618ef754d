package fsm

import (
	"fmt"
	"strings"
	"testing"
)

// scriptBudget applies the settings entry of the group's script budget.
func (h *harness) scriptBudget(n int64) {
	h.idx++
	h.s.Apply(h.idx, ScriptBudgetEntry(n))
}

// loopScript runs about n Lua instructions (one FORLOOP per turn) and
// returns n.
func loopScript(n int) string {
	return fmt.Sprintf("local n = 0 for i = 1, %d do n = i end return n", n)
}

const budgetPrefix = "-ERR Script exceeded the execution budget of "

func TestScriptBudgetEntry(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{100_000, "100000"}, {0, ""}, {-5, ""}} {
		e := ScriptBudgetEntry(c.n)
		if e.Type != EntrySettings || len(e.Cmds) != 1 || string(e.Cmds[0][0]) != SettingScriptBudget || string(e.Cmds[0][1]) != c.want {
			t.Errorf("ScriptBudgetEntry(%d) = %q", c.n, e.Cmds)
		}
	}
	for value, want := range map[string]int64{
		"": DefaultScriptBudget, "100000": 100_000, "0": DefaultScriptBudget, "-7": DefaultScriptBudget,
		"abc": DefaultScriptBudget, "1e5": DefaultScriptBudget, "99999999999999999999": DefaultScriptBudget,
	} {
		if got := scriptBudgetOf(map[string]string{SettingScriptBudget: value}); got != want {
			t.Errorf("budget of %q = %d, want %d", value, got, want)
		}
	}
	if loadBudget(DefaultScriptBudget) != 10_000_000 || loadBudget(5) != 1 {
		t.Errorf("load budgets %d, %d", loadBudget(DefaultScriptBudget), loadBudget(5))
	}
}

// budgetLog changes the budget between runs of the same script: lowered,
// raised again, set to a value Apply must read as the default, lowered
// again and removed.
func budgetLog() []*Entry {
	eval := func() *Entry {
		return &Entry{Type: EntryCommands, Cmds: [][][]byte{{[]byte("EVAL"), []byte(loopScript(50_000)), []byte("0")}}}
	}
	return []*Entry{
		eval(),
		ScriptBudgetEntry(10_000), eval(),
		ScriptBudgetEntry(1_000_000), eval(),
		SettingsEntry(SettingScriptBudget, "lots"), eval(),
		ScriptBudgetEntry(20_000), eval(),
		ScriptBudgetEntry(0), eval(),
	}
}

// Two replicas fed the same log, with the budget changed in the middle,
// give every script the same outcome, and it is the one of the budget at
// the script's log position.
func TestScriptBudgetReplicated(t *testing.T) {
	a, b := NewState(), NewState()
	var got []string
	for i, e := range budgetLog() {
		e.Now, e.Seed = t0+int64(i), uint64(i)
		ra, rb := repliesOf(a.Apply(uint64(i+1), e)), repliesOf(b.Apply(uint64(i+1), DecodeOrFail(t, e.Encode())))
		if showAll(ra) != showAll(rb) {
			t.Fatalf("entry %d: replicas differ: %s vs %s", i, showAll(ra), showAll(rb))
		}
		if len(ra) == 1 {
			got = append(got, strings.TrimPrefix(strings.SplitN(show(ra[0]), " Lua", 2)[0], budgetPrefix))
		}
	}
	if want := ":50000 10000 :50000 :50000 20000 :50000"; strings.Join(got, " ") != want {
		t.Fatalf("outcomes %q, want %q", strings.Join(got, " "), want)
	}
}

// The read path (EVAL_RO, FCALL_RO) uses the budget of the current state.
func TestScriptBudgetReadPath(t *testing.T) {
	h := newHarness(t)
	h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", lib("l",
		"redis.register_function{function_name='spin', callback=function() while true do end end, flags={'no-writes'}}")}, `"l"`}})
	if got := h.scriptRead("eval_ro", loopScript(50_000), "0"); got != ":50000" {
		t.Fatalf("eval_ro under the default budget: %s", got)
	}
	h.scriptBudget(10_000)
	if got := h.scriptRead("eval_ro", loopScript(50_000), "0"); !strings.HasPrefix(got, budgetPrefix+"10000 ") {
		t.Fatalf("eval_ro under a budget of 10000: %s", got)
	}
	if got := h.scriptRead("fcall_ro", "spin", "0"); got != budgetPrefix+"10000 Lua instructions script: spin" {
		t.Fatalf("fcall_ro under a budget of 10000: %s", got)
	}
}

// FUNCTION LOAD gives a library's top-level code a tenth of the script
// budget.
func TestScriptBudgetFunctionLoad(t *testing.T) {
	h := newHarness(t)
	heavy := lib("heavy", "for i = 1, 50000 do end", reg("f", "return 1"))
	h.scriptBudget(100_000) // 10,000 for loading
	h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", heavy}, "-ERR Error registering functions: ERR FUNCTION LOAD timeout"}})
	h.scriptBudget(1_000_000) // 100,000 for loading
	h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", heavy}, `"heavy"`}, {[]string{"FCALL", "f", "0"}, ":1"}})
}

// The budget is in the snapshot; and a library loaded under a budget
// lowered since still restores (it loads again without one).
func TestScriptBudgetSnapshot(t *testing.T) {
	h := newHarness(t)
	h.scriptBudget(1_000_000)
	h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", lib("heavy", "for i = 1, 20000 do end", reg("f", "return 1"))}, `"heavy"`}})
	h.scriptBudget(100_000) // 10,000 for loading: the library would not load now
	h2 := &harness{t: t, s: restoredFrom(t, snapshotOf(t, h.s)), now: t0, idx: h.idx}
	if got := h2.scriptDo("eval", loopScript(200_000), "0"); !strings.HasPrefix(got, budgetPrefix+"100000 ") {
		t.Fatalf("after restore: %s, want the budget of 100000", got)
	}
	h2.fnRun([]fnStep{{[]string{"FCALL", "f", "0"}, ":1"}})
}
