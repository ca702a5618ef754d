package fsm

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library (lua-cjson 2.1.0 as bundled with Redis) for the common
// cases: cjson.encode, cjson.decode, cjson.null, and the configuration
// functions (accepted; encode_max_depth, decode_max_depth and
// encode_number_precision take effect).

const cjsonDefaultDepth = 1000

type cjsonConf struct {
	encodeDepth, decodeDepth, precision int
	null                                *lua.LUserData
}

// raisePlain raises a string error with the position of the Lua line
// that called the library function, as luaL_error does.
func raisePlain(L *lua.LState, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = sprintf(format, args...)
	}
	L.RaiseError("%s", msg)
}

func openCjson(L *lua.LState) *lua.LTable {
	conf := &cjsonConf{encodeDepth: cjsonDefaultDepth, decodeDepth: cjsonDefaultDepth, precision: 14, null: L.NewUserData()}
	t := L.NewTable()
	intConf := func(p *int, lo, hi int) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				n := L.CheckInt(1)
				if n < lo || n > hi {
					L.ArgError(1, sprintf("expected integer between %d and %d", lo, hi))
				}
				*p = n
			}
			L.Push(lua.LNumber(*p))
			return 1
		}
	}
	fns := map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.ArgError(1, "expected 1 argument")
			}
			var sb strings.Builder
			conf.encode(L, &sb, L.Get(1), 0)
			L.Push(lua.LString(sb.String()))
			return 1
		},
		"decode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.ArgError(1, "expected 1 argument")
			}
			d := &cjsonDecoder{L: L, s: L.CheckString(1), conf: conf}
			L.Push(d.decode())
			return 1
		},
		"encode_max_depth":        intConf(&conf.encodeDepth, 1, math.MaxInt32),
		"decode_max_depth":        intConf(&conf.decodeDepth, 1, math.MaxInt32),
		"encode_number_precision": intConf(&conf.precision, 1, 14),
		"encode_keep_buffer":      cjsonBoolConf(true),
		"encode_invalid_numbers":  cjsonBoolConf(false),
		"decode_invalid_numbers":  cjsonBoolConf(true),
		"encode_sparse_array": func(L *lua.LState) int {
			L.Push(lua.LFalse)
			L.Push(lua.LNumber(2))
			L.Push(lua.LNumber(10))
			return 3
		},
	}
	for _, name := range sortedKeys(fns) {
		t.RawSetString(name, L.NewFunction(fns[name]))
	}
	t.RawSetString("null", conf.null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func cjsonBoolConf(def bool) lua.LGFunction {
	return func(L *lua.LState) int {
		v := def
		if L.GetTop() >= 1 {
			if b, ok := L.Get(1).(lua.LBool); ok {
				v = bool(b)
			}
		}
		L.Push(lua.LBool(v))
		return 1
	}
}

func (conf *cjsonConf) number(L *lua.LState, sb *strings.Builder, f float64) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		raisePlain(L, "Cannot serialise number: must not be NaN or Inf")
	}
	sb.WriteString(fmtG(f, conf.precision))
}

// fmtG formats like C's "%.<prec>g".
func fmtG(f float64, prec int) string { return sprintf("%.*g", prec, f) }

func (conf *cjsonConf) encode(L *lua.LState, sb *strings.Builder, v lua.LValue, depth int) {
	if sb.Len() > luaMaxString {
		raisePlain(L, "Cannot serialise: result longer than %d bytes", luaMaxString)
	}
	switch v := v.(type) {
	case *lua.LNilType:
		sb.WriteString("null")
	case lua.LBool:
		if v {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case lua.LNumber:
		conf.number(L, sb, float64(v))
	case lua.LString:
		cjsonString(sb, string(v))
	case *lua.LUserData:
		if v == conf.null {
			sb.WriteString("null")
			return
		}
		raisePlain(L, "Cannot serialise userdata: type not supported")
	case *lua.LTable:
		depth++
		if depth > conf.encodeDepth {
			raisePlain(L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		n := cjsonArrayLen(L, v)
		if n > 0 {
			sb.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					sb.WriteByte(',')
				}
				conf.encode(L, sb, v.RawGetInt(i), depth)
			}
			sb.WriteByte(']')
			return
		}
		sb.WriteByte('{')
		first := true
		luaForEach(v, func(k, val lua.LValue) {
			if !first {
				sb.WriteByte(',')
			}
			first = false
			switch k := k.(type) {
			case lua.LString:
				cjsonString(sb, string(k))
			case lua.LNumber:
				sb.WriteByte('"')
				conf.number(L, sb, float64(k))
				sb.WriteByte('"')
			default:
				raisePlain(L, "Cannot serialise table: table key must be a number or string")
			}
			sb.WriteByte(':')
			conf.encode(L, sb, val, depth)
		})
		sb.WriteByte('}')
	default:
		raisePlain(L, "Cannot serialise %s: type not supported", v.Type().String())
	}
}

// cjsonArrayLen is lua-cjson's lua_array_length: the array size when every
// key is a positive integer (and the array is not excessively sparse),
// 0 for an object.
func cjsonArrayLen(L *lua.LState, t *lua.LTable) int {
	maxKey, items := 0, 0
	isArray := true
	luaForEach(t, func(k, _ lua.LValue) {
		if !isArray {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			isArray = false
			return
		}
		if int(n) > maxKey {
			maxKey = int(n)
		}
		items++
	})
	if !isArray {
		return 0
	}
	if maxKey > items*2 && maxKey > 10 {
		raisePlain(L, "Cannot serialise table: excessively sparse array")
	}
	return maxKey
}

func cjsonString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '/':
			sb.WriteString(`\/`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				sb.WriteString(`\u00`)
				sb.WriteByte("0123456789abcdef"[c>>4])
				sb.WriteByte("0123456789abcdef"[c&15])
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('"')
}

// cjsonDecoder is a JSON parser producing Lua values, with lua-cjson's
// error messages.
type cjsonDecoder struct {
	L     *lua.LState
	s     string
	i     int
	depth int
	conf  *cjsonConf
}

func (d *cjsonDecoder) skipSpace() {
	for d.i < len(d.s) && (d.s[d.i] == ' ' || d.s[d.i] == '\t' || d.s[d.i] == '\n' || d.s[d.i] == '\r') {
		d.i++
	}
}

// tokenName names what is at the current position, as lua-cjson does.
func (d *cjsonDecoder) tokenName() string {
	if d.i >= len(d.s) {
		return "T_END"
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return "T_OBJ_BEGIN"
	case c == '}':
		return "T_OBJ_END"
	case c == '[':
		return "T_ARR_BEGIN"
	case c == ']':
		return "T_ARR_END"
	case c == ':':
		return "T_COLON"
	case c == ',':
		return "T_COMMA"
	case c == '"':
		return "T_STRING"
	case c == '-' || (c >= '0' && c <= '9'):
		return "T_NUMBER"
	case strings.HasPrefix(d.s[d.i:], "true") || strings.HasPrefix(d.s[d.i:], "false"):
		return "T_BOOLEAN"
	case strings.HasPrefix(d.s[d.i:], "null"):
		return "T_NULL"
	}
	return "invalid token"
}

func (d *cjsonDecoder) fail(expected string) {
	raisePlain(d.L, "Expected %s but found %s at character %d", expected, d.tokenName(), d.i+1)
}

func (d *cjsonDecoder) decode() lua.LValue {
	d.skipSpace()
	v := d.value("value")
	d.skipSpace()
	if d.i < len(d.s) {
		d.fail("the end")
	}
	return v
}

func (d *cjsonDecoder) value(expected string) lua.LValue {
	d.skipSpace()
	if d.i >= len(d.s) {
		d.fail(expected)
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return lua.LString(d.str())
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case strings.HasPrefix(d.s[d.i:], "true"):
		d.i += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.i:], "false"):
		d.i += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.i:], "null"):
		d.i += 4
		return d.conf.null
	}
	d.fail(expected)
	return lua.LNil
}

func (d *cjsonDecoder) enter() {
	d.depth++
	if d.depth > d.conf.decodeDepth {
		raisePlain(d.L, "Found too many nested data structures (%d) at character %d", d.depth, d.i+1)
	}
}

func (d *cjsonDecoder) object() lua.LValue {
	d.enter()
	d.i++
	t := d.L.NewTable()
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		d.depth--
		return t
	}
	for {
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			d.fail("object key string")
		}
		k := d.str()
		d.skipSpace()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			d.fail("colon")
		}
		d.i++
		t.RawSetString(k, d.value("value"))
		d.skipSpace()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			d.depth--
			return t
		}
		d.fail("comma or object end")
	}
}

func (d *cjsonDecoder) array() lua.LValue {
	d.enter()
	d.i++
	t := d.L.NewTable()
	d.skipSpace()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		d.depth--
		return t
	}
	for n := 1; ; n++ {
		t.RawSetInt(n, d.value("value"))
		d.skipSpace()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			d.depth--
			return t
		}
		d.fail("comma or array end")
	}
}

func (d *cjsonDecoder) number() lua.LValue {
	start := d.i
	for d.i < len(d.s) && strings.IndexByte("+-0123456789.eE", d.s[d.i]) >= 0 {
		d.i++
	}
	f, err := strconv.ParseFloat(d.s[start:d.i], 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		d.i = start
		raisePlain(d.L, "Expected value but found invalid number at character %d", start+1)
	}
	return lua.LNumber(f)
}

func (d *cjsonDecoder) str() string {
	start := d.i
	d.i++
	var sb strings.Builder
	for {
		if d.i >= len(d.s) {
			d.i = start
			raisePlain(d.L, "Expected value but found invalid string at character %d", start+1)
		}
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return sb.String()
		case c == '\\':
			if d.i+1 >= len(d.s) {
				d.i = start
				raisePlain(d.L, "Expected value but found invalid string at character %d", start+1)
			}
			e := d.s[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, ok := d.hex4()
				if ok && r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(d.s[d.i:], `\u`) {
					d.i += 2
					lo, ok2 := d.hex4()
					if !ok2 || lo < 0xdc00 || lo > 0xdfff {
						ok = false
					} else {
						r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					}
				}
				if !ok {
					d.i = start
					raisePlain(d.L, "Expected value but found invalid unicode escape code at character %d", start+1)
				}
				sb.WriteRune(rune(r))
			default:
				d.i = start
				raisePlain(d.L, "Expected value but found invalid escape code at character %d", start+1)
			}
		default:
			sb.WriteByte(c)
			d.i++
		}
	}
}

func (d *cjsonDecoder) hex4() (int, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	n, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return int(n), true
}
