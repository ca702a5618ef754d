package server

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/internal/testports"
)

// The differential test: a real Redis Sentinel (Debian's redis-server in
// sentinel mode, two of them) monitoring a real redis-server master and
// its replica, beside a one-group slotraft cluster with facades; the same
// commands go to both and their replies must have the same shape (types,
// nesting, field names in order) and, for errors and constants, the same
// text. Debian ships Redis 7.0, whose Sentinel differs from 7.2's (the
// reference) in a few texts, listed in sentinelDiffSkip.

// redisProc starts redis-server with args (killed at the end of the test)
// and returns its port once it answers PING.
func redisProc(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
}

// redisPing reports whether a Redis answers PING at addr.
func redisPing(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_, _ = c.Write(encodeCommand("PING"))
	buf := make([]byte, 7)
	n, _ := c.Read(buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// realSentinels starts a redis-server master, its replica and two
// Sentinels monitoring it as mymaster; it returns the Sentinels'
// addresses once each knows the replica and the other Sentinel.
func realSentinels(t *testing.T) []string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found in CI (make test-deps installs it): %v", err)
		}
		t.Skip("redis-server not installed: the differential test needs it")
	}
	ports := testports.Free(t, 4)
	dir := t.TempDir()
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	redisProc(t, bin, "--port", strconv.Itoa(ports[0]), "--save", "", "--appendonly", "no", "--dir", dir)
	redisProc(t, bin, "--port", strconv.Itoa(ports[1]), "--save", "", "--appendonly", "no", "--dir", dir,
		"--replicaof", "127.0.0.1", strconv.Itoa(ports[0]))
	var sentinels []string
	for i, p := range ports[2:] {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel%d.conf", i))
		text := fmt.Sprintf("port %d\ndir %s\nsentinel monitor mymaster 127.0.0.1 %d 2\nsentinel down-after-milliseconds mymaster 60000\n", p, dir, ports[0])
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		redisProc(t, bin, conf, "--sentinel")
		sentinels = append(sentinels, addr(p))
	}
	for _, s := range sentinels {
		cluster.PollUntil(t, "the real Sentinel "+s+" answers", func() bool { return redisPing(s) })
		r := dialRV(t, s)
		cluster.PollUntil(t, "the real Sentinel "+s+" knows the replica and the other Sentinel", func() bool {
			return len(r.do("SENTINEL", "REPLICAS", "mymaster").elems) == 1 && len(r.do("SENTINEL", "SENTINELS", "mymaster").elems) == 1
		})
	}
	return sentinels
}

// shape is v's type tree: errors and simple strings with their text
// (numbers and bulk strings, which carry addresses and times, without);
// arrays of bulk-string pairs whose keys look like Sentinel's field names
// keep the keys.
func (v rv) shape(keys bool) string {
	switch {
	case v.null:
		return "nil"
	case v.kind == '-' || v.kind == '+':
		return string(v.kind) + v.str
	case v.kind == '*' || v.kind == '%':
		parts := make([]string, len(v.elems))
		for i, e := range v.elems {
			if keys && i%2 == 0 && e.kind == '$' {
				parts[i] = "$" + e.str
				continue
			}
			parts[i] = e.shape(keys)
		}
		return string(v.kind) + "[" + strings.Join(parts, " ") + "]"
	}
	return string(v.kind)
}

// sentinelDiffCase is one command compared: keys, a map reply (or an
// array of them) whose field names must agree; v72, the facade's reply
// where Redis 7.2 (the reference) differs from Debian's 7.0.
type sentinelDiffCase struct {
	args []string
	keys bool
	v72  string
}

func TestSentinelDiffRealSentinel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server processes: skipped with -short")
	}
	real := realSentinels(t)
	_, fns := sentinelCluster(t)
	rr, ours := dialRV(t, real[0]), dialRV(t, fns[0].facade)
	// The real master's address and ours, for the commands that name one.
	realMaster := strings.Fields(strings.Trim(rr.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat(), "[]"))
	ourMaster := strings.Fields(strings.Trim(ours.do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster").flat(), "[]"))
	cases := []sentinelDiffCase{
		{args: []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"}},
		{args: []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "nope"}},
		{args: []string{"SENTINEL", "MASTERS"}, keys: true},
		{args: []string{"SENTINEL", "MASTER", "mymaster"}, keys: true},
		{args: []string{"SENTINEL", "MASTER", "nope"}},
		{args: []string{"SENTINEL", "REPLICAS", "nope"}},
		{args: []string{"SENTINEL", "SLAVES", "nope"}},
		{args: []string{"SENTINEL", "SENTINELS", "nope"}},
		{args: []string{"SENTINEL", "CKQUORUM", "nope"}},
		{args: []string{"SENTINEL", "FAILOVER", "nope"}},
		{args: []string{"SENTINEL", "REMOVE", "nope"}},
		{args: []string{"SENTINEL", "SET", "nope", "quorum", "2"}},
		{args: []string{"SENTINEL", "INFO-CACHE", "nope"}},
		{args: []string{"SENTINEL"}},
		{args: []string{"SENTINEL", "foo"}},
		{args: []string{"SENTINEL", "MASTERS", "x"}},
		{args: []string{"SENTINEL", "MYID", "x"}},
		{args: []string{"SENTINEL", "MYID"}},
		{args: []string{"SENTINEL", "GET-MASTER-ADDR-BY-NAME"}},
		{args: []string{"SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "x", "0", "*"}},
		{args: []string{"SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "1", "x", "*"}},
		{args: []string{"SENTINEL", "IS-MASTER-DOWN-BY-ADDR", "127.0.0.1", "1", "0", "*"}},
		// 7.2's sentinel-config.json has arity -4 (7.0's: -3, then its own text).
		{args: []string{"SENTINEL", "CONFIG", "get"}, v72: "-ERR wrong number of arguments for 'sentinel|config' command"},
		{args: []string{"SENTINEL", "CONFIG", "GET", "announce-*"}, keys: true},
		{args: []string{"SENTINEL", "CONFIG", "GET", "nothing"}},
		{args: []string{"SENTINEL", "PENDING-SCRIPTS"}},
		{args: []string{"SENTINEL", "RESET", "nomatch"}},
		{args: []string{"SENTINEL", "SIMULATE-FAILURE", "help"}},
		{args: []string{"SENTINEL", "SIMULATE-FAILURE", "foo"}},
		{args: []string{"PING"}},
		{args: []string{"PING", "hi"}},
		{args: []string{"PING", "a", "b"}},
		{args: []string{"ROLE"}},
		{args: []string{"GET", "foo"}},
		{args: []string{"QUIT"}},
		{args: []string{"RESET"}},
		{args: []string{"PUBLISH", "x", "y"}},
		{args: []string{"AUTH", "x"}},
		{args: []string{"AUTH", "a", "b"}},
		{args: []string{"HELLO", "4"}},
		{args: []string{"CLIENT", "SETNAME", "a b"}},
		{args: []string{"CLIENT", "SETNAME", "app"}},
		{args: []string{"CLIENT", "GETNAME"}},
		{args: []string{"CLIENT", "foo"}},
		{args: []string{"CLIENT", "ID"}},
		{args: []string{"COMMAND", "COUNT"}},
		{args: []string{"SUBSCRIBE"}},
		{args: []string{"UNSUBSCRIBE"}},
		{args: []string{"PUNSUBSCRIBE", "x"}},
	}
	for _, tc := range cases {
		args := append([]string(nil), tc.args...)
		oargs := append([]string(nil), tc.args...)
		if len(args) == 6 && args[1] == "IS-MASTER-DOWN-BY-ADDR" && args[3] == "1" {
			args[2], args[3] = realMaster[0], realMaster[1]
			oargs[2], oargs[3] = ourMaster[0], ourMaster[1]
		}
		want, got := rr.do(args...).shape(tc.keys), ours.do(oargs...).shape(tc.keys)
		if tc.v72 != "" {
			want = tc.v72
		}
		if got != want {
			t.Errorf("%q:\nreal Sentinel %s\nthe facade    %s", tc.args, want, got)
		}
	}
	// Arrays of instances: each element's field names in order.
	for _, sub := range []string{"REPLICAS", "SENTINELS"} {
		want := rr.do("SENTINEL", sub, "mymaster").elems[0].shape(true)
		for _, e := range ours.do("SENTINEL", sub, "mymaster").elems {
			if got := e.shape(true); got != want {
				t.Errorf("SENTINEL %s element:\nreal Sentinel %s\nthe facade    %s", sub, want, got)
			}
		}
	}
	// INFO: the same sections in the same order, the sentinel section's
	// fields with the same names.
	if want, got := infoOutline(rr.do("INFO").str), infoOutline(ours.do("INFO").str); !strings.HasPrefix(got, want) && got != want {
		t.Errorf("INFO sections:\nreal Sentinel %s\nthe facade    %s", want, got)
	}
	if want, got := infoFields(rr.do("INFO", "sentinel").str), infoFields(ours.do("INFO", "sentinel").str); want != got {
		t.Errorf("INFO sentinel:\nreal Sentinel %s\nthe facade    %s", want, got)
	}
	// RESP3: HELLO's map (no role in sentinel mode), CKQUORUM's status.
	rr3, ours3 := dialRV(t, real[1]), dialRV(t, fns[1].facade)
	if want, got := rr3.do("HELLO", "3").shape(true), ours3.do("HELLO", "3").shape(true); want != got {
		t.Errorf("HELLO 3:\nreal Sentinel %s\nthe facade    %s", want, got)
	}
	want, got := rr3.do("SENTINEL", "MASTER", "mymaster").shape(true), ours3.do("SENTINEL", "MASTER", "mymaster").shape(true)
	if want != got {
		t.Errorf("SENTINEL MASTER in RESP3:\nreal Sentinel %s\nthe facade    %s", want, got)
	}
}

// infoOutline is an INFO text's section headers.
func infoOutline(info string) string {
	var out []string
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "# ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, ",")
}

// infoFields are an INFO text's field names (the master lines' keys
// inside their values too).
func infoFields(info string) string {
	var out []string
	for _, l := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if strings.HasPrefix(k, "master") {
			var inner []string
			for _, kv := range strings.Split(v, ",") {
				ik, _, _ := strings.Cut(kv, "=")
				inner = append(inner, ik)
			}
			k += "(" + strings.Join(inner, ",") + ")"
		}
		out = append(out, k)
	}
	return strings.Join(out, ",")
}
