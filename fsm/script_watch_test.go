package fsm

import (
	"testing"
)

const loopForever = "local i=0 while true do i=i+1 end"

// watchHarness is a harness whose State reports its script runs to runs,
// killing every run outside Apply as soon as it starts when kill is set.
func watchHarness(t *testing.T, kill bool) (*harness, *[]ScriptRun, *int) {
	h := newHarness(t)
	var runs []ScriptRun
	ended := 0
	h.s.scriptHook = func(r ScriptRun) func() {
		runs = append(runs, r)
		if kill && r.Kill != nil {
			r.Kill.Store(true)
		}
		return func() { ended++ }
	}
	return h, &runs, &ended
}

func TestScriptKilledOutsideApply(t *testing.T) {
	h, runs, ended := watchHarness(t, true)
	h.function("load", lib("l", "redis.register_function{function_name='f', callback=function() "+
		"\n"+loopForever+" end, flags={'no-writes'}}"))
	pcallLoop := "pcall(function() " + loopForever + " end) " + loopForever
	killed := "-ERR Script killed by user with SCRIPT KILL... script: "
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval_ro", loopForever, "0"}, killed + SHA1Hex([]byte(loopForever)) + ", on @user_script:1."},
		// a pcall that catches the kill is killed again at its next instruction
		{[]string{"eval_ro", pcallLoop, "0"}, killed + SHA1Hex([]byte(pcallLoop)) + ", on @user_script:1."},
		{[]string{"fcall_ro", "f", "0"}, killed + "f, on @user_function:3."},
	} {
		args := byteArgs(c.args)
		if got := show(replyOf(h.s.Read(h.now, Lookup(args[0]), args))); got != c.want {
			t.Errorf("%s: got %s, want %s", c.args[0], got, c.want)
		}
	}
	if len(*runs) != 3 || *ended != 3 {
		t.Fatalf("runs %+v, %d ended; want 3 and 3", *runs, *ended)
	}
	if r := (*runs)[2]; !r.Function || r.Name != "f" || len(r.Call) != 3 || string(r.Call[1]) != "f" {
		t.Errorf("run %+v: want function f called by FCALL_RO f 0", r)
	}
	if r := (*runs)[0]; r.Function || r.InApply || r.Name != "" || r.Call != nil {
		t.Errorf("run %+v: want a script outside Apply", r)
	}
}

// A run inside Apply gets no kill switch: only its budget ends it, the
// same way on every replica.
func TestScriptInApplyUnkillable(t *testing.T) {
	h, runs, ended := watchHarness(t, true)
	h.idx++
	h.s.Apply(h.idx, ScriptBudgetEntry(10_000))
	got := show(h.apply([][]byte{[]byte("eval"), []byte(loopForever), []byte("0")}))
	want := "-ERR Script exceeded the execution budget of 10000 Lua instructions script: " + SHA1Hex([]byte(loopForever))
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if len(*runs) != 1 || !(*runs)[0].InApply || (*runs)[0].Kill != nil || *ended != 1 {
		t.Fatalf("runs %+v, %d ended; want one run in Apply without a kill switch", *runs, *ended)
	}
}
