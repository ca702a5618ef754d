package resp

// AppendRepr appends s double-quoted as Redis's sdscatrepr quotes it
// (MONITOR's arguments, CONFIG REWRITE's values, the Lua debugger's
// strings): \\ and \" escaped, \n \r \t \a \b by name, every other byte
// outside printable ASCII as \xHH.
func AppendRepr(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, c := range s {
		switch c {
		case '\\', '"':
			dst = append(dst, '\\', c)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\a':
			dst = append(dst, '\\', 'a')
		case '\b':
			dst = append(dst, '\\', 'b')
		default:
			if c >= ' ' && c <= '~' {
				dst = append(dst, c)
			} else {
				dst = append(dst, '\\', 'x', hex[c>>4], hex[c&0xf])
			}
		}
	}
	return append(dst, '"')
}
