package fsm

import (
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/slotraft/slotraft/resp"
)

// Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and the data side of
// SCRIPT (LOAD, EXISTS, FLUSH).
//
// EVAL and EVALSHA are writes (flag "write", which Redis does not set: here
// it sends them through the log): the whole command (script text or SHA1 and
// the arguments) is one log entry, and the script runs inside Apply on every
// replica (lua.go), so its effects are atomic and identical everywhere.
// EVALSHA is resolved against the group's script cache, which is replicated:
// SCRIPT LOAD, SCRIPT FLUSH and every EVAL change it through the log, and it
// is part of the group's snapshot. EVAL_RO and EVALSHA_RO run on the read
// path and may not write.

var scriptCmd = commandsOf("scripting")

// Redis 7.2's scripting errors (eval.c).
var (
	// ErrNoScript is EVALSHA's error for a SHA1 the cache lacks.
	ErrNoScript        = resp.NewError("NOSCRIPT No matching script. Please use EVAL.")
	errNumKeysNegative = resp.NewError("ERR Number of keys can't be negative")
	errNumKeysTooMany  = resp.NewError("ERR Number of keys can't be greater than number of args")
	errNoScripting     = resp.NewError("ERR scripting is not available in this context")
	// scriptPrepareForRun's refusals (script.c), for scripts with a
	// shebang and functions; slotraft is always a cluster.
	errNoCluster   = resp.NewError("ERR Can not run script on cluster, 'no-cluster' flag is set.")
	errWriteFlagRO = resp.NewError("ERR Can not execute a script with write flag using *_ro command.")
)

func init() {
	aclScript := []string{"slow", "scripting"}
	const flags = resp.FlagNoScript | resp.FlagStale | resp.FlagSkipMonitor | resp.FlagMovableKeys
	const complexity = "Depends on the script that is executed."
	eval := withNumKeys(scriptCmd("eval", -3, flags|fW, 0, 0, 0, aclScript, "2.6.0",
		"Executes a server-side Lua script.", complexity, evalCmd(false, false)), &ScriptSpec{})
	evalRO := withNumKeys(scriptCmd("eval_ro", -3, flags|fR, 0, 0, 0, aclScript, "7.0.0",
		"Executes a read-only server-side Lua script.", complexity, evalCmd(false, true)), &ScriptSpec{})
	evalshaRO := withNumKeys(scriptCmd("evalsha_ro", -3, flags|fR, 0, 0, 0, aclScript, "7.0.0",
		"Executes a read-only server-side Lua script by SHA1 digest.", complexity, evalCmd(true, true)), &ScriptSpec{WithBody: evalRO})
	eval.Script.ReadOnly = evalRO
	register(eval,
		withNumKeys(scriptCmd("evalsha", -3, flags|fW, 0, 0, 0, aclScript, "2.6.0",
			"Executes a server-side Lua script by SHA1 digest.", complexity, evalCmd(true, false)),
			&ScriptSpec{WithBody: eval, ReadOnly: evalshaRO}),
		evalRO, evalshaRO, scriptContainer(),
	)
}

// ScriptSpec says how a command that runs a script or a function routes;
// the front end reads it (Command.Script).
type ScriptSpec struct {
	// Function: FCALL and FCALL_RO. A bad numkeys is answered by the
	// group that runs it (Redis reports an unknown function first), not
	// when the command is routed.
	Function bool
	// WithBody, for EVALSHA and EVALSHA_RO, is the command that takes the
	// script's body instead of its SHA1 (EVAL, EVAL_RO): the router
	// rewrites a call for a group whose cache lacks the script when
	// another group led on the same node has it.
	WithBody *Command
	// ReadOnly, for EVAL and EVALSHA, is their *_RO twin: the router sends
	// a script whose shebang says no-writes as a read (Redis runs it so).
	ReadOnly *Command
}

// withNumKeys makes c an EVAL-like command (name, body or SHA1 or
// function, numkeys, keys…) that routes as spec says: its key positions
// are found by EvalKeys, declared as one key spec with the key count at
// argument 2.
func withNumKeys(c *Command, spec *ScriptSpec) *Command {
	c.Script = spec
	c.Meta.Keys = EvalKeys
	rw := []string{"RW", "access", "update"}
	if c.Meta.Flags&fR != 0 {
		rw = []string{"RO", "access"}
	}
	c.Meta.KeySpecs = []resp.KeySpec{{Flags: rw, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1}}
	return c
}

// ParseNumKeys checks the numkeys argument of EVAL-like commands
// (args[0] name, args[1] script or SHA1, args[2] numkeys) and returns the
// number of keys, with Redis's errors.
func ParseNumKeys(args [][]byte) (int, error) {
	if len(args) < 3 {
		return 0, resp.ErrWrongArgs(string(args[0]))
	}
	n, err := resp.ParseInt(args[2])
	if err != nil {
		return 0, resp.ErrNotInteger
	}
	if n > int64(len(args)-3) {
		return 0, errNumKeysTooMany
	}
	if n < 0 {
		return 0, errNumKeysNegative
	}
	return int(n), nil
}

// EvalKeys is Meta.Keys of the EVAL family: the numkeys keys after numkeys,
// none when numkeys is invalid (the command then fails with its error).
func EvalKeys(args [][]byte) []int {
	n, err := ParseNumKeys(args)
	if err != nil || n == 0 {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 3 + i
	}
	return out
}

// SHA1Hex is the lowercase hex SHA1 of a script body, its name in the cache.
func SHA1Hex(body []byte) string {
	h := sha1.Sum(body)
	return hex.EncodeToString(h[:])
}

func evalCmd(bySHA, readOnly bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		nkeys, err := ParseNumKeys(args)
		if err != nil {
			return errReply(err)
		}
		if c.scripts == nil {
			return errReply(errNoScripting)
		}
		var sha string
		var body []byte
		if bySHA {
			sha = strings.ToLower(string(args[1]))
			var ok bool
			if body, ok = c.scripts.get(sha); !ok {
				return errReply(ErrNoScript)
			}
		} else {
			body = args[1]
			sha = SHA1Hex(body)
		}
		proto, err := c.scripts.compile(sha, body)
		if err != nil {
			return errReply(err)
		}
		// EVAL caches its script, as Redis does. A read (EVAL_RO on the
		// read path) must not change replicated state, so it does not.
		if !bySHA && c.Index != 0 {
			c.scripts.add(sha, body)
		}
		if err := proto.checkRun(readOnly); err != nil {
			return errReply(err) // after caching, as Redis's luaCreateFunction
		}
		keys := args[3 : 3+nkeys]
		argv := args[3+nkeys:]
		return runScript(c, sha, proto, keys, argv, readOnly || c.Index == 0)
	}
}

// The group side of SCRIPT, a container whose subcommands arrive through
// the log (LOAD and FLUSH: the node proposes them to every group it leads)
// or read (EXISTS). Its metadata is internal: COMMAND shows the node's.
func scriptContainer() *Command {
	sub := func(name string, arity int, flags resp.Flag, run func(*Ctx, [][]byte) resp.Value) *Command {
		return &Command{Meta: &resp.Command{Name: "script|" + name, Arity: arity, Flags: flags, Group: "scripting"},
			Run: func(c *Ctx, args [][]byte) resp.Value {
				if c.scripts == nil {
					return errReply(errNoScripting)
				}
				return run(c, args)
			}}
	}
	return container(&resp.Command{Name: "script", Arity: -2, Flags: fW, ACL: []string{"slow"}, Group: "scripting",
		Since: "2.6.0", Summary: "A container for Lua scripts management commands.", Complexity: "Depends on subcommand."},
		sub("exists", -3, fR, scriptExists),
		sub("flush", -2, fW, scriptFlush),
		sub("load", 3, fW, scriptLoad),
	)
}

func scriptLoad(c *Ctx, args [][]byte) resp.Value {
	if c.Index == 0 {
		return errf("ERR SCRIPT LOAD is a write and must be proposed")
	}
	sha := SHA1Hex(args[2])
	if _, err := c.scripts.compile(sha, args[2]); err != nil {
		return errReply(err)
	}
	c.scripts.add(sha, args[2])
	return resp.BulkString(sha)
}

func scriptExists(c *Ctx, args [][]byte) resp.Value {
	out := make([]resp.Value, len(args)-2)
	for i, a := range args[2:] {
		out[i] = zero
		if c.scripts.has(strings.ToLower(string(a))) {
			out[i] = one
		}
	}
	return resp.Array(out...)
}

func scriptFlush(c *Ctx, args [][]byte) resp.Value {
	switch {
	case len(args) > 3:
		return errReply(resp.ErrWrongArgs("script|flush"))
	case len(args) == 3 && !eq(args[2], "async") && !eq(args[2], "sync"):
		return errf("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
	case c.Index == 0:
		return errf("ERR SCRIPT FLUSH is a write and must be proposed")
	}
	c.scripts.flush()
	return resp.OK()
}

// scriptCache is a group's script cache. The scripts (SHA1 → body) are
// replicated state: they change only in Apply, under the State's write lock,
// and are read under its read lock. entries is append-only between flushes,
// so a snapshot keeps a slice of it without copying (Persist reads the
// entries below its length while Apply appends above it).
//
// compiled caches the compiled form of scripts by SHA1. It is derived,
// not replicated (compiling is deterministic), and has its own lock because
// reads (EVAL_RO) run concurrently.
type scriptCache struct {
	entries []scriptEntry
	index   map[string]int

	mu       sync.Mutex
	compiled map[string]*compiledScript

	// functions are the group's function libraries (function.go):
	// replicated state like entries, but SCRIPT FLUSH leaves them alone.
	functions functionLibs
}

type scriptEntry struct {
	sha  string
	body []byte
}

// maxCompiled bounds the compiled-script cache; it is dropped when full.
const maxCompiled = 4096

func (sc *scriptCache) get(sha string) ([]byte, bool) {
	i, ok := sc.index[sha]
	if !ok {
		return nil, false
	}
	return sc.entries[i].body, true
}

func (sc *scriptCache) has(sha string) bool {
	_, ok := sc.index[sha]
	return ok
}

// add caches body under sha unless it is there already.
func (sc *scriptCache) add(sha string, body []byte) {
	if sc.has(sha) {
		return
	}
	if sc.index == nil {
		sc.index = map[string]int{}
	}
	sc.index[sha] = len(sc.entries)
	sc.entries = append(sc.entries, scriptEntry{sha: sha, body: clone(body)})
}

func (sc *scriptCache) flush() {
	sc.entries, sc.index = nil, nil
	sc.mu.Lock()
	sc.compiled = nil
	sc.mu.Unlock()
}

// Len is the number of cached scripts.
func (sc *scriptCache) Len() int { return len(sc.entries) }

// view is the cache as of now, for a snapshot: O(1).
func (sc *scriptCache) view() []scriptEntry { return sc.entries[:len(sc.entries):len(sc.entries)] }

// compile returns the compiled script, compiling and remembering it if needed.
func (sc *scriptCache) compile(sha string, body []byte) (*compiledScript, error) {
	sc.mu.Lock()
	p, ok := sc.compiled[sha]
	sc.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compileScript(body)
	if err != nil {
		return nil, err
	}
	sc.mu.Lock()
	if sc.compiled == nil || len(sc.compiled) >= maxCompiled {
		sc.compiled = map[string]*compiledScript{}
	}
	sc.compiled[sha] = p
	sc.mu.Unlock()
	return p, nil
}

// encodeScripts renders the scripts section of a snapshot: a uvarint count,
// then per script a uvarint length and the body (the SHA1 is recomputed).
func encodeScripts(es []scriptEntry) []byte {
	size := binary.MaxVarintLen64
	for _, e := range es {
		size += binary.MaxVarintLen64 + len(e.body)
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = binary.AppendUvarint(b, uint64(len(e.body)))
		b = append(b, e.body...)
	}
	return b
}

// decodeScripts parses encodeScripts' output.
func decodeScripts(b []byte) ([]scriptEntry, error) {
	d := decoder{b: b}
	n, err := d.count("scripts")
	if err != nil {
		return nil, err
	}
	out := make([]scriptEntry, 0, min(n, 1024))
	for i := 0; i < n; i++ {
		enc, err := d.bytes("script bytes")
		if err != nil {
			return nil, fmt.Errorf("script %d: %w", i, err)
		}
		body := clone(enc)
		out = append(out, scriptEntry{sha: SHA1Hex(body), body: body})
	}
	if d.off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes after the scripts", ErrBadSnapshot, len(b)-d.off)
	}
	return out, nil
}

// installScripts installs a restored cache (under the write lock).
func (s *State) installScripts(entries []scriptEntry) {
	s.scripts.flush()
	for _, e := range entries {
		s.scripts.add(e.sha, e.body)
	}
}

// ScriptCount is the number of scripts in the group's cache (INFO, tests).
func (s *State) ScriptCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scripts.Len()
}

// HasScript reports whether the group's cache holds sha (any case).
func (s *State) HasScript(sha string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scripts.has(strings.ToLower(sha))
}

// ScriptBody returns the body cached under sha (any case).
func (s *State) ScriptBody(sha string) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scripts.get(strings.ToLower(sha))
}

// maxScriptsLen bounds the scripts section of a snapshot; it is read in
// chunks, so a corrupt length fails at the end of the input.
const maxScriptsLen = 1 << 30

// appendScriptsSection appends the snapshot's scripts section: length,
// encodeScripts, CRC-32C.
func appendScriptsSection(b []byte, es []scriptEntry) []byte {
	return appendChecked(b, encodeScripts(es))
}

// readScriptsSection reads appendScriptsSection's output.
func readScriptsSection(r io.Reader) ([]scriptEntry, error) {
	b, err := readChecked(r, "scripts", maxScriptsLen)
	if err != nil {
		return nil, err
	}
	es, err := decodeScripts(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return es, nil
}

// CheckScript compiles a script body and returns its SHA1, or Redis's
// compile error (for SCRIPT LOAD on a node that leads no group).
func CheckScript(body []byte) (string, error) {
	if _, err := compileScript(body); err != nil {
		return "", err
	}
	return SHA1Hex(body), nil
}
