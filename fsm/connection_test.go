package fsm

import (
	"fmt"
	"testing"
)

// PING, ECHO and TIME run through the table, from a client's entry or a
// script, with Redis's replies and errors.
func TestConnectionCommands(t *testing.T) {
	h := newHarness(t)
	h.now = t0 + 1234
	sec, usec := (t0+1234)/1000, (t0+1234)%1000*1000
	time := fmt.Sprintf(`["%d" "%d"]`, sec, usec)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "+PONG"},
		{[]string{"ping", "hi"}, `"hi"`},
		{[]string{"PING", "a", "b"}, "-ERR wrong number of arguments for 'ping' command"},
		{[]string{"ECHO", "x y"}, `"x y"`},
		{[]string{"ECHO"}, "-ERR wrong number of arguments for 'echo' command"},
		{[]string{"TIME"}, time},
		{[]string{"TIME", "x"}, "-ERR wrong number of arguments for 'time' command"},
		// From a script: the entry's time, the same on every replica.
		{[]string{"EVAL", "return redis.call('TIME')", "0"}, time},
		{[]string{"EVAL", "return redis.call('PING')", "0"}, "+PONG"},
		{[]string{"EVAL", "return redis.call('ECHO', 'e')", "0"}, `"e"`},
		{[]string{"EVAL", "return redis.pcall('ECHO')", "0"}, "-ERR Wrong number of args calling Redis command from script*"},
		{[]string{"EVAL", "return redis.pcall('TIME', 1)", "0"}, "-ERR Wrong number of args calling Redis command from script*"},
	} {
		got := h.scriptDo(c.args...)
		scriptCheck(t, h, scriptCase{script: fmt.Sprint(c.args), want: c.want}, got)
	}
}
