package fsm

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// The debugger's commands, each checked against what Redis 7.2's debugger
// sends for the same script and commands (the texts were taken from
// redis-server; difftest/ldb_test.go compares whole redis-cli sessions).

const ldbScript = `local a = 1
local t = {1,2,"x"}
redis.call('set', KEYS[1], ARGV[1])
local v = redis.call('get', KEYS[1])
for i=1,2 do a = a + i end
redis.debug("hi", a, t)
redis.breakpoint()
return {v, a}
`

func stop(line int, reason, src string) []string {
	return []string{fmt.Sprintf("* Stopped at %d, stop reason = %s", line, reason), src}
}

func TestLDBCommands(t *testing.T) {
	first := stop(1, "step over", "-> 1   local a = 1")
	end := []string{"<endsession>"}
	tests := []struct {
		name  string
		cmds  []string
		want  [][]string // the arrays after the first stop
		reply string     // the EVAL's reply, as resp.Value's String
	}{
		{"step", []string{"s", "n", "step", "next", "s", "s", "s", "c"}, [][]string{
			stop(2, "step over", `-> 2   local t = {1,2,"x"}`),
			stop(3, "step over", "-> 3   redis.call('set', KEYS[1], ARGV[1])"),
			{"<redis> set k1 v1", `<reply> "+OK"`, "* Stopped at 4, stop reason = step over", "-> 4   local v = redis.call('get', KEYS[1])"},
			{"<redis> get k1", `<reply> "v1"`, "* Stopped at 5, stop reason = step over", "-> 5   for i=1,2 do a = a + i end"},
			// a loop on one line: Lua calls the line hook on each jump back
			stop(5, "step over", "-> 5   for i=1,2 do a = a + i end"),
			stop(5, "step over", "-> 5   for i=1,2 do a = a + i end"),
			stop(6, "step over", `-> 6   redis.debug("hi", a, t)`),
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
		{"continue and breakpoints", []string{"b 6", "b 3", "b", "b -3", "b -3", "b 9", "b 6", "b x", "b -0", "c", "b 0", "b", "c"}, [][]string{
			{"   5   for i=1,2 do a = a + i end", "  #6   redis.debug(\"hi\", a, t)", "   7   redis.breakpoint()"},
			{"   2   local t = {1,2,\"x\"}", "  #3   redis.call('set', KEYS[1], ARGV[1])", "   4   local v = redis.call('get', KEYS[1])"},
			{"2 breakpoints set:", "  #6   redis.debug(\"hi\", a, t)", "  #3   redis.call('set', KEYS[1], ARGV[1])"},
			{"Breakpoint removed."},
			{"No breakpoint in the specified line."},
			{"Wrong line number."}, // past the last line
			{"Wrong line number."}, // set already, as Redis says
			{"Invalid argument:'x'"},
			{"Invalid argument:'-0'"},
			stop(6, "break point", `->#6   redis.debug("hi", a, t)`),
			{"All breakpoints removed."},
			{"No breakpoints set. Use 'b <line>' to add one."},
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
		{"list and whole", []string{"s", "l", "l 0", "l 7 1", "l 2 0", "l 3 -1", "w", "c", "c"}, [][]string{
			stop(2, "step over", `-> 2   local t = {1,2,"x"}`),
			{"   1   local a = 1", `-> 2   local t = {1,2,"x"}`, "   3   redis.call('set', KEYS[1], ARGV[1])", "   4   local v = redis.call('get', KEYS[1])",
				"   5   for i=1,2 do a = a + i end", `   6   redis.debug("hi", a, t)`, "   7   redis.breakpoint()"},
			{"   1   local a = 1", `-> 2   local t = {1,2,"x"}`, "   3   redis.call('set', KEYS[1], ARGV[1])", "   4   local v = redis.call('get', KEYS[1])",
				"   5   for i=1,2 do a = a + i end", `   6   redis.debug("hi", a, t)`, "   7   redis.breakpoint()"},
			{`   6   redis.debug("hi", a, t)`, "   7   redis.breakpoint()", "   8   return {v, a}"},
			{`-> 2   local t = {1,2,"x"}`},
			{},
			{"   1   local a = 1", `-> 2   local t = {1,2,"x"}`, "   3   redis.call('set', KEYS[1], ARGV[1])", "   4   local v = redis.call('get', KEYS[1])",
				"   5   for i=1,2 do a = a + i end", `   6   redis.debug("hi", a, t)`, "   7   redis.breakpoint()", "   8   return {v, a}"},
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
		{"print", []string{"p", "s", "s", "s", "p", "p t", "p KEYS", "p ARGV", "p nope", "p a b", "c", "c"}, [][]string{
			{"No local variables in the current context."},
			stop(2, "step over", `-> 2   local t = {1,2,"x"}`),
			stop(3, "step over", "-> 3   redis.call('set', KEYS[1], ARGV[1])"),
			{"<redis> set k1 v1", `<reply> "+OK"`, "* Stopped at 4, stop reason = step over", "-> 4   local v = redis.call('get', KEYS[1])"},
			{"<value> a = 1", `<value> t = {1; 2; "x"}`},
			{`<value> {1; 2; "x"}`},
			{`<value> {"k1"}`},
			{`<value> {"v1"}`},
			{"No such variable."},
			{"<value> a = 1", `<value> t = {1; 2; "x"}`}, // two arguments: all
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
		{"trace, eval, redis", []string{"t", "e 1+1", "e a", "e {1,{2}}", "e local z = 1", "e error('boom')", "e redis.pcall('nosuch')", "e",
			"r set k1 x", "r get k1", "r incr k1 y", "r nosuch", "r", "abort"}, [][]string{
			{"In top level:", "-> 1   local a = 1"},
			{"<retval> 2"},
			{"<error> ldb_eval:1: Script attempted to access nonexistent global variable 'a'"},
			{"<retval> {1; {2}}"},
			{"<retval> nil"},
			{"<error> ldb_eval:1: boom"},
			{`<retval> {["ignore_error_stats_update"]=true; ["err"]="ERR Unknown Redis command called from script"}`},
			{"<retval> nil"},
			{"<redis> set k1 x", `<reply> "+OK"`},
			{"<redis> get k1", `<reply> "x"`},
			{"<redis> incr k1 y", "<error> Wrong number of args calling Redis command from script"},
			{"<redis> nosuch", "<error> Unknown Redis command called from script"},
			{"<error> Unknown Redis Lua debugger command or wrong number of arguments."},
			end,
		}, "ERR script aborted for user request script: " + SHA1Hex([]byte(ldbScript)) + ", on @user_script:1."},
		{"maxlen", []string{"m", "m 0", "m 5", "m -3", "m abc", "m 100", "c", "c"}, [][]string{
			{"<value> replies are truncated at 256 bytes."},
			{"<value> replies are unlimited."},
			{"<value> replies are truncated at 60 bytes."},
			{"<value> replies are truncated at 60 bytes."},
			{"<value> replies are unlimited."},
			{"<value> replies are truncated at 100 bytes."},
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
		{"help and unknown", []string{"h", "zz", "c", "c"}, [][]string{
			ldbHelp,
			{"<error> Unknown Redis Lua debugger command or wrong number of arguments."},
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
		// Gone, the client gets no stop but redis.breakpoint()'s, which
		// finds it gone too: the script runs to its end, as in Redis.
		{"client gone", nil, [][]string{
			{`<debug> line 6: "hi", 4, {1; 2; "x"}`, "* Stopped at 8, stop reason = redis.breakpoint() called", "-> 8   return {v, a}"},
			end,
		}, `[v1 4]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			out, v := debugEval(t, h, &ldbClient{cmds: cmds(tc.cmds...)}, ldbScript, "k1", ",", "v1")
			want := append([][]string{first}, tc.want...)
			if !reflect.DeepEqual(out, want) {
				t.Errorf("debugger output:\n%s\nwant:\n%s", showArrays(out), showArrays(want))
			}
			if got := replyString(v); got != tc.reply {
				t.Errorf("reply %s, want %s", got, tc.reply)
			}
			if got := h.apply(fields("get k1")); got.Kind != resp.KindNull {
				t.Errorf("the session changed the group's state: GET k1 = %v", got)
			}
		})
	}
}

func showArrays(a [][]string) string {
	var b strings.Builder
	for _, lines := range a {
		fmt.Fprintf(&b, "  %q\n", lines)
	}
	return b.String()
}

// replyString renders a reply compactly: an error's text, an array's
// elements in brackets.
func replyString(v resp.Value) string {
	switch v.Kind {
	case resp.KindError, resp.KindBulk, resp.KindStatus:
		return string(v.Str)
	case resp.KindInt:
		return fmt.Sprint(v.Int)
	case resp.KindArray:
		parts := make([]string, len(v.Elems))
		for i, e := range v.Elems {
			parts[i] = replyString(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("kind %d", v.Kind)
}

// TestLDBValues: how print shows values and logged replies trim.
func TestLDBValues(t *testing.T) {
	script := "local big = string.rep('x', 300)\n" +
		"local nested = {{{{{{{{{{{{1}}}}}}}}}}}}\n" +
		"local nums = {1, -2.5, 1e20, 0.1, 123456789, 1/0, -1/0, 2^53}\n" +
		"local mixed = {1, 2, x = 3}\n" +
		"local s = \"q\\\"b\\\\\\r\\n\\t\\a\\b\\1\\127\\195\\169\"\n" +
		"redis.call('set', KEYS[1], big)\n" +
		"return 1\n"
	cmdList := []string{"b 7", "c", "p nested", "p nums", "p mixed", "p s", "p big", "m 0", "p big", "c"}
	out, _ := debugEval(t, newHarness(t), &ldbClient{cmds: cmds(cmdList...)}, script, "k")
	trimmed := "<value> \"" + strings.Repeat("x", 256-len(`<value> "`)) + " ..."
	want := [][]string{
		stop(1, "step over", "-> 1   local big = string.rep('x', 300)"),
		{"   6   redis.call('set', KEYS[1], big)", "  #7   return 1"},
		stop(7, "break point", "->#7   return 1"),
		{"<value> {{{{{{{{{{<max recursion level reached! Nested table?>}}}}}}}}}}"},
		{"<value> {1; -2.5; 1e+20; 0.1; 1.23457e+08; inf; -inf; 9.0072e+15}"},
		{`<value> {[1]=1; [2]=2; ["x"]=3}`},
		{`<value> "q\"b\\\r\n\t\a\b\x01\x7f\xc3\xa9"`},
		{trimmed, "<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming."},
		{"<value> replies are unlimited."},
		{`<value> "` + strings.Repeat("x", 300) + `"`},
		{"<endsession>"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("debugger output:\n%s\nwant:\n%s", showArrays(out), showArrays(want))
	}
}

// TestLDBReplies: replies as the debugger shows them, RESP2 and RESP3.
func TestLDBReplies(t *testing.T) {
	tests := []struct {
		v     resp.Value
		proto int
		want  string
	}{
		{resp.OK(), 2, `"+OK"`},
		{resp.Err(resp.NewError("ERR x\ty")), 2, `"-ERR x\ty"`},
		{resp.Int(-7), 2, "-7"},
		{resp.BulkString("a\x00b"), 2, `"a\x00b"`},
		{resp.Null(), 2, "NULL"},
		{resp.Null(), 3, "(null)"},
		{resp.Value{Kind: resp.KindNullArray}, 2, "NULL"},
		{resp.Array(resp.BulkString("a"), resp.Int(1), resp.Array()), 2, `["a",1,[]]`},
		{resp.Map(resp.BulkString("f"), resp.BulkString("v"), resp.BulkString("g"), resp.Int(2)), 3, `{"f" => "v","g" => 2}`},
		{resp.Map(resp.BulkString("f"), resp.BulkString("v")), 2, `["f","v"]`},
		{resp.Set(resp.BulkString("a"), resp.BulkString("b")), 3, `~("a","b")`},
		{resp.Value{Kind: resp.KindBool, Int: 1}, 3, "#true"},
		{resp.Value{Kind: resp.KindBool}, 3, "#false"},
		{resp.Value{Kind: resp.KindDouble, Float: 1.5}, 3, "(double) 1.5"},
		{resp.Value{Kind: resp.KindDouble, Float: 1.5}, 2, `"1.5"`},
		{resp.Value{Kind: resp.KindVerbatim, Str: []byte("txt:hi")}, 3, ""}, // Redis shows nothing
	}
	for _, tc := range tests {
		if got := ldbReply(tc.v, tc.proto); got != tc.want {
			t.Errorf("%v (RESP%d): %s, want %s", tc.v, tc.proto, got, tc.want)
		}
	}
}

func FuzzLDBHumanReply(f *testing.F) {
	for _, s := range []string{"*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+a\r\n_\r\n", "|1\r\n+a\r\n+b\r\n:1\r\n", ">2\r\n", "$5\r\nab", "*-1\r\n", "=5\r\ntxt:a\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		var b bytes.Buffer
		humanReply(&b, wire) // must not panic, whatever the bytes
	})
}

// TestLDBStackScopes: locals as Lua 5.1 scopes them, at each stop of a
// script with blocks of every kind (the texts are redis-server's).
func TestLDBStackScopes(t *testing.T) {
	script := `local t = {10, 20}
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
`
	var c []string
	for range 30 {
		c = append(c, "s", "p")
	}
	out, v := debugEval(t, newHarness(t), &ldbClient{cmds: cmds(c...)}, script)
	var got []string
	for _, lines := range out {
		for _, l := range lines {
			if strings.HasPrefix(l, "* Stopped at") {
				got = append(got, "@"+strings.TrimSuffix(strings.TrimPrefix(l, "* Stopped at "), ", stop reason = step over"))
			} else if v, ok := strings.CutPrefix(l, "<value> "); ok {
				got = append(got, strings.Split(v, " = ")[0])
			}
		}
	}
	want := strings.Fields(`@1 @2 t @3 t (for_generator) (for_state) (for_control) k v
		@2 t (for_generator) (for_state) (for_control) @3 t (for_generator) (for_state) (for_control) k v
		@2 t (for_generator) (for_state) (for_control)
		@5 t @6 t n @7 t n @8 t n inc @6 t n @10 t n @11 t n @12 t n a @19 t n @20 t n add
		@17 x y @18 x y s`)
	for i, w := range want {
		want[i] = strings.ReplaceAll(w, "_", " ")
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("stops and locals:\n %q\nwant\n %q", got, want)
	}
	if replyString(v) != "3" {
		t.Errorf("reply %v", v)
	}
}

// TestLDBEnded: a session ended from outside (SCRIPT KILL, the node
// closing) fails its script with the reason's error at once, whether the
// script waits for the client or runs.
func TestLDBEnded(t *testing.T) {
	tests := []struct {
		name, script string
		cmds         []string
		end          func(*DebugEnd)
		want         string
	}{
		{"killed while stopped", "local i = 0\nreturn i", nil, (*DebugEnd).Kill, errScriptKilled + " script: "},
		{"ended while running", "redis.breakpoint()\nwhile true do end", []string{"c"}, func(e *DebugEnd) { e.End("ERR gone away") }, "ERR gone away script: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := new(DebugEnd)
			c := &ldbClient{cmds: cmds(tc.cmds...)}
			c.onRead = func() {
				if len(c.cmds) == 0 { // the client sent its last command: end the session
					tc.end(end)
				}
			}
			_, v := debugEvalOpts(t, newHarness(t), c, DebugOpts{End: end}, tc.script)
			if got := replyString(v); !strings.HasPrefix(got, tc.want) {
				t.Errorf("reply %q, want %q…", got, tc.want)
			}
		})
	}
}

// TestLDBTimeout: a script that runs past the time limit without stopping
// stops ("timeout reached"); with its client gone, it fails.
func TestLDBTimeout(t *testing.T) {
	var now time.Duration
	clock := func() time.Duration { now += time.Millisecond; return now } // a millisecond a call
	script := "local i = 0\nwhile true do\n  i = i + 1\nend\n"
	out, v := debugEvalOpts(t, newHarness(t), &ldbClient{cmds: cmds("c")}, DebugOpts{Clock: clock, TimeLimit: 3 * time.Millisecond}, script)
	want := [][]string{
		stop(1, "step over", "-> 1   local i = 0"),
		stop(3, "timeout reached, infinite loop?", "-> 3     i = i + 1"),
		{"<endsession>"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("debugger output:\n%s\nwant:\n%s", showArrays(out), showArrays(want))
	}
	if got := replyString(v); !strings.HasPrefix(got, "ERR timeout during Lua debugging with client closing connection script: ") {
		t.Errorf("reply %q", got)
	}
}

// TestLDBProtocol: the client's bytes as Redis's debugger reads them.
func TestLDBProtocol(t *testing.T) {
	tests := []struct {
		name string
		raw  []string
		want string // the EVAL's reply
	}{
		{"garbage", []string{"hello\r\n"}, "ERR protocol error script: "},
		{"empty argument", []string{"*1\r\n$0\r\n\r\n"}, "ERR protocol error script: "},
		{"too many arguments", []string{"*1025\r\n"}, "ERR protocol error script: "},
		{"split over reads", []string{"*1\r", "\n$1\r\n", "c", "\r\n"}, "2"}, // continues
		{"leading junk", []string{"xx*1\r\n$1\r\nc\r\n"}, "2"},
		{"too much input", []string{"*2\r\n$1\r\na\r\n$" + strings.Repeat("1", 1<<20)}, "ERR max client buffer reached script: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := make([][]byte, len(tc.raw))
			for i, r := range tc.raw {
				raw[i] = []byte(r)
			}
			_, v := debugEval(t, newHarness(t), &ldbClient{raw: raw}, "local a = 1\nreturn a + 1")
			if got := replyString(v); !strings.HasPrefix(got, tc.want) {
				t.Errorf("reply %q, want %q…", got, tc.want)
			}
		})
	}
}

func TestParseLDBCommand(t *testing.T) {
	tests := []struct {
		in     string
		argv   []string
		status ldbParseStatus
	}{
		{"", nil, ldbNeedMore},
		{"*1\r\n$1\r\nc\r\n", []string{"c"}, ldbParsed},
		{"*2\r\n$1\r\nb\r\n$2\r\n10\r\nextra", []string{"b", "10"}, ldbParsed},
		{"*2\r\n$1\r\nb\r\n", nil, ldbNeedMore},
		{"*1\r\n$3\r\nab", nil, ldbNeedMore},
		{"*1", nil, ldbNeedMore},
		{"no star", nil, ldbProtocolError},
		{"\x00*1\r\n", nil, ldbProtocolError}, // a C string: it ends at the NUL
		{"*0\r\n", nil, ldbProtocolError},
		{"*1\r\n:1\r\n", nil, ldbProtocolError},
		{"*1\r\n$1\r\ncXX", nil, ldbProtocolError},
		{"*1\r\n$1025\r\n", nil, ldbProtocolError},
		{"* 1\r\n$ 1\r\nc\r\n", []string{"c"}, ldbParsed}, // atoi skips spaces
		{"*1x\r\n$1\r\nc\r\n", []string{"c"}, ldbParsed},  // and stops at the first non-digit
		{"*99999999999999999999\r\n", nil, ldbProtocolError},
		{"*1\r\n\x00$1\r\nc\r\n", nil, ldbNeedMore},
	}
	for _, tc := range tests {
		argv, status := parseLDBCommand([]byte(tc.in))
		var got []string
		for _, a := range argv {
			got = append(got, string(a))
		}
		if status != tc.status || !reflect.DeepEqual(got, tc.argv) {
			t.Errorf("%q: %q %d, want %q %d", tc.in, got, status, tc.argv, tc.status)
		}
	}
}

func FuzzParseLDBCommand(f *testing.F) {
	for _, s := range []string{"*1\r\n$1\r\nc\r\n", "*2\r\n$1\r\nb\r\n$2\r\n10\r\n", "x*1\r\n", "*1\r\n$0\r\n\r\n", "*-1\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		argv, status := parseLDBCommand(in)
		if status != ldbParsed {
			if argv != nil {
				t.Fatalf("%q: arguments without a command", in)
			}
			return
		}
		if len(argv) == 0 || len(argv) > ldbMaxArg {
			t.Fatalf("%q: %d arguments", in, len(argv))
		}
		for _, a := range argv {
			if len(a) == 0 || len(a) > ldbMaxArg {
				t.Fatalf("%q: an argument of %d bytes", in, len(a))
			}
		}
	})
}

func TestCAtoi(t *testing.T) {
	for in, want := range map[string]int{"": 0, "12": 12, "  -7x": -7, "+3": 3, "abc": 0, "2147483648": -2147483648,
		"99999999999999999999": -1, "-99999999999999999999": 0, "\t\n 5": 5} {
		if got := cAtoi([]byte(in)); got != want {
			t.Errorf("cAtoi(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestCFormatG(t *testing.T) {
	for in, want := range map[float64]string{4: "4", 0.5: "0.5", -2.5: "-2.5", 1e20: "1e+20", 1e-5: "1e-05", 123456789: "1.23457e+08", 100000: "100000", 1e6: "1e+06"} {
		if got := cFormatG(in); got != want {
			t.Errorf("cFormatG(%v) = %s, want %s", in, got, want)
		}
	}
}

// TestFramePC: the debugger reads gopher-lua's frame and program counter.
func TestFramePC(t *testing.T) {
	if luaFrameLayout.frame == ^uintptr(0) {
		t.Fatal("gopher-lua's Debug has no frame with a Pc")
	}
	out, _ := debugEval(t, newHarness(t), &ldbClient{cmds: cmds("s", "s")}, "local a = 1\nlocal b = 2\nreturn a + b")
	if len(out) != 4 || out[2][0] != "* Stopped at 3, stop reason = step over" {
		t.Fatalf("stops: %q", out)
	}
}

// TestLDBCopyIsolated: a session's writes change only its copy, while the
// group applies writes to the same keys at the same time (run with
// -race: the copy shares the store's structures until either side
// changes them).
func TestLDBCopyIsolated(t *testing.T) {
	h := newHarness(t)
	for _, line := range []string{"hset {k}h f v", "rpush {k}l a b", "zadd {k}z 1 a", "set {k}s v", "sadd {k}t a"} {
		h.apply(fields(line))
	}
	script := `for i = 1, 50 do
  redis.call('hset', KEYS[1], 'f' .. i, i)
  redis.call('rpush', KEYS[2], i)
  redis.call('zadd', KEYS[3], i, 'm' .. i)
  redis.call('append', KEYS[4], 'x')
  redis.call('sadd', KEYS[5], i)
end
return {redis.call('hlen', KEYS[1]), redis.call('llen', KEYS[2]), redis.call('zcard', KEYS[3]), redis.call('strlen', KEYS[4]), redis.call('scard', KEYS[5])}`
	const liveWrites = 200
	applied := make(chan struct{})
	writer := func() { // the group's own writes to the same keys, during the session
		defer close(applied)
		for n := range liveWrites {
			cmd := [][]string{{"hset", "{k}h", "g", "1"}, {"rpush", "{k}l", "c"}, {"zadd", "{k}z", "2", "b"}, {"append", "{k}s", "y"}, {"sadd", "{k}t", "b"}}[n%5]
			args := make([][]byte, len(cmd))
			for i, a := range cmd {
				args[i] = []byte(a)
			}
			idx := uint64(1000 + n)
			h.s.Apply(idx, &Entry{Type: EntryCommands, Now: t0, Seed: idx, Cmds: [][][]byte{args}})
		}
	}
	var steps []string
	for range 40 {
		steps = append(steps, "s")
	}
	c := &ldbClient{cmds: cmds(steps...)}
	c.onRead = func() { // the first stop: the copy is taken, the group goes on
		go writer()
		c.onRead = nil
	}
	_, v := debugEval(t, h, c, script, "{k}h", "{k}l", "{k}z", "{k}s", "{k}t")
	<-applied
	if got := replyString(v); got != "[51 52 51 51 51]" {
		t.Errorf("the session saw %s, want its own writes only: [51 52 51 51 51]", got)
	}
	h.idx = 2000
	for line, want := range map[string]int64{"hlen {k}h": 2, "llen {k}l": 2 + liveWrites/5, "zcard {k}z": 2, "strlen {k}s": 1 + liveWrites/5, "scard {k}t": 2} {
		if got := h.apply(fields(line)); got.Int != want {
			t.Errorf("%s = %d after the session, want %d: the session's writes reached the group", line, got.Int, want)
		}
	}
}

// FuzzLDBSession: whatever a client sends, a session ends (the script's
// budget bounds what eval and the script run) with a reply, and what the
// debugger sent is arrays of simple strings.
func FuzzLDBSession(f *testing.F) {
	for _, s := range []string{"*1\r\n$1\r\ns\r\n*1\r\n$1\r\np\r\n", "*2\r\n$1\r\ne\r\n$12\r\nwhile 1 do end\r\n",
		"*3\r\n$1\r\nr\r\n$3\r\nset\r\n$1\r\nk\r\n", "*2\r\n$1\r\nb\r\n$1\r\n3\r\n*1\r\n$1\r\nc\r\n", "junk", "*1\r\n$1\r\na\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h := newHarness(t)
		h.applyEntry(ScriptBudgetEntry(100_000))
		var raw [][]byte
		for len(in) > 0 {
			n := min(len(in), 100)
			raw, in = append(raw, in[:n]), in[n:]
		}
		c := &ldbClient{raw: raw}
		_, v := debugEval(t, h, c, "local t = {1, 'a'}\nfor i = 1, 3 do\n  t[i] = redis.call('incr', KEYS[1])\nend\nreturn t", "k")
		if v.Kind != resp.KindArray && v.Kind != resp.KindError {
			t.Fatalf("reply %v", v)
		}
	})
}

// TestLDBLogBound: debugger output piling up between two stops is
// bounded; the stop and the session's end still reach the client.
func TestLDBLogBound(t *testing.T) {
	script := "for i = 1, 200000 do redis.debug(string.rep('x', 100)) end\nredis.breakpoint()\nreturn 1"
	out, v := debugEval(t, newHarness(t), &ldbClient{cmds: cmds("c", "c")}, script)
	if len(out) != 3 {
		t.Fatalf("%d arrays", len(out))
	}
	lines, size := out[1], 0
	for _, l := range lines {
		size += len(l)
	}
	want := []string{fmt.Sprintf("<error> more than %d bytes of debugger output before the next stop: lines dropped", ldbMaxLogBytes),
		"* Stopped at 3, stop reason = redis.breakpoint() called", "-> 3   return 1"}
	if size > ldbMaxLogBytes+1000 || !reflect.DeepEqual(lines[len(lines)-3:], want) {
		t.Errorf("%d lines, %d bytes, ending %q", len(lines), size, lines[len(lines)-3:])
	}
	if !reflect.DeepEqual(out[2], []string{"<endsession>"}) || replyString(v) != "1" {
		t.Errorf("end %q, reply %v", out[2], v)
	}
}

// TestLDBBudget: the group's instruction budget bounds a session's script.
func TestLDBBudget(t *testing.T) {
	h := newHarness(t)
	h.applyEntry(ScriptBudgetEntry(1000))
	script := "local i = 0\nwhile true do i = i + 1 end"
	_, v := debugEval(t, h, &ldbClient{cmds: cmds("c")}, script)
	want := "ERR Script exceeded the execution budget of 1000 Lua instructions script: " + SHA1Hex([]byte(script))
	if got := replyString(v); got != want {
		t.Errorf("reply %q, want %q", got, want)
	}
}
