package server

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/fsm"
)

// TestScriptShebangRouting: an EVAL whose shebang says no-writes runs as a
// read once its group caches it (its write fails as in a read-only script;
// memory is not checked), allow-oom lets a writing script run over
// maxmemory, and a shebang without either gets Redis's -OOM for scripts.
func TestScriptShebangRouting(t *testing.T) {
	do := singleNodeDo(t)
	const (
		noWrites = "#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])"
		allowOOM = "#!lua flags=allow-oom\nreturn redis.call('set', KEYS[1], 'w')"
		plain    = "#!lua\nreturn redis.call('set', KEYS[1], 'p')"
	)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"SET", "k", "v"}, "+OK"},
		{[]string{"EVAL", noWrites, "1", "k"}, "v"}, // through the log: now cached
		{[]string{"SCRIPT", "EXISTS", fsm.SHA1Hex([]byte(noWrites))}, "[:1]"},
		{[]string{"CONFIG", "SET", "maxmemory", "100"}, "+OK"},
		{[]string{"SET", "x", "y"}, "wait for OOM"},
		{[]string{"EVAL", noWrites, "1", "k"}, "v"},
		{[]string{"EVALSHA", fsm.SHA1Hex([]byte(noWrites)), "1", "k"}, "v"},
		{[]string{"EVAL", plain, "1", "k"}, "-OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"},
		{[]string{"EVAL", "return 1", "0"}, "-OOM command not allowed when used memory > 'maxmemory'."},
		{[]string{"EVAL", allowOOM, "1", "k"}, "+OK"},
		{[]string{"CONFIG", "SET", "maxmemory", "0"}, "+OK"},
		{[]string{"EVAL", plain, "1", "k"}, "+OK"},
		{[]string{"EVAL_RO", plain, "1", "k"}, "-ERR Can not execute a script with write flag using *_ro command."},
		{[]string{"EVAL", "#!lua flags=no-cluster\nreturn 1", "0"}, "-ERR Can not run script on cluster, 'no-cluster' flag is set."},
		{[]string{"EVAL", "#!lua flags=bogus\nreturn 1", "0"}, "-ERR Unexpected flag in script shebang: bogus"},
	}
	for _, st := range steps {
		if st.want == "wait for OOM" {
			cluster.PollUntil(t, "the node out of memory", func() bool { return strings.HasPrefix(do(st.args...), "-OOM") })
			continue
		}
		if got := do(st.args...); got != st.want {
			t.Errorf("%q: got %q, want %q", st.args, got, st.want)
		}
	}
	// The no-writes script ran as a read: EVAL_RO's counter, not EVAL's.
	if info := do("INFO", "commandstats"); !strings.Contains(info, "cmdstat_eval_ro:calls=") {
		t.Errorf("no EVAL_RO in commandstats:\n%s", info)
	}
}
