package fsm

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The struct library (Roberto Ierusalimschy's struct.c as bundled with
// Redis): struct.pack(fmt, …) and struct.unpack(fmt, s [, pos]). Formats:
// ">" big endian, "<" little endian (the default), "![n]" alignment, "x"
// padding, "b/B h/H l/L" signed/unsigned 1, 2 and 8-byte integers,
// "i[n]/I[n]" integers of n bytes (default 4), "cn" n chars (c0: the whole
// string when packing, the previous number when unpacking), "s"
// zero-terminated string, "f" float, "d" double, " " ignored.

const (
	structMaxAlign   = 8
	structMaxIntSize = 32
)

type structHeader struct {
	little bool
	align  int
}

func structNum(fmt string, i *int, def int) int {
	if *i >= len(fmt) || fmt[*i] < '0' || fmt[*i] > '9' {
		return def
	}
	a := 0
	for *i < len(fmt) && fmt[*i] >= '0' && fmt[*i] <= '9' {
		a = a*10 + int(fmt[*i]-'0')
		if a > 1<<20 {
			a = 1 << 20
		}
		*i++
	}
	return a
}

func isPow2(x int) bool { return x > 0 && x&(x-1) == 0 }

func structOptSize(L *lua.LState, fname string, opt byte, fmt string, i *int) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return structNum(fmt, i, 1)
	case 's', ' ', '<', '>', '!':
		return 0
	case 'i', 'I':
		sz := structNum(fmt, i, 4)
		if sz > structMaxIntSize {
			L.RaiseError("integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	argError(L, 1, fname, "invalid format option '"+string(opt)+"'")
	return 0
}

func structToAlign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

func structCommon(L *lua.LState, opt byte, fmt string, i *int, h *structHeader) {
	switch opt {
	case '>':
		h.little = false
	case '<':
		h.little = true
	case '!':
		a := structNum(fmt, i, structMaxAlign)
		if !isPow2(a) {
			L.RaiseError("alignment %d is not a power of 2", a)
		}
		h.align = a
	}
}

func structPack(L *lua.LState) int {
	fmt := L.CheckString(1)
	h := structHeader{little: true, align: 1}
	arg := 2
	var out []byte
	for i := 0; i < len(fmt); {
		opt := fmt[i]
		i++
		size := structOptSize(L, "pack", opt, fmt, &i)
		for pad := structToAlign(len(out), &h, opt, size); pad > 0; pad-- {
			out = append(out, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < math.MaxInt64 {
				v = uint64(luaToInt64(n))
			} else if n < math.MaxUint64 {
				v = uint64(n)
			} else {
				v = math.MaxUint64
			}
			b := make([]byte, size)
			for k := 0; k < size && k < 8; k++ {
				byt := byte(v >> (8 * uint(k)))
				if h.little {
					b[k] = byt
				} else {
					b[size-1-k] = byt
				}
			}
			out = append(out, b...)
		case 'x':
			out = append(out, 0)
		case 'f':
			f := float32(L.CheckNumber(arg))
			arg++
			out = structAppendUint(out, uint64(math.Float32bits(f)), 4, h.little)
		case 'd':
			d := float64(L.CheckNumber(arg))
			arg++
			out = structAppendUint(out, math.Float64bits(d), 8, h.little)
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				argError(L, arg, "pack", "string too short")
			}
			out = append(out, s[:size]...)
			if opt == 's' {
				out = append(out, 0)
			}
		default:
			structCommon(L, opt, fmt, &i, &h)
		}
		if len(out) > luaMaxString {
			L.RaiseError("struct.pack: result longer than %d bytes", luaMaxString)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

func structAppendUint(out []byte, v uint64, size int, little bool) []byte {
	var b [8]byte
	if little {
		binary.LittleEndian.PutUint64(b[:], v)
		return append(out, b[:size]...)
	}
	binary.BigEndian.PutUint64(b[:], v)
	return append(out, b[8-size:]...)
}

func structUnpack(L *lua.LState) int {
	fmt := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 {
		pos = 0
	}
	h := structHeader{little: true, align: 1}
	L.SetTop(2)
	for i := 0; i < len(fmt); {
		opt := fmt[i]
		i++
		size := structOptSize(L, "unpack", opt, fmt, &i)
		pos += structToAlign(pos, &h, opt, size)
		if pos+size > len(data) {
			argError(L, 2, "unpack", "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'i', 'I':
			var v uint64
			for k := 0; k < size && k < 8; k++ {
				var byt byte
				if h.little {
					byt = data[pos+k]
				} else {
					byt = data[pos+size-1-k]
				}
				v |= uint64(byt) << (8 * uint(k))
			}
			signed := opt >= 'a'
			if !signed {
				L.Push(lua.LNumber(float64(v)))
			} else {
				if size < 8 {
					mask := ^uint64(0) << (uint(size)*8 - 1)
					if v&mask != 0 {
						v |= mask
					}
				}
				L.Push(lua.LNumber(float64(int64(v))))
			}
		case 'x':
		case 'f':
			b := []byte(data[pos : pos+4])
			var u uint32
			if h.little {
				u = binary.LittleEndian.Uint32(b)
			} else {
				u = binary.BigEndian.Uint32(b)
			}
			L.Push(lua.LNumber(math.Float32frombits(u)))
		case 'd':
			b := []byte(data[pos : pos+8])
			var u uint64
			if h.little {
				u = binary.LittleEndian.Uint64(b)
			} else {
				u = binary.BigEndian.Uint64(b)
			}
			L.Push(lua.LNumber(math.Float64frombits(u)))
		case 'c':
			if size == 0 {
				n, ok := L.Get(-1).(lua.LNumber)
				if !ok || L.GetTop() <= 2 {
					L.RaiseError("format `c0' needs a previous size")
				}
				L.Pop(1)
				size = int(luaToInt64(float64(n)))
				if size < 0 || pos+size > len(data) {
					argError(L, 2, "unpack", "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
		case 's':
			end := -1
			for k := pos; k < len(data); k++ {
				if data[k] == 0 {
					end = k
					break
				}
			}
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = end - pos + 1
			L.Push(lua.LString(data[pos:end]))
		default:
			structCommon(L, opt, fmt, &i, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return L.GetTop() - 2
}

func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

func structSize(L *lua.LState) int {
	fmt := L.CheckString(1)
	h := structHeader{little: true, align: 1}
	pos := 0
	for i := 0; i < len(fmt); {
		opt := fmt[i]
		i++
		size := structOptSize(L, "size", opt, fmt, &i)
		pos += structToAlign(pos, &h, opt, size)
		if opt == 's' {
			argError(L, 1, "size", "options 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			argError(L, 1, "size", "options 'c0' has no fixed size")
		}
		structCommon(L, opt, fmt, &i, &h)
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
