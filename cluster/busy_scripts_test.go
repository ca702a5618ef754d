package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotraft/slotraft/fsm"
)

// The record: runs are listed once they reach the threshold (never with
// 0), until they end; killAll reaches only the runs outside Apply.
func TestBusyScriptsRecord(t *testing.T) {
	var b busyScripts
	if runs := b.timedOut(time.Nanosecond); runs != nil {
		t.Fatalf("empty record lists %v", runs)
	}
	kill := new(atomic.Bool)
	endRead := b.start(1, fsm.ScriptRun{Kill: kill})
	endApply := b.start(2, fsm.ScriptRun{Function: true, InApply: true, Name: "f", Call: [][]byte{[]byte("fcall")}})
	if runs := b.timedOut(time.Hour); len(runs) != 0 {
		t.Fatalf("%d runs past an hour, want 0", len(runs))
	}
	if runs := b.timedOut(0); len(runs) != 0 {
		t.Fatalf("%d runs past threshold 0 (never busy), want 0", len(runs))
	}
	pollRuns := func(want int) {
		t.Helper()
		PollUntil(t, "runs past 1 ns", func() bool { return len(b.timedOut(time.Nanosecond)) == want })
	}
	pollRuns(2)
	if r, ok := b.oldest(time.Nanosecond, func(r *scriptRec) bool { return r.Group == 2 }); !ok ||
		!r.Function || !r.Written || r.Name != "f" || string(r.Command[0]) != "fcall" {
		t.Fatalf("group 2's run %+v, %v", r, ok)
	}
	b.killAll()
	if !kill.Load() {
		t.Fatal("killAll did not reach the run outside Apply")
	}
	endRead()
	pollRuns(1)
	endApply()
	if b.count.Load() != 0 || len(b.timedOut(time.Nanosecond)) != 0 {
		t.Fatal("ended runs are still recorded")
	}
}
