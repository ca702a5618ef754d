package server

import (
	"testing"

	"github.com/slotraft/slotraft/fsm"
)

// TestWatchedIn: EXEC runs only in the group every watch was taken in. A
// watch's version counts in its own group's log, so after the key's slot
// moved to another group an equal number there would mean nothing.
func TestWatchedIn(t *testing.T) {
	w := func(g uint32) fsm.Watch { return fsm.Watch{Key: []byte("k"), Group: g} }
	for _, c := range []struct {
		ws   []fsm.Watch
		gid  uint32
		want bool
	}{
		{nil, 2, true},
		{[]fsm.Watch{w(2)}, 2, true},
		{[]fsm.Watch{w(2), w(2)}, 2, true},
		{[]fsm.Watch{w(1)}, 2, false},
		{[]fsm.Watch{w(2), w(1)}, 2, false},
	} {
		if got := watchedIn(c.ws, c.gid); got != c.want {
			t.Errorf("watchedIn(%+v, %d) = %v, want %v", c.ws, c.gid, got, c.want)
		}
	}
}
