package fsm

import (
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// The FUNCTION read subcommands: LIST, DUMP and STATS, answered from one
// group's libraries (every group holds the same ones).

// IsFunctionRead reports whether sub is a read subcommand: LIST, DUMP or
// STATS.
func IsFunctionRead(sub []byte) bool { return functionOpOf(sub).read() }

// FunctionRead answers a FUNCTION read subcommand (op: the arguments after
// FUNCTION) from the group's libraries.
func (s *State) FunctionRead(op [][]byte) resp.Value {
	return functionRead(s.functionsView(), op)
}

// FunctionStats is FUNCTION STATS of the group, without the state's lock
// (the function set is an atomic pointer): it answers while a script that
// holds the lock is busy, as Redis's FUNCTION STATS does.
func (s *State) FunctionStats() resp.Value { return functionStats(s.scripts.functions.set()) }

// FunctionDump is the group's FUNCTION DUMP payload.
func (s *State) FunctionDump() []byte { return dumpFunctions(s.functionsView().sorted()) }

// FunctionReadPayload answers a FUNCTION read subcommand from the libraries
// in a FUNCTION DUMP payload: a node that leads no group answers with
// another node's dump (whose libraries a group accepted: they load again
// without a budget, reloadBudget).
func FunctionReadPayload(payload []byte, op [][]byte) resp.Value {
	set, err := restoreFunctions(payload, reloadBudget)
	if err != nil {
		return errReply(err)
	}
	return functionRead(set, op)
}

// readOp is a parsed FUNCTION read subcommand.
type readOp struct {
	kind     functionOpKind // opList, opDump or opStats
	withCode bool           // LIST … WITHCODE
	pattern  []byte         // LIST LIBRARYNAME pattern, lowercased; nil: every library
}

// parseFunctionRead parses op (a read subcommand without FUNCTION) with
// Redis's errors.
func parseFunctionRead(op [][]byte) (readOp, error) {
	if len(op) == 0 {
		return readOp{}, resp.ErrWrongArgs("function")
	}
	switch functionOpOf(op[0]) {
	case opList:
		return parseFunctionList(op)
	case opDump:
		if len(op) != 1 {
			return readOp{}, resp.ErrWrongArgs("function|dump")
		}
		return readOp{kind: opDump}, nil
	case opStats:
		if len(op) != 1 {
			return readOp{}, resp.ErrWrongArgs("function|stats")
		}
		return readOp{kind: opStats}, nil
	}
	return readOp{}, resp.ErrUnknownSubcommand([]byte("FUNCTION"), op[0])
}

// parseFunctionList parses FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func parseFunctionList(op [][]byte) (readOp, error) {
	o := readOp{kind: opList}
	for i := 1; i < len(op); i++ {
		switch {
		case !o.withCode && eq(op[i], "withcode"):
			o.withCode = true
		case o.pattern == nil && eq(op[i], "libraryname"):
			if i >= len(op)-1 {
				return readOp{}, resp.NewError("ERR library name argument was not given")
			}
			i++
			o.pattern = []byte(strings.ToLower(string(op[i])))
		default:
			return readOp{}, resp.Errorf("ERR Unknown argument %s", op[i])
		}
	}
	return o, nil
}

func functionRead(set *functionSet, op [][]byte) resp.Value {
	o, err := parseFunctionRead(op)
	if err != nil {
		return errReply(err)
	}
	switch o.kind {
	case opList:
		return functionList(set, o)
	case opDump:
		return resp.Bulk(dumpFunctions(set.sorted()))
	}
	return functionStats(set)
}

// CheckFunctionRead checks a read subcommand's arguments (LIST's options)
// without reading any library.
func CheckFunctionRead(op [][]byte) error {
	_, err := parseFunctionRead(op)
	return err
}

// functionList is FUNCTION LIST's reply: every library whose lowercased
// name matches the pattern (stringmatchlen with nocase).
func functionList(set *functionSet, o readOp) resp.Value {
	var out []resp.Value
	for _, lib := range set.sorted() {
		if o.pattern != nil && !Match(o.pattern, []byte(strings.ToLower(lib.name))) {
			continue
		}
		out = append(out, libraryInfo(lib, o.withCode))
	}
	return resp.Array(out...)
}

func libraryInfo(lib *library, withCode bool) resp.Value {
	funcs := make([]resp.Value, 0, len(lib.funcs))
	for _, fn := range sortedFunctions(lib) {
		desc := resp.Null()
		if fn.hasDesc {
			desc = resp.Bulk(fn.desc)
		}
		var flags []resp.Value
		for _, f := range funcFlagNames {
			if fn.flags&f.f != 0 {
				flags = append(flags, resp.Status(f.name))
			}
		}
		funcs = append(funcs, resp.Map(resp.BulkString("name"), resp.BulkString(fn.name),
			resp.BulkString("description"), desc, resp.BulkString("flags"), resp.Set(flags...)))
	}
	kvs := []resp.Value{resp.BulkString("library_name"), resp.BulkString(lib.name),
		resp.BulkString("engine"), resp.BulkString("LUA"), resp.BulkString("functions"), resp.Array(funcs...)}
	if withCode {
		kvs = append(kvs, resp.BulkString("library_code"), resp.Bulk(lib.code))
	}
	return resp.Map(kvs...)
}

// sortedFunctions lists a library's functions by name (Redis: its hash
// table's order).
func sortedFunctions(lib *library) []*libFunction {
	out := append([]*libFunction(nil), lib.funcs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].name < out[j-1].name; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// functionStats is FUNCTION STATS with running_script null: the node
// fills it in when a function is busy (cluster/server/busy.go).
func functionStats(set *functionSet) resp.Value {
	lua := resp.Map(resp.BulkString("libraries_count"), resp.Int(int64(len(set.libs))),
		resp.BulkString("functions_count"), resp.Int(int64(len(set.funcs))))
	return resp.Map(resp.BulkString("running_script"), resp.Null(),
		resp.BulkString("engines"), resp.Map(resp.BulkString("LUA"), lua))
}

// FunctionDumpEmpty is the FUNCTION DUMP payload of no libraries: what a
// node that holds none (one that has not met a cluster) answers from.
func FunctionDumpEmpty() []byte { return dumpFunctions(nil) }

// FunctionPayloadLibraries counts the libraries of a FUNCTION DUMP payload.
func FunctionPayloadLibraries(payload []byte) (int, error) {
	set, err := restoreFunctions(payload, reloadBudget)
	if err != nil {
		return 0, err
	}
	return len(set.sorted()), nil
}
