package fsm

import (
	"slices"
	"strings"
	"sync/atomic"

	"github.com/slotraft/slotraft/resp"
)

// Redis Functions: the group side of FUNCTION and FCALL, FCALL_RO.
//
// A group's libraries are replicated state, like the script cache: they
// change only through EntryFunctions log entries (the FUNCTION write
// subcommands LOAD, DELETE, FLUSH and RESTORE, which the cluster proposes
// to every group), and they are part of the group's snapshot. FCALL is a
// write (one log entry, run inside Apply on every replica, as EVAL);
// FCALL_RO runs on the read path and may not write. The Lua side is in
// function_lua.go, DUMP/RESTORE payloads and the snapshot section in
// function_rdb.go, the read subcommands in function_read.go.

// functionSet is one generation of a group's libraries. It is never
// changed once installed: a change builds a new set (libraries are few),
// so snapshots and concurrent reads keep the set they took.
type functionSet struct {
	libs  map[string]*library     // by name, case-sensitive as in Redis
	funcs map[string]*libFunction // by lowercase name: FCALL ignores case
}

// functionLibs holds a group's current set (in scriptCache, so that every
// Ctx that can run scripts reaches it). It changes under the State's write
// lock; the pointer is atomic so that FUNCTION STATS can read it without
// the lock, which a busy script may keep (State.FunctionStats).
type functionLibs struct {
	cur atomic.Pointer[functionSet]
}

func newFunctionSet() *functionSet {
	return &functionSet{libs: map[string]*library{}, funcs: map[string]*libFunction{}}
}

func (fl *functionLibs) set() *functionSet {
	if cur := fl.cur.Load(); cur != nil {
		return cur
	}
	return newFunctionSet()
}

// lookup finds a function by name, any case.
func (fl *functionLibs) lookup(name []byte) *libFunction {
	cur := fl.cur.Load()
	if cur == nil {
		return nil
	}
	return cur.funcs[strings.ToLower(string(name))]
}

func (s *functionSet) clone() *functionSet {
	out := &functionSet{libs: make(map[string]*library, len(s.libs)), funcs: make(map[string]*libFunction, len(s.funcs))}
	for k, v := range s.libs {
		out.libs[k] = v
	}
	for k, v := range s.funcs {
		out.funcs[k] = v
	}
	return out
}

func (s *functionSet) link(lib *library) {
	s.libs[lib.name] = lib
	for _, fn := range lib.funcs {
		s.funcs[strings.ToLower(fn.name)] = fn
	}
}

func (s *functionSet) unlink(lib *library) {
	delete(s.libs, lib.name)
	for _, fn := range lib.funcs {
		delete(s.funcs, strings.ToLower(fn.name))
	}
}

// sorted lists the libraries by name: the order of FUNCTION LIST, DUMP
// and the snapshot (Redis's is its hash table's).
func (s *functionSet) sorted() []*library {
	out := make([]*library, 0, len(s.libs))
	for _, l := range s.libs {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *library) int { return strings.Compare(a.name, b.name) })
	return out
}

// load adds (or with replace, replaces) the library in code, on s itself:
// callers load into a clone they discard on error. Its top-level code may
// run budget instructions. The checks come in Redis's order
// (functionsCreateWithLibraryCtx).
func (s *functionSet) load(code []byte, replace bool, budget int64) (string, error) {
	meta, err := parseLibraryMeta(code)
	if err != nil {
		return "", err
	}
	old := s.libs[meta.name]
	if old != nil && !replace {
		return "", resp.Errorf("ERR Library '%s' already exists", meta.name)
	}
	lib, err := buildLibrary(meta, code, budget)
	if err != nil {
		return "", err
	}
	if old != nil {
		s.unlink(old)
	}
	for _, fn := range lib.funcs {
		if _, dup := s.funcs[strings.ToLower(fn.name)]; dup {
			return "", resp.Errorf("ERR Function %s already exists", fn.name)
		}
	}
	s.link(lib)
	return lib.name, nil
}

// join adds src's libraries to s (libraryJoin): a library already in s is
// an error, or with replace is replaced; a function name taken by another
// library is an error.
func (s *functionSet) join(src *functionSet, replace bool) error {
	libs := src.sorted()
	for _, lib := range libs {
		if old := s.libs[lib.name]; old != nil {
			if !replace {
				return resp.Errorf("ERR Library %s already exists", lib.name)
			}
			s.unlink(old)
		}
	}
	for _, lib := range libs {
		for _, fn := range lib.funcs {
			if _, dup := s.funcs[strings.ToLower(fn.name)]; dup {
				return resp.Errorf("ERR Function %s already exists", fn.name)
			}
		}
	}
	for _, lib := range libs {
		s.link(lib)
	}
	return nil
}

// functionOpKind is a FUNCTION subcommand the groups answer: a write
// (through the log) or a read.
type functionOpKind uint8

const (
	opLoad functionOpKind = iota + 1
	opDelete
	opFlush
	opRestore
	opList
	opDump
	opStats
)

// functionOps names the subcommands of the FUNCTION op codec: the op of an
// EntryFunctions entry, or a read a node asks a group's leader for.
var functionOps = map[string]functionOpKind{
	"load": opLoad, "delete": opDelete, "flush": opFlush, "restore": opRestore,
	"list": opList, "dump": opDump, "stats": opStats,
}

// functionOpOf is the kind of op whose subcommand is sub (0: none).
func functionOpOf(sub []byte) functionOpKind { return functionOps[strings.ToLower(string(sub))] }

// read: the op reads the libraries and changes nothing.
func (k functionOpKind) read() bool { return k >= opList }

// restorePolicy is FUNCTION RESTORE's policy.
type restorePolicy uint8

const (
	restoreAppend restorePolicy = iota
	restoreReplace
	restoreFlush
)

// functionOp is a parsed FUNCTION write subcommand.
type functionOp struct {
	kind    functionOpKind
	replace bool   // LOAD REPLACE
	code    []byte // LOAD
	name    string // DELETE
	payload []byte // RESTORE
	policy  restorePolicy
}

var errFunctionNotFound = resp.NewError("ERR Function not found")

// subcommandSyntax is addReplySubcommandSyntaxError for FUNCTION.
func subcommandSyntax(sub []byte) error {
	return resp.Errorf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try FUNCTION HELP.", sub)
}

// parseFunctionOp parses op (a FUNCTION write subcommand without the
// container name, arity checked or not) with Redis's errors.
func parseFunctionOp(op [][]byte) (functionOp, error) {
	if len(op) == 0 {
		return functionOp{}, resp.ErrWrongArgs("function")
	}
	switch functionOpOf(op[0]) {
	case opLoad:
		if len(op) < 2 {
			return functionOp{}, resp.ErrWrongArgs("function|load")
		}
		o := functionOp{kind: opLoad, code: op[len(op)-1]}
		for _, a := range op[1 : len(op)-1] {
			if !eq(a, "replace") {
				return functionOp{}, resp.Errorf("ERR Unknown option given: %s", a)
			}
			o.replace = true
		}
		return o, nil
	case opDelete:
		if len(op) != 2 {
			return functionOp{}, resp.ErrWrongArgs("function|delete")
		}
		return functionOp{kind: opDelete, name: string(op[1])}, nil
	case opFlush:
		switch {
		case len(op) > 2:
			return functionOp{}, subcommandSyntax(op[0])
		case len(op) == 2 && !eq(op[1], "sync") && !eq(op[1], "async"):
			return functionOp{}, resp.NewError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		}
		return functionOp{kind: opFlush}, nil
	case opRestore:
		return parseRestoreOp(op)
	}
	return functionOp{}, resp.ErrUnknownSubcommand([]byte("FUNCTION"), op[0])
}

func parseRestoreOp(op [][]byte) (functionOp, error) {
	switch {
	case len(op) < 2:
		return functionOp{}, resp.ErrWrongArgs("function|restore")
	case len(op) > 3:
		return functionOp{}, subcommandSyntax(op[0])
	}
	o := functionOp{kind: opRestore, payload: op[1]}
	if len(op) == 3 {
		switch {
		case eq(op[2], "append"):
		case eq(op[2], "replace"):
			o.policy = restoreReplace
		case eq(op[2], "flush"):
			o.policy = restoreFlush
		default:
			return functionOp{}, resp.NewError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
		}
	}
	return o, nil
}

// apply runs one FUNCTION write subcommand against the current set, with
// the load budget of the group's setting, and returns Redis's reply; the
// set changes only when it succeeds.
func (fl *functionLibs) apply(op [][]byte, budget int64) resp.Value {
	o, err := parseFunctionOp(op)
	if err != nil {
		return errReply(err)
	}
	next, reply, err := o.run(fl.set(), budget)
	if err != nil {
		return errReply(err)
	}
	fl.cur.Store(next)
	return reply
}

// run computes the set after o, and o's reply; libraries load within
// budget instructions.
func (o functionOp) run(cur *functionSet, budget int64) (*functionSet, resp.Value, error) {
	switch o.kind {
	case opLoad:
		next := cur.clone()
		name, err := next.load(o.code, o.replace, budget)
		if err != nil {
			return nil, resp.Value{}, err
		}
		return next, resp.BulkString(name), nil
	case opDelete:
		lib := cur.libs[o.name]
		if lib == nil {
			return nil, resp.Value{}, resp.NewError("ERR Library not found")
		}
		next := cur.clone()
		next.unlink(lib)
		return next, resp.OK(), nil
	case opFlush:
		return newFunctionSet(), resp.OK(), nil
	}
	restored, err := restoreFunctions(o.payload, budget)
	if err != nil {
		return nil, resp.Value{}, err
	}
	if o.policy == restoreFlush {
		return restored, resp.OK(), nil
	}
	next := cur.clone()
	if err := next.join(restored, o.policy == restoreReplace); err != nil {
		return nil, resp.Value{}, err
	}
	return next, resp.OK(), nil
}

// applyFunctions applies an EntryFunctions entry (under the State's lock);
// libraries load within budget instructions (loadBudget).
func (s *State) applyFunctions(cmds [][][]byte, budget int64) []Outcome {
	out := make([]Outcome, len(cmds))
	for i, op := range cmds {
		out[i] = Replied(s.scripts.functions.apply(op, budget))
	}
	return out
}

// CheckFunctionWrite checks a FUNCTION write subcommand (op: the arguments
// after FUNCTION) before it is proposed, with the errors that do not depend
// on a group's libraries and that Redis would give first: syntax, a LOAD's
// shebang, a RESTORE's payload and the libraries in it. A LOAD's code is
// compiled by the groups, since Redis reports an existing library before
// a compile error. The proposing node knows no group's script budget: a
// RESTORE's libraries are checked with the default one's load budget.
func CheckFunctionWrite(op [][]byte) error {
	o, err := parseFunctionOp(op)
	if err != nil {
		return err
	}
	switch o.kind {
	case opLoad:
		_, err = parseLibraryMeta(o.code)
	case opRestore:
		_, err = restoreFunctions(o.payload, loadBudget(DefaultScriptBudget))
	}
	return err
}

// FunctionApplied reports whether the group's libraries already reflect
// the FUNCTION write subcommand op: LOAD's library is there with the same
// code, DELETE's library is gone, FLUSH left none, RESTORE's libraries are
// all there with the same code (and only they, for FLUSH). The cluster
// uses it after a group answered op with an error, so that a retried
// command counts the groups that applied it on an earlier try.
func (s *State) FunctionApplied(op [][]byte) bool {
	o, err := parseFunctionOp(op)
	if err != nil {
		return false
	}
	s.mu.RLock()
	cur := s.scripts.functions.set()
	s.mu.RUnlock()
	switch o.kind {
	case opLoad:
		meta, err := parseLibraryMeta(o.code)
		return err == nil && sameLibrary(cur.libs[meta.name], o.code)
	case opDelete:
		return cur.libs[o.name] == nil
	case opFlush:
		return len(cur.libs) == 0
	}
	codes, err := decodeFunctionPayload(o.payload)
	if err != nil || (o.policy == restoreFlush && len(codes) != len(cur.libs)) {
		return false
	}
	for _, code := range codes {
		meta, err := parseLibraryMeta(code)
		if err != nil || !sameLibrary(cur.libs[meta.name], code) {
			return false
		}
	}
	return true
}

// FunctionSuccessReply is the reply of a FUNCTION write subcommand that
// succeeded: LOAD's library name, OK for the others.
func FunctionSuccessReply(op [][]byte) resp.Value {
	o, err := parseFunctionOp(op)
	if err != nil {
		return errReply(err)
	}
	if o.kind == opLoad {
		if meta, err := parseLibraryMeta(o.code); err == nil {
			return resp.BulkString(meta.name)
		}
	}
	return resp.OK()
}

func sameLibrary(lib *library, code []byte) bool {
	return lib != nil && string(lib.code) == string(code)
}

// functionsView is the current set, for the read subcommands: O(1).
func (s *State) functionsView() *functionSet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scripts.functions.set()
}

// FunctionCount is the number of functions the group's libraries hold
// (INFO's number_of_functions).
func (s *State) FunctionCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.scripts.functions.set().funcs)
}

// LibraryCount is the number of libraries the group holds (INFO, tests).
func (s *State) LibraryCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.scripts.functions.set().libs)
}

// FCALL and FCALL_RO.

func init() {
	aclScript := []string{"slow", "scripting"}
	const flags = resp.FlagNoScript | resp.FlagStale | resp.FlagSkipMonitor | resp.FlagMovableKeys
	const complexity = "Depends on the function that is executed."
	fn := &ScriptSpec{Function: true}
	register(
		withNumKeys(scriptCmd("fcall", -3, flags|fW, 0, 0, 0, aclScript, "7.0.0", "Invokes a function.", complexity, fcallCmd(false)), fn),
		withNumKeys(scriptCmd("fcall_ro", -3, flags|fR, 0, 0, 0, aclScript, "7.0.0", "Invokes a read-only function.", complexity, fcallCmd(true)), fn),
	)
}

// fcallNumKeys is FCALL's numkeys check (functions.c fcallCommandGeneric).
func fcallNumKeys(args [][]byte) (int, error) {
	n, err := resp.ParseInt(args[2])
	switch {
	case err != nil:
		return 0, resp.NewError("ERR Bad number of keys provided")
	case n > int64(len(args)-3):
		return 0, errNumKeysTooMany
	case n < 0:
		return 0, errNumKeysNegative
	}
	return int(n), nil
}

func fcallCmd(readOnly bool) func(*Ctx, [][]byte) resp.Value {
	return func(c *Ctx, args [][]byte) resp.Value {
		if c.scripts == nil {
			return errReply(errNoScripting)
		}
		fn := c.scripts.functions.lookup(args[1])
		if fn == nil {
			return errReply(errFunctionNotFound)
		}
		nkeys, err := fcallNumKeys(args)
		if err != nil {
			return errReply(err)
		}
		// scriptPrepareForRun's checks; this is a cluster.
		if fn.flags&funcNoCluster != 0 {
			return errReply(errNoCluster)
		}
		noWrites := fn.flags&funcNoWrites != 0
		if readOnly && !noWrites {
			return errReply(errWriteFlagRO)
		}
		return runFunction(c, fn, args, nkeys, readOnly || noWrites || c.Index == 0)
	}
}
