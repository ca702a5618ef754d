package difftest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The Lua debugger: the same redis-cli --ldb sessions (Debian's redis-cli,
// reading the debugger's commands from stdin, which is not a terminal)
// against redis-server and slotraft, their output compared byte by byte
// (functions' addresses aside). Each session's commands end with the
// session, so redis-cli reaches the end of its input as the server closes
// the connection. Left out, as docs/compatibility.md says: syntax errors
// (gopher-lua's words), tables with keys other than 1, 2, 3… (shown in
// another order), removing a breakpoint that is not the last one
// (Redis's ldbDelBreakpoint changes the next one's line), keys of
// another slot than the script's (a cluster refuses them).

// ldbSession is one redis-cli --ldb run: a script, its keys and
// arguments ("," between them, as redis-cli takes them), and the lines
// typed at the debugger's prompt.
type ldbSession struct {
	name   string
	script string
	args   []string
	input  []string
}

var ldbSessions = []ldbSession{
	{"step through", `local a = 1
local t = {1,2,"x"}
redis.call('set', KEYS[1], ARGV[1])
local v = redis.call('get', KEYS[1])
for i=1,2 do a = a + i end
redis.debug("hi", a, t)
redis.breakpoint()
return {v, a}
`, []string{"{k}1", ",", "v1"}, []string{"s", "s", "s", "p", "p t", "p KEYS", "p ARGV", "p nope", "l", "l 2 1", "w", "b 6", "b", "b 99", "b x", "t",
		"e a+1", "e 1+1", "e {1,{2}}", "e error('boom')", "r get {k}1", "r incr {k}1 x", "r nosuch", "m", "m 10", "m 0", "h", "zz", "s", "s", "s", "c", "c"}},
	{"blocks and functions", `local t = {10, 20}
for k, v in ipairs(t) do
  local d = v * 2
end
local n = 0
while n < 1 do
  local inc = 1
  n = n + inc
end
if n > 0 then
  local a = "pos"
  n = n + 1
else
  local b = "neg"
end
local function add(x, y)
  local s = x + y
  return s
end
return add(n, 1)
`, nil, repeatLines(35, "s", "p", "t")},
	{"values and replies", `local big = string.rep("x", 300)
local nested = {{{{{{{{{{{{1}}}}}}}}}}}}
local nums = {1, -2.5, 1e20, 0.1, 123456789, 1/0, -1/0, 2^53}
local s = "q\"b\\\r\n\t\a\b\1\127\195\169"
redis.call("set", KEYS[1], big)
redis.call("rpush", KEYS[2], "a", "b", "c")
redis.call("hset", KEYS[3], "f", "v")
redis.pcall("incr", KEYS[1])
redis.call("del", KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1], KEYS[1])
redis.debug(nums, s, true, nil)
local e = redis.error_reply("MY err")
redis.setresp(3)
redis.call("hgetall", KEYS[3])
redis.call("get", KEYS[4])
redis.call("smembers", KEYS[5])
redis.setresp(2)
redis.call("get", KEYS[4])
redis.call("lrange", KEYS[2], 0, -1)
local r = redis.pcall("nosuch")
return 1
`, []string{"{k}1", "{k}2", "{k}3", "{k}4", "{k}5"},
		append(repeatLines(19, "s"), "p", "p nested", "p nums", "p s", "p big", "m 0", "p big", "p r", "e redis.pcall('nosuch')", "c")},
	{"errors and abort", "local a = 1\nreturn redis.call('incr', KEYS[1], 'x')\n", []string{"{k}1"}, []string{"s", "a"}},
	{"error in a step", "local a = 1\nreturn redis.call('incr', KEYS[1], 'x')\n", []string{"{k}1"}, []string{"s", "s"}},
	{"client quits", "local a = 1\nredis.call('set', KEYS[1], 'gone')\nreturn a\n", []string{"{k}1"}, []string{"s"}},
	{"keyless", "local a = 1\nreturn a + 1\n", nil, []string{"p", "c"}},
}

func repeatLines(n int, lines ...string) []string {
	var out []string
	for range n {
		out = append(out, lines...)
	}
	return out
}

var ldbAddress = regexp.MustCompile(`(function|userdata|thread)@0x[0-9a-f]+`)

// runLDB runs redis-cli --ldb --eval for s against addr and returns its
// output, functions' addresses blanked.
func runLDB(t *testing.T, cli, addr string, s ldbSession) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	file := filepath.Join(t.TempDir(), "script.lua")
	if err := os.WriteFile(file, []byte(s.script), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port, "--ldb", "--eval", file}, s.args...)...)
	cmd.Stdin = strings.NewReader(strings.Join(s.input, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil && ctx.Err() != nil {
		t.Fatalf("redis-cli against %s: %v\n%s", addr, err, out.String())
	}
	return ldbAddress.ReplaceAllString(out.String(), "$1@ADDR")
}

func TestLDBDifferential(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-cli not found (CI=true): install redis-tools")
		}
		t.Skip("redis-cli not found")
	}
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	for _, s := range ldbSessions {
		t.Run(s.name, func(t *testing.T) {
			want := runLDB(t, cli, redisAddr, s)
			got := runLDB(t, cli, slotraftAddr, s)
			if got != want {
				t.Errorf("redis-cli --ldb output differs:\n--- redis-server\n%s\n--- slotraft\n%s", want, got)
			}
			if !strings.Contains(want, "* Stopped at 1, stop reason = step over") {
				t.Fatalf("no session against redis-server:\n%s", want)
			}
			// Forked mode: the session's writes are rolled back.
			for _, c := range []*client{rc, sc} {
				if r, err := c.do("EXISTS", "{k}1", "{k}2", "{k}3"); err != nil || r.str != "0" {
					t.Fatalf("keys after the session: %v %v", r, err)
				}
			}
		})
	}
	// No session outlives its client, on slotraft as on redis-server.
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := sc.do("INFO", "clients")
		if err == nil && strings.Contains(r.str, "connected_clients:1\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("connections left after the sessions: %v %v", r, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLDBCommandsDifferential: SCRIPT DEBUG's replies and the EVALs of a
// connection in debug mode that do not start a session.
func TestLDBCommandsDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	sha := strings.Repeat("a", 40)
	compareOps(t, rc, sc, []op{
		{args: []string{"SCRIPT", "DEBUG"}},
		{args: []string{"SCRIPT", "DEBUG", "MAYBE"}},
		{args: []string{"SCRIPT", "DEBUG", "YES", "NO"}},
		{args: []string{"SCRIPT", "DEBUG", "no"}},
		{args: []string{"SCRIPT", "DEBUG", "YES"}},
		{args: []string{"EVALSHA", "abc", "0"}},
		{args: []string{"EVALSHA", sha, "0"}},
		{args: []string{"EVALSHA_RO", sha, "0"}},
		{args: []string{"SCRIPT", "DEBUG", "NO"}},
		{args: []string{"EVAL", "return 1", "0"}},
		{args: []string{"MULTI"}},
		{args: []string{"SCRIPT", "DEBUG", "YES"}},
		{args: []string{"EXEC"}},
		{args: []string{"SCRIPT", "HELP"}},
		{args: []string{"COMMAND", "INFO", "script|debug"}},
		// redis.pcall's error tables, as the debugger prints them
		{args: []string{"EVAL", "local out = {} for _, t in ipairs({redis.pcall('nosuch'), redis.pcall('incr', KEYS[1], 'x'), redis.pcall('set', KEYS[1], 'a'), redis.pcall('incr', KEYS[1]), redis.error_reply('x')}) do if type(t) == 'table' then for k, v in pairs(t) do table.insert(out, k .. '=' .. tostring(v)) end end end return out", "1", "{k}e"}},
		{args: []string{"DEL", "{k}e"}},
	})
}
