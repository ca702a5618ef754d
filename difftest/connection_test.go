package difftest

import (
	"strconv"
	"testing"
	"time"
)

// TestConnectionDifferential sends PING, ECHO and TIME, directly and from
// scripts, with their arity errors, to redis-server and to slotraft: the
// replies agree exactly, but for TIME's value, which is compared by shape
// and checked against the local clock.
func TestConnectionDifferential(t *testing.T) {
	redisAddr := startRedis(t)
	slotraftAddr := startSlotraft(t)
	cmds := []struct {
		args []string
		m    mode
	}{
		{[]string{"PING"}, exact},
		{[]string{"ping", "hello"}, exact},
		{[]string{"PING", "a", "b"}, exact},
		{[]string{"ECHO", "x y"}, exact},
		{[]string{"ECHO"}, exact},
		{[]string{"ECHO", "a", "b"}, exact},
		{[]string{"TIME"}, shape},
		{[]string{"TIME", "x"}, exact},
		{[]string{"EVAL", "return redis.call('PING')", "0"}, exact},
		{[]string{"EVAL", "return redis.call('ECHO', 'e')", "0"}, exact},
		{[]string{"EVAL", "return redis.pcall('ECHO')", "0"}, exact},
		{[]string{"EVAL", "return redis.call('TIME')", "0"}, shape},
		{[]string{"EVAL", "return redis.pcall('TIME', 1)", "0"}, exact},
	}
	for _, proto := range []string{"2", "3"} {
		rc, sc := connect(t, redisAddr, proto), connect(t, slotraftAddr, proto)
		for _, c := range cmds {
			want, err := rc.do(c.args...)
			if err != nil {
				t.Fatalf("redis-server %q: %v", c.args, err)
			}
			got, err := sc.do(c.args...)
			if err != nil {
				t.Fatalf("slotraft %q: %v", c.args, err)
			}
			if w, g := normalize(want, c.m), normalize(got, c.m); w != g {
				t.Errorf("RESP%s %q:\n  redis:    %s\n  slotraft: %s", proto, c.args, w, g)
			}
			if c.args[0] == "TIME" && len(c.args) == 1 {
				checkTime(t, got)
			}
		}
	}
}

// checkTime: TIME's seconds are within a minute of this machine's clock and
// its microseconds below a million.
func checkTime(t *testing.T, r reply) {
	t.Helper()
	if len(r.elems) != 2 {
		t.Fatalf("TIME = %s", r)
	}
	sec, err1 := strconv.ParseInt(r.elems[0].str, 10, 64)
	usec, err2 := strconv.ParseInt(r.elems[1].str, 10, 64)
	if err1 != nil || err2 != nil || usec < 0 || usec >= 1_000_000 {
		t.Fatalf("TIME = %s", r)
	}
	if d := time.Since(time.Unix(sec, usec*1000)); d > time.Minute || d < -time.Minute {
		t.Fatalf("TIME = %s, %v from this machine's clock", r, d)
	}
}
