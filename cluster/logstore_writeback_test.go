package cluster

import (
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
)

// The planted bug's store must serve Raft normally while it holds entries
// that the real store does not have yet: that is the bug.
func TestWriteBackLogsHoldsAppendsInMemory(t *testing.T) {
	real := raft.NewInmemStore()
	w := newWriteBackLogs(real, slog.New(slog.DiscardHandler))
	logs := []*raft.Log{{Index: 1, Term: 1, Data: []byte("a")}, {Index: 2, Term: 1, Data: []byte("b")}}
	if err := w.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if last, _ := w.LastIndex(); last != 2 {
		t.Errorf("LastIndex = %d, want 2", last)
	}
	var got raft.Log
	if err := w.GetLog(2, &got); err != nil || string(got.Data) != "b" {
		t.Errorf("GetLog(2) = %q, %v", got.Data, err)
	}
	// Before the background write (250 ms), the real store may be empty;
	// after close it must hold both.
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	if last, _ := real.LastIndex(); last != 2 {
		t.Errorf("after close the real store's LastIndex = %d, want 2", last)
	}
	if err := w.DeleteRange(2, 2); err != nil {
		t.Fatal(err)
	}
	if last, _ := w.LastIndex(); last != 1 {
		t.Errorf("after DeleteRange LastIndex = %d, want 1", last)
	}
}
