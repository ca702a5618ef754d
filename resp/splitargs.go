package resp

import "bytes"

// SplitArgs splits a line as Redis's sdssplitargs does: blanks separate
// arguments; "double quotes" take \n \r \t \b \a \xHH and \<c> escapes;
// 'single quotes' take \'; a closing quote must end its argument. ok is
// false for unbalanced quotes.
func SplitArgs(line []byte) (out [][]byte, ok bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i] // C strings end at NUL
	}
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return out, true
		}
		arg, next, ok := splitArg(line, i)
		if !ok {
			return nil, false
		}
		out = append(out, arg)
		i = next
	}
}

// splitArg reads one argument starting at line[i].
func splitArg(line []byte, i int) (arg []byte, next int, ok bool) {
	arg = []byte{}
	inDouble, inSingle := false, false
	for ; ; i++ {
		if i == len(line) {
			return arg, i, !inDouble && !inSingle
		}
		c := line[i]
		switch {
		case inDouble:
			switch {
			case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				arg = append(arg, hexVal(line[i+2])<<4|hexVal(line[i+3]))
				i += 3
			case c == '\\' && i+1 < len(line):
				i++
				arg = append(arg, unescape(line[i]))
			case c == '"':
				if i+1 < len(line) && !isBlank(line[i+1]) {
					return nil, 0, false
				}
				return arg, i + 1, true
			default:
				arg = append(arg, c)
			}
		case inSingle:
			switch {
			case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				i++
				arg = append(arg, '\'')
			case c == '\'':
				if i+1 < len(line) && !isBlank(line[i+1]) {
					return nil, 0, false
				}
				return arg, i + 1, true
			default:
				arg = append(arg, c)
			}
		case c == ' ' || c == '\n' || c == '\r' || c == '\t':
			return arg, i + 1, true
		case c == '"':
			inDouble = true
		case c == '\'':
			inSingle = true
		default:
			arg = append(arg, c)
		}
	}
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hexVal(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
