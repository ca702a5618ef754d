package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/slotraft/slotraft/resp"
)

// fnStep is one command of a functions test: "FUNCTION …" ops go through
// an EntryFunctions entry, "READ …" ops through State.FunctionRead, and
// anything else (FCALL, GET…) is a command entry; "RO " runs a command on
// the read path.
type fnStep struct {
	args []string
	want string // exact, or a prefix when it ends with "*"
}

func (h *harness) function(op ...string) resp.Value {
	h.idx++
	r := h.s.Apply(h.idx, &Entry{Type: EntryFunctions, Now: h.now, Seed: h.idx, Cmds: [][][]byte{byteArgs(op)}})
	return replyOf(r[0])
}

func byteArgs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func (h *harness) fnRun(steps []fnStep) {
	h.t.Helper()
	for i, st := range steps {
		var got string
		switch st.args[0] {
		case "FUNCTION":
			got = show(h.function(st.args[1:]...))
		case "READ":
			got = show(h.s.FunctionRead(byteArgs(st.args[1:])))
		case "RO":
			got = h.scriptRead(st.args[1:]...)
		default:
			got = h.scriptDo(st.args...)
		}
		want := st.want
		if strings.HasSuffix(want, "*") && strings.HasPrefix(got, strings.TrimSuffix(want, "*")) {
			continue
		}
		if got != want {
			h.t.Errorf("step %d %q: got %s, want %s", i, st.args, got, want)
		}
	}
}

// fnCases runs each case on a new harness, after the setup functions.
func fnCases(t *testing.T, cases map[string][]fnStep, setup ...func(*harness)) {
	for name, steps := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			for _, f := range setup {
				f(h)
			}
			h.fnRun(steps)
		})
	}
}

// lib builds a library's code: the shebang and one line per function.
func lib(name string, lines ...string) string {
	return "#!lua name=" + name + "\n" + strings.Join(lines, "\n")
}

func reg(fn, body string) string {
	return "redis.register_function('" + fn + "', function(keys, args) " + body + " end)"
}

func TestFunctionLoad(t *testing.T) {
	ok := lib("l", reg("f", "return 1"))
	fnCases(t, map[string][]fnStep{
		"load and call": {
			{[]string{"FUNCTION", "LOAD", ok}, `"l"`},
			{[]string{"FCALL", "f", "0"}, ":1"},
			{[]string{"FCALL", "F", "0"}, ":1"}, // function names ignore case
			{[]string{"FUNCTION", "LOAD", ok}, "-ERR Library 'l' already exists"},
			{[]string{"FUNCTION", "LOAD", "replace", "REPLACE", lib("l", reg("g", "return 2"))}, `"l"`},
			{[]string{"FCALL", "f", "0"}, "-ERR Function not found"},
			{[]string{"FCALL", "g", "0"}, ":2"},
		},
		"metadata": {
			{[]string{"FUNCTION", "LOAD", reg("f", "return 1")}, "-ERR Missing library metadata"},
			{[]string{"FUNCTION", "LOAD", "#!lua name=x"}, "-ERR Invalid library metadata"},
			{[]string{"FUNCTION", "LOAD", "#!lua\n" + reg("f", "")}, "-ERR Library name was not given"},
			{[]string{"FUNCTION", "LOAD", "#!lua name=a name=b\n" + reg("f", "")}, "-ERR Invalid metadata value, name argument was given multiple times"},
			{[]string{"FUNCTION", "LOAD", "#!lua name=a foo=b\n" + reg("f", "")}, "-ERR Invalid metadata value given: foo=b"},
			{[]string{"FUNCTION", "LOAD", "#!lua name=a-b\n" + reg("f", "")}, "-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
			{[]string{"FUNCTION", "LOAD", "#!lua name=\n" + reg("f", "")}, "-ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
			{[]string{"FUNCTION", "LOAD", "#!js name=a\n" + reg("f", "")}, "-ERR Engine 'js' not found"},
			{[]string{"FUNCTION", "LOAD", "#!lua name=\"unbalanced\n" + reg("f", "")}, "-ERR Invalid library metadata"},
			{[]string{"FUNCTION", "LOAD", "#!LUA NAME=\"q\"\n" + reg("f", "return 'q'")}, `"q"`},
			{[]string{"FCALL", "f", "0"}, `"q"`},
			{[]string{"FUNCTION", "LOAD", "foo", ok}, "-ERR Unknown option given: foo"},
			{[]string{"FUNCTION", "LOAD", "replace"}, "-ERR Missing library metadata"},
		},
		"load environment": {
			{[]string{"FUNCTION", "LOAD", lib("l", "local s = string.format('%d', 1)")},
				"-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'string'"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.call('ping')")},
				"-ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"},
			{[]string{"FUNCTION", "LOAD", lib("l", "x = 1")}, "-ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"},
			{[]string{"FUNCTION", "LOAD", lib("l", "local a = nil + 1")}, "-ERR Error registering functions: ERR user_function:2: *"},
			{[]string{"FUNCTION", "LOAD", lib("l", "while true do end")}, "-ERR Error registering functions: ERR FUNCTION LOAD timeout"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.log(redis.LOG_WARNING, redis.REDIS_VERSION, redis.REDIS_VERSION_NUM)")}, "-ERR No functions registered"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function('f' function() end)")}, "-ERR Error compiling function: *"},
			{[]string{"READ", "LIST"}, "[]"},
		},
		"register_function": {
			{[]string{"FUNCTION", "LOAD", lib("l", reg("f", ""), reg("f", ""))}, "-ERR Error registering functions: ERR Function already exists in the library"},
			{[]string{"FUNCTION", "LOAD", lib("l", reg("f-x", ""))}, "-ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function()")}, "-ERR Error registering functions: ERR wrong number of arguments to redis.register_function"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function('a', 'b', 'c')")}, "-ERR Error registering functions: ERR wrong number of arguments to redis.register_function"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({}, function() end)")}, "-ERR Error registering functions: ERR first argument to redis.register_function must be a string"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function('x', 1)")}, "-ERR Error registering functions: ERR second argument to redis.register_function must be a function"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function('x')")}, "-ERR Error registering functions: ERR calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name='x'})")}, "-ERR Error registering functions: ERR redis.register_function must get a callback argument"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({callback=function() end})")}, "-ERR Error registering functions: ERR redis.register_function must get a function name argument"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name='x', callback=function() end, flags={'bad'}})")}, "-ERR Error registering functions: ERR unknown flag given"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name='x', callback=function() end, flags='no-writes'})")}, "-ERR Error registering functions: ERR flags argument to redis.register_function must be a table representing function flags"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name='x', callback=function() end, foo=1})")}, "-ERR Error registering functions: ERR unknown argument given to redis.register_function"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name={}, callback=function() end})")}, "-ERR Error registering functions: ERR function_name argument given to redis.register_function must be a string"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name='x', callback=1})")}, "-ERR Error registering functions: ERR callback argument given to redis.register_function must be a function"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function({function_name='x', callback=function() end, description={}})")}, "-ERR Error registering functions: ERR description argument given to redis.register_function must be a string"},
			{[]string{"FUNCTION", "LOAD", lib("l", "redis.register_function(12, function() return 12 end)")}, `"l"`},
			{[]string{"FCALL", "12", "0"}, ":12"},
		},
		"function collision": {
			{[]string{"FUNCTION", "LOAD", lib("a", reg("f", "return 'a'"))}, `"a"`},
			{[]string{"FUNCTION", "LOAD", lib("b", reg("F", "return 'b'"))}, "-ERR Function F already exists"},
			{[]string{"FUNCTION", "LOAD", "REPLACE", lib("a", reg("g", "return 'a'"))}, `"a"`},
			{[]string{"FUNCTION", "LOAD", lib("b", reg("F", "return 'b'"))}, `"b"`},
			{[]string{"FUNCTION", "LOAD", "REPLACE", lib("a", reg("f", "return 'a'"))}, "-ERR Function f already exists"},
			{[]string{"FCALL", "g", "0"}, `"a"`}, // a failed REPLACE keeps the old library
		},
	}, func(h *harness) {
		// A library's top-level code gets 100,000 instructions: the
		// "timeout" case spins until it runs out.
		h.scriptBudget(1_000_000)
	})
}

func TestFunctionDeleteFlushList(t *testing.T) {
	flagged := lib("flagged",
		"redis.register_function{function_name='ro', callback=function() return 1 end, description='reads', flags={'NO-WRITES', 'allow-oom', 'allow-stale', 'allow-cross-slot-keys'}}",
		reg("w", "return 2"))
	fnCases(t, map[string][]fnStep{
		"delete": {
			{[]string{"FUNCTION", "LOAD", lib("a", reg("f", "return 1"))}, `"a"`},
			{[]string{"FUNCTION", "DELETE", "A"}, "-ERR Library not found"}, // library names are case-sensitive
			{[]string{"FUNCTION", "DELETE", "a"}, "+OK"},
			{[]string{"FUNCTION", "DELETE", "a"}, "-ERR Library not found"},
			{[]string{"FCALL", "f", "0"}, "-ERR Function not found"},
		},
		"flush": {
			{[]string{"FUNCTION", "LOAD", lib("a", reg("f", "return 1"))}, `"a"`},
			{[]string{"FUNCTION", "FLUSH", "bad"}, "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option"},
			{[]string{"FUNCTION", "flush", "sync", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP."},
			{[]string{"FUNCTION", "FLUSH", "ASYNC"}, "+OK"},
			{[]string{"READ", "LIST"}, "[]"},
			{[]string{"FUNCTION", "FLUSH"}, "+OK"},
		},
		"list": {
			{[]string{"FUNCTION", "LOAD", flagged}, `"flagged"`},
			{[]string{"FUNCTION", "LOAD", lib("other", reg("o", "return 3"))}, `"other"`},
			{[]string{"READ", "LIST"}, `[{"library_name" "flagged" "engine" "LUA" "functions" [` +
				`{"name" "ro" "description" "reads" "flags" [+no-writes +allow-oom +allow-stale +allow-cross-slot-keys]} ` +
				`{"name" "w" "description" nil "flags" []}]} ` +
				`{"library_name" "other" "engine" "LUA" "functions" [{"name" "o" "description" nil "flags" []}]}]`},
			{[]string{"READ", "LIST", "LIBRARYNAME", "OTH*"}, `[{"library_name" "other" "engine" "LUA" "functions" [{"name" "o" "description" nil "flags" []}]}]`},
			{[]string{"READ", "LIST", "withcode", "libraryname", "o*"}, `[{"library_name" "other" "engine" "LUA" "functions" [{"name" "o" "description" nil "flags" []}] "library_code" "#!lua name=other\nredis.register_function('o', function(keys, args) return 3 end)"}]`},
			{[]string{"READ", "LIST", "libraryname", "nomatch"}, "[]"},
			{[]string{"READ", "LIST", "withcode", "withcode"}, "-ERR Unknown argument withcode"},
			{[]string{"READ", "LIST", "libraryname"}, "-ERR library name argument was not given"},
			{[]string{"READ", "LIST", "libraryname", "a", "libraryname", "b"}, "-ERR Unknown argument libraryname"},
			{[]string{"READ", "LIST", "foo"}, "-ERR Unknown argument foo"},
			{[]string{"READ", "STATS"}, `{"running_script" nil "engines" {"LUA" {"libraries_count" :2 "functions_count" :3}}}`},
		},
	})
}

func TestFunctionCall(t *testing.T) {
	code := lib("l",
		"local counter = 0",
		"redis.register_function('inc', function() counter = counter + 1 return counter end)",
		reg("set", "return redis.call('set', keys[1], args[1])"),
		reg("echo", "return {keys, args}"),
		reg("keysglobal", "return KEYS"),
		reg("boom", "error('boom')"),
		reg("global", "x = 1"),
		reg("resp3", "redis.setresp(3) return redis.call('hgetall', keys[1])"),
		"redis.register_function{function_name='get', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}",
		"redis.register_function{function_name='sneaky', callback=function(keys) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}",
		"redis.register_function{function_name='nocluster', callback=function() return 1 end, flags={'no-cluster'}}",
		reg("spin", "while true do end"),
	)
	fnCases(t, map[string][]fnStep{
		"calls": {
			{[]string{"FUNCTION", "LOAD", code}, `"l"`},
			{[]string{"FCALL", "set", "1", "{k}a", "v"}, "+OK"},
			{[]string{"GET", "{k}a"}, `"v"`},
			{[]string{"FCALL", "get", "1", "{k}a"}, `"v"`},
			{[]string{"RO", "FCALL_RO", "get", "1", "{k}a"}, `"v"`},
			{[]string{"FCALL_RO", "get", "1", "{k}a"}, `"v"`},
			{[]string{"FCALL", "echo", "2", "{k}a", "{k}b", "x", "y"}, `[["{k}a" "{k}b"] ["x" "y"]]`},
			// Each call runs the library afresh: top-level locals do not persist.
			{[]string{"FCALL", "inc", "0"}, ":1"},
			{[]string{"FCALL", "inc", "0"}, ":1"},
			{[]string{"HSET", "{k}h", "f", "v"}, ":1"},
			{[]string{"FCALL", "resp3", "1", "{k}h"}, `{"f" "v"}`},
		},
		"errors": {
			{[]string{"FUNCTION", "LOAD", code}, `"l"`},
			{[]string{"FCALL", "nosuch", "0"}, "-ERR Function not found"},
			{[]string{"FCALL", "nosuch", "x"}, "-ERR Function not found"},
			{[]string{"FCALL", "inc", "x"}, "-ERR Bad number of keys provided"},
			{[]string{"FCALL", "inc", "-1"}, "-ERR Number of keys can't be negative"},
			{[]string{"FCALL", "inc", "2", "a"}, "-ERR Number of keys can't be greater than number of args"},
			{[]string{"FCALL_RO", "inc", "0"}, "-ERR Can not execute a script with write flag using *_ro command."},
			{[]string{"RO", "FCALL_RO", "set", "1", "a", "b"}, "-ERR Can not execute a script with write flag using *_ro command."},
			{[]string{"FCALL", "sneaky", "1", "a"}, "-ERR Write commands are not allowed from read-only scripts. script: sneaky, on @user_function:11."},
			{[]string{"FCALL", "nocluster", "0"}, "-ERR Can not run script on cluster, 'no-cluster' flag is set."},
			{[]string{"FCALL", "keysglobal", "0"}, "-ERR user_function:6: Script attempted to access nonexistent global variable 'KEYS' script: keysglobal, on @user_function:6."},
			{[]string{"FCALL", "boom", "0"}, "-ERR user_function:7: boom script: boom, on @user_function:7."},
			{[]string{"FCALL", "global", "0"}, "-ERR user_function:8: Attempt to modify a readonly table script: global, on @user_function:8."},
			{[]string{"FCALL", "set", "0", "v"}, "-ERR Lua redis lib command arguments must be strings or integers script: set, on @user_function:4."},
		},
	})
	t.Run("budget", func(t *testing.T) {
		h := newHarness(t)
		h.scriptBudget(100_000)
		h.fnRun([]fnStep{
			{[]string{"FUNCTION", "LOAD", code}, `"l"`},
			{[]string{"FCALL", "spin", "0"}, "-ERR Script exceeded the execution budget of 100000 Lua instructions script: spin"},
		})
	})
}

// functionDumpOf applies FUNCTION DUMP through the read path and returns the payload.
func functionDumpOf(t *testing.T, h *harness) string {
	t.Helper()
	v := h.s.FunctionRead(byteArgs([]string{"DUMP"}))
	if v.Kind != resp.KindBulk {
		t.Fatalf("DUMP: %s", show(v))
	}
	return string(v.Str)
}

func TestFunctionDumpRestore(t *testing.T) {
	src := newHarness(t)
	src.fnRun([]fnStep{
		{[]string{"FUNCTION", "LOAD", lib("a", reg("fa", "return 'a'"))}, `"a"`},
		{[]string{"FUNCTION", "LOAD", lib("b", reg("fb", "return 'b'"))}, `"b"`},
	})
	payload := functionDumpOf(t, src)
	other := functionDumpOf(t, func() *harness {
		h := newHarness(t)
		h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", lib("a", reg("fa2", "return 'a2'"))}, `"a"`}})
		return h
	}())
	clash := functionDumpOf(t, func() *harness {
		h := newHarness(t)
		h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", lib("c", reg("fa", "return 'c'"))}, `"c"`}})
		return h
	}())
	corrupt := []byte(payload)
	corrupt[3] ^= 1
	newer := []byte(payload[:len(payload)-10])
	newer = binary.LittleEndian.AppendUint16(newer, 12)
	newer = binary.LittleEndian.AppendUint64(newer, rdbCRC(newer))
	notFunc := binary.LittleEndian.AppendUint16([]byte{0, 1, 'x'}, 10)
	notFunc = binary.LittleEndian.AppendUint64(notFunc, rdbCRC(notFunc))
	truncated := binary.LittleEndian.AppendUint16([]byte{rdbOpcodeFunction2, 40, 'x'}, 10)
	truncated = binary.LittleEndian.AppendUint64(truncated, rdbCRC(truncated))
	fnCases(t, map[string][]fnStep{
		"round trip": {
			{[]string{"FUNCTION", "RESTORE", payload}, "+OK"},
			{[]string{"FCALL", "fa", "0"}, `"a"`},
			{[]string{"FCALL", "fb", "0"}, `"b"`},
			{[]string{"READ", "STATS"}, `{"running_script" nil "engines" {"LUA" {"libraries_count" :2 "functions_count" :2}}}`},
		},
		"append collides": {
			{[]string{"FUNCTION", "RESTORE", other}, "+OK"},
			{[]string{"FUNCTION", "RESTORE", payload}, "-ERR Library a already exists"},
			{[]string{"FUNCTION", "RESTORE", payload, "APPEND"}, "-ERR Library a already exists"},
			{[]string{"FCALL", "fb", "0"}, "-ERR Function not found"}, // nothing of a failed restore stays
		},
		"replace": {
			{[]string{"FUNCTION", "RESTORE", other}, "+OK"},
			{[]string{"FUNCTION", "RESTORE", payload, "replace"}, "+OK"},
			{[]string{"FCALL", "fa", "0"}, `"a"`},
			{[]string{"FCALL", "fa2", "0"}, "-ERR Function not found"},
			{[]string{"FUNCTION", "RESTORE", clash, "REPLACE"}, "-ERR Function fa already exists"},
		},
		"flush policy": {
			{[]string{"FUNCTION", "LOAD", lib("z", reg("fz", "return 'z'"))}, `"z"`},
			{[]string{"FUNCTION", "RESTORE", payload, "FLUSH"}, "+OK"},
			{[]string{"FCALL", "fz", "0"}, "-ERR Function not found"},
			{[]string{"FCALL", "fb", "0"}, `"b"`},
		},
		"bad payloads": {
			{[]string{"FUNCTION", "RESTORE", payload, "bad"}, "-ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."},
			{[]string{"FUNCTION", "RESTORE", payload, "FLUSH", "x"}, "-ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP."},
			{[]string{"FUNCTION", "RESTORE", "short"}, "-ERR DUMP payload version or checksum are wrong"},
			{[]string{"FUNCTION", "RESTORE", string(corrupt)}, "-ERR DUMP payload version or checksum are wrong"},
			{[]string{"FUNCTION", "RESTORE", string(newer)}, "-ERR DUMP payload version or checksum are wrong"},
			{[]string{"FUNCTION", "RESTORE", string(notFunc)}, "-ERR given type is not a function"},
			{[]string{"FUNCTION", "RESTORE", string(truncated)}, "-ERR Failed loading library payload"},
			{[]string{"FUNCTION", "RESTORE", payload[:len(payload)-10] + payload}, "-ERR DUMP payload version or checksum are wrong"},
		},
		"empty": {
			{[]string{"FUNCTION", "LOAD", lib("z", reg("fz", "return 'z'"))}, `"z"`},
			{[]string{"FUNCTION", "RESTORE", functionDumpOf(t, newHarness(t)), "FLUSH"}, "+OK"},
			{[]string{"READ", "LIST"}, "[]"},
		},
	})
}

// TestFunctionDumpFromRedis restores a payload taken from redis-server 7.0
// (an LZF-compressed library).
func TestFunctionDumpFromRedis(t *testing.T) {
	// FUNCTION DUMP of redis-server 7.0.15 after
	// FUNCTION LOAD "#!lua name=cd\nredis.register_function(\"g\", function() return 1 end)\n-- aaaa…(78 a)".
	p := mustHex(t, "f5c3404b40951f23216c7561206e616d653d63640a72656469732e72656769737465725f66756e0a6374696f6e"+
		"282267222c20e0000d13292072657475726e203120656e64290a2d2d2061e042000161610a007f101f420506d141")
	h := newHarness(t)
	h.fnRun([]fnStep{
		{[]string{"FUNCTION", "RESTORE", string(p)}, "+OK"},
		{[]string{"FCALL", "g", "0"}, ":1"},
		{[]string{"READ", "LIST", "WITHCODE"}, `[{"library_name" "cd" "engine" "LUA" "functions" [{"name" "g" "description" nil "flags" []}] "library_code" "#!lua name=cd\nredis.register_function(\"g\", function() return 1 end)\n-- ` + strings.Repeat("a", 78) + `"}]`},
	})
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	out, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFunctionApplied(t *testing.T) {
	h := newHarness(t)
	a := lib("a", reg("fa", "return 1"))
	h.fnRun([]fnStep{{[]string{"FUNCTION", "LOAD", a}, `"a"`}})
	payload := functionDumpOf(t, h)
	cases := []struct {
		op   []string
		want bool
	}{
		{[]string{"load", a}, true},
		{[]string{"LOAD", "REPLACE", a}, true},
		{[]string{"load", lib("a", reg("fa", "return 2"))}, false},
		{[]string{"load", lib("b", reg("fb", "return 2"))}, false},
		{[]string{"delete", "a"}, false},
		{[]string{"delete", "b"}, true},
		{[]string{"flush"}, false},
		{[]string{"restore", payload}, true},
		{[]string{"restore", payload, "flush"}, true},
		{[]string{"restore", "garbage"}, false},
		{[]string{"bogus"}, false},
	}
	for _, c := range cases {
		if got := h.s.FunctionApplied(byteArgs(c.op)); got != c.want {
			t.Errorf("FunctionApplied(%.40q) = %v, want %v", c.op, got, c.want)
		}
	}
}

func TestCheckFunctionWrite(t *testing.T) {
	cases := []struct {
		op   []string
		want string // "" for no error
	}{
		{[]string{"load", lib("a", reg("f", ""))}, ""},
		{[]string{"load", lib("a", "syntax error here")}, ""}, // compile errors come from the groups
		{[]string{"load", "no shebang"}, "ERR Missing library metadata"},
		{[]string{"load", "x", lib("a", "")}, "ERR Unknown option given: x"},
		{[]string{"delete", "a"}, ""},
		{[]string{"flush", "x"}, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option"},
		{[]string{"restore", "x"}, "ERR DUMP payload version or checksum are wrong"},
		{[]string{"list"}, "ERR unknown subcommand 'list'. Try FUNCTION HELP."},
	}
	for _, c := range cases {
		err := CheckFunctionWrite(byteArgs(c.op))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("CheckFunctionWrite(%.30q) = %q, want %q", c.op, got, c.want)
		}
	}
	if err := CheckFunctionRead(byteArgs([]string{"list", "bad"})); err == nil || err.Error() != "ERR Unknown argument bad" {
		t.Errorf("CheckFunctionRead(list bad) = %v", err)
	}
}

// TestFunctionSnapshot: libraries survive a snapshot round trip, and a
// version 3 snapshot (no functions section) still restores.
func TestFunctionSnapshot(t *testing.T) {
	f := New(1, nil)
	h := &harness{t: t, s: f.state, now: t0}
	h.fnRun([]fnStep{
		{[]string{"FUNCTION", "LOAD", lib("a", reg("fa", "return 'a'"))}, `"a"`},
		{[]string{"FUNCTION", "LOAD", lib("b", "redis.register_function{function_name='fb', callback=function() return 'b' end, flags={'no-writes'}}")}, `"b"`},
		{[]string{"SET", "k", "v"}, "+OK"},
	})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := New(1, nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	h2 := &harness{t: t, s: g.state, now: t0, idx: h.idx}
	h2.fnRun([]fnStep{
		{[]string{"FCALL", "fa", "0"}, `"a"`},
		{[]string{"FCALL_RO", "fb", "0"}, `"b"`},
		{[]string{"GET", "k"}, `"v"`},
	})
	if a, b := show(f.state.FunctionRead(byteArgs([]string{"list", "withcode"}))), show(g.state.FunctionRead(byteArgs([]string{"list", "withcode"}))); a != b {
		t.Errorf("restored libraries differ:\n%s\n%s", a, b)
	}

	// Version 3: header, waiters, scripts, store; restoring it drops the
	// libraries the state had.
	var v3 bytes.Buffer
	v3.WriteString(snapMagic)
	v3.WriteByte(3)
	_ = binary.Write(&v3, binary.BigEndian, uint64(t0))
	ws := encodeWaiters(nil)
	_ = binary.Write(&v3, binary.BigEndian, uint32(len(ws)))
	v3.Write(ws)
	_ = binary.Write(&v3, binary.BigEndian, crc32.Checksum(ws, crc32c))
	v3.Write(appendScriptsSection(nil, nil))
	if _, err := f.state.Snapshot().view.WriteTo(&v3); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader(v3.Bytes()))); err != nil {
		t.Fatalf("restore v3: %v", err)
	}
	h2.fnRun([]fnStep{
		{[]string{"GET", "k"}, `"v"`},
		{[]string{"FCALL", "fa", "0"}, "-ERR Function not found"},
	})
	if n := g.state.LibraryCount(); n != 0 {
		t.Errorf("libraries after a v3 restore: %d", n)
	}

	// A corrupt functions section is refused and leaves the state alone.
	bad := append([]byte(nil), sink.Bytes()...)
	i := bytes.Index(bad, []byte("#!lua name=a"))
	bad[i+2] = 'X'
	if err := g.Restore(io.NopCloser(bytes.NewReader(bad))); !errors.Is(err, ErrBadSnapshot) {
		t.Errorf("restore of a corrupt functions section: %v, want ErrBadSnapshot", err)
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

func TestFunctionEntryUnknownToOldNodes(t *testing.T) {
	// EntryFunctions has no IgnoreUnknown bit: a node that does not know
	// it must stop instead of skipping it.
	if EntryFunctions&IgnoreUnknown != 0 {
		t.Fatal("EntryFunctions may be skipped")
	}
	e := &Entry{Type: EntryFunctions, Now: t0, Cmds: [][][]byte{byteArgs([]string{"flush"})}}
	d, err := DecodeEntry(e.Encode())
	if err != nil || d.Type != EntryFunctions || string(d.Cmds[0][0]) != "flush" {
		t.Fatalf("round trip: %+v %v", d, err)
	}
}

// seedSet is a set with one library, for fuzz seeds.
func seedSet(f *testing.F) *functionSet {
	set := newFunctionSet()
	if _, err := set.load([]byte(lib("a", reg("fa", "return 1"))), false, loadBudget(DefaultScriptBudget)); err != nil {
		f.Fatal(err)
	}
	return set
}

func FuzzFunctionPayload(f *testing.F) {
	f.Add(dumpFunctions(seedSet(f).sorted()))
	f.Add([]byte{rdbOpcodeFunction2, 0xC3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		// Any bytes: an error or libraries, never a panic; with a valid
		// footer the body is parsed too.
		_, _ = restoreFunctions(p, loadBudget(DefaultScriptBudget))
		q := append(append([]byte(nil), p...), 10, 0)
		q = binary.LittleEndian.AppendUint64(q, rdbCRC(q))
		if set, err := restoreFunctions(q, loadBudget(DefaultScriptBudget)); err == nil {
			if back := dumpFunctions(set.sorted()); len(set.libs) > 0 && len(back) == 0 {
				t.Fatal("empty dump of restored libraries")
			}
		}
	})
}

func FuzzFunctionSnapshotSection(f *testing.F) {
	f.Add(appendFunctionsSection(nil, seedSet(f)))
	f.Fuzz(func(t *testing.T, b []byte) {
		set, err := readFunctionsSection(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			return
		}
		again, err := readFunctionsSection(bytes.NewReader(appendFunctionsSection(nil, set)))
		if err != nil || len(again.libs) != len(set.libs) {
			t.Fatalf("re-encoded section: %v, %d libraries, want %d", err, len(again.libs), len(set.libs))
		}
	})
}
