package fsm

import (
	"reflect"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// Where each local variable of a script is in scope, as Lua 5.1's
// lua_getlocal sees it (the debugger's print). gopher-lua's own record
// (FunctionProto.DbgLocals) names the locals in the order Lua declares
// them, but its ranges are not Lua's: a local function, a for loop's
// control variables start earlier, and a block's end is written to the
// entry whose index is the local's register, not to the local's own
// entry. So the ranges are computed again here from the script's syntax
// tree and its code:
//   - a local starts after its initialisation (gopher-lua's start, but
//     after the closure of a local function);
//   - a numeric for's control variables live from its FORPREP to after
//     its FORLOOP, its variable and its body's locals from after FORPREP
//     to FORLOOP; a generic for's likewise around its TFORLOOP;
//   - the locals of another block end with the first instruction of a
//     later line than the block's last one (the debugger stops at the
//     start of lines, where this is exact);
//   - a function's own locals end at its final return.
// A function whose declarations do not match gopher-lua's keeps
// gopher-lua's ranges.

// ldbScope is a local's range: active at pc when start <= pc < end.
type ldbScope struct{ start, end int }

// ldbScopes are the scopes of every function of a script, by function,
// in the order of FunctionProto.DbgLocals.
type ldbScopes map[*lua.FunctionProto][]ldbScope

// scriptScopes computes the scopes of a script compiled from chunk.
func scriptScopes(chunk []ast.Stmt, main *lua.FunctionProto) ldbScopes {
	out := ldbScopes{}
	out.function(main, nil, chunk)
	return out
}

// function computes p's scopes (params are its parameters' names, "self"
// and "arg" included) and those of the functions it defines.
func (out ldbScopes) function(p *lua.FunctionProto, params []string, stmts []ast.Stmt) {
	w := &scopeWalker{p: p, last: len(p.Code) - 1}
	for _, name := range params {
		w.add(name, 0, w.last)
	}
	w.block(stmts, func(int) int { return w.last })
	if w.matches() {
		out[p] = w.scopes
	}
	nested, methods := nestedFunctions(stmts)
	used := make([]bool, len(nested))
	for _, child := range p.FunctionPrototypes {
		for i, fe := range nested {
			if !used[i] && fe.Line() == child.LineDefined && fe.LastLine() == child.LastLineDefined {
				used[i] = true
				out.function(child, functionParams(fe, methods[fe]), fe.Stmts)
				break
			}
		}
	}
}

// functionParams are the locals a function starts with, as Lua 5.1 (with
// its compatible varargs) and gopher-lua declare them.
func functionParams(fe *ast.FunctionExpr, method bool) []string {
	var out []string
	if method {
		out = append(out, "self")
	}
	out = append(out, fe.ParList.Names...)
	if fe.ParList.HasVargs {
		out = append(out, "arg")
	}
	return out
}

// nestedFunctions lists the function expressions in stmts that are not
// inside another one, in the order they appear, and which are methods.
func nestedFunctions(stmts []ast.Stmt) ([]*ast.FunctionExpr, map[*ast.FunctionExpr]bool) {
	var out []*ast.FunctionExpr
	methods := map[*ast.FunctionExpr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			switch n := v.Interface().(type) {
			case *ast.FunctionExpr:
				out = append(out, n)
				return
			case *ast.FuncDefStmt:
				if n.Name != nil && n.Name.Method != "" {
					methods[n.Func] = true
				}
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(stmts))
	return out, methods
}

// scopeWalker computes one function's scopes.
type scopeWalker struct {
	p      *lua.FunctionProto
	last   int // the final return's pc
	names  []string
	scopes []ldbScope
}

func (w *scopeWalker) add(name string, start, end int) {
	w.names = append(w.names, name)
	w.scopes = append(w.scopes, ldbScope{start, end})
}

// matches reports whether the walk declared the locals gopher-lua did.
func (w *scopeWalker) matches() bool {
	if len(w.names) != len(w.p.DbgLocals) {
		return false
	}
	for i, l := range w.p.DbgLocals {
		if l.Name != w.names[i] || w.scopes[i].start < 0 || w.scopes[i].end < w.scopes[i].start {
			return false
		}
	}
	return true
}

// gopherStart is gopher-lua's start of the next local (-1 past its list).
func (w *scopeWalker) gopherStart(ahead int) int {
	if i := len(w.names) + ahead; i < len(w.p.DbgLocals) {
		return w.p.DbgLocals[i].StartPc
	}
	return -1
}

// block declares the locals of stmts, which end where end says.
func (w *scopeWalker) block(stmts []ast.Stmt, end func(start int) int) {
	for _, st := range stmts {
		switch s := st.(type) {
		case *ast.LocalAssignStmt:
			_, isFunc := firstExpr(s.Exprs).(*ast.FunctionExpr)
			isFunc = isFunc && len(s.Names) == 1 && len(s.Exprs) == 1
			for _, name := range s.Names {
				start := w.gopherStart(0)
				if isFunc && start >= 0 {
					start++ // after its closure, which gopher-lua counts in
				}
				w.add(name, start, end(start))
			}
		case *ast.NumberForStmt:
			w.forLoop([]string{"(for index)", "(for limit)", "(for step)"}, []string{s.Name}, s.Stmts, lua.OP_FORLOOP, 1)
		case *ast.GenericForStmt:
			w.forLoop([]string{"(for generator)", "(for state)", "(for control)"}, s.Names, s.Stmts, lua.OP_TFORLOOP, 2)
		case *ast.DoBlockStmt:
			w.block(s.Stmts, w.lineEnd(lastLine(s)))
		case *ast.WhileStmt:
			w.block(s.Stmts, w.lineEnd(lastLine(s)))
		case *ast.RepeatStmt:
			w.block(s.Stmts, w.lineEnd(lastLine(s)))
		case *ast.IfStmt:
			thenEnd := lastLine(s)
			if len(s.Else) > 0 && len(s.Then) > 0 {
				thenEnd = lastLine(s.Then[len(s.Then)-1])
			}
			w.block(s.Then, w.lineEnd(thenEnd))
			w.block(s.Else, w.lineEnd(lastLine(s)))
		}
	}
}

// forLoop declares a for loop's control variables and variables. The
// instruction before the variables' start is the loop's FORPREP (numeric)
// or its jump to TFORLOOP (generic); loopOp is FORLOOP or TFORLOOP, after
// which the control variables live on for tail instructions.
func (w *scopeWalker) forLoop(control, vars []string, body []ast.Stmt, loopOp, tail int) {
	prep := w.gopherStart(len(control)) - 1
	loop := w.loopEnd(prep, loopOp)
	if prep < 0 || loop < 0 {
		prep, loop = -1, -1 // no match: the function keeps gopher-lua's ranges
	}
	for _, name := range control {
		w.add(name, prep, loop+tail)
	}
	for _, name := range vars {
		w.add(name, prep+1, loop)
	}
	w.block(body, func(int) int { return loop })
}

// loopEnd finds the FORLOOP matching the FORPREP at prep (the first with
// its register), or the TFORLOOP the jump at prep goes to; -1 if none.
func (w *scopeWalker) loopEnd(prep, op int) int {
	code := w.p.Code
	if prep < 0 || prep >= len(code) {
		return -1
	}
	if op == lua.OP_TFORLOOP {
		if opCode(code[prep]) != lua.OP_JMP {
			return -1
		}
		if t := prep + 1 + opSbx(code[prep]); t < len(code) && opCode(code[t]) == lua.OP_TFORLOOP {
			return t
		}
		return -1
	}
	if opCode(code[prep]) != lua.OP_FORPREP {
		return -1
	}
	for pc := prep + 1; pc < len(code); pc++ {
		if opCode(code[pc]) == lua.OP_FORLOOP && opA(code[pc]) == opA(code[prep]) {
			return pc
		}
	}
	return -1
}

// lineEnd ends a block's locals at the first instruction from their start
// on a line after line, or at the final return.
func (w *scopeWalker) lineEnd(line int) func(start int) int {
	return func(start int) int {
		for pc := max(start, 0); pc < w.last; pc++ {
			if ldbLineOf(w.p, pc) > line {
				return pc
			}
		}
		return w.last
	}
}

// lastLine is a statement's last line (gopher-lua's parser leaves it
// unset for some statements: their first line then).
func lastLine(st ast.Stmt) int { return max(st.Line(), st.LastLine()) }

func firstExpr(exprs []ast.Expr) ast.Expr {
	if len(exprs) == 0 {
		return nil
	}
	return exprs[0]
}

// gopher-lua's instruction format (opcode.go): opcode in the top 6 bits,
// A in the next 8, Bx (or sBx, biased by its half range) in the low 18.
func opCode(inst uint32) int { return int(inst >> 26) }
func opA(inst uint32) int    { return int(inst>>18) & 0xff }
func opBx(inst uint32) int   { return int(inst & 0x3ffff) }
func opSbx(inst uint32) int  { return opBx(inst) - (1<<18-1)>>1 }
