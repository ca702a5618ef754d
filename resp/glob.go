package resp

import "math/rand/v2"

// Match reports whether s matches the glob-style pattern exactly as Redis's
// stringmatchlen (case-sensitive) decides, for KEYS, SCAN MATCH and
// PSUBSCRIBE and ACL key and channel patterns: '*' any run, '?' one byte, "[abc]", "[^a]", "[a-z]" (ends in
// either order), '\' escapes the next byte. Bytes in ranges compare as C's
// signed char, as on x86-64. Like Redis, recursion deeper than 1000 levels
// of '*' gives no match, and a failed '*' stops the search early, so abusive
// patterns cannot take exponential time.
func Match(pattern, s []byte) bool {
	skip := false
	return matchAt(pattern, s, &skip, 0)
}

// at returns p[i], or 0 past the end (C's NUL terminator).
func at(p []byte, i int) byte {
	if i < len(p) {
		return p[i]
	}
	return 0
}

func matchAt(p, s []byte, skipLonger *bool, nesting int) bool {
	if nesting > 1000 {
		return false
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			return matchStar(p[1:], s, skipLonger, nesting)
		case '?':
			p = p[1:]
		case '[':
			var ok bool
			if p, ok = matchClass(p[1:], s[0]); !ok {
				return false
			}
		default:
			if p[0] == '\\' && len(p) >= 2 {
				p = p[1:]
			}
			if p[0] != s[0] {
				return false
			}
			p = p[1:]
		}
		s = s[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
		}
	}
	return len(p) == 0 && len(s) == 0
}

// matchStar tries the rest of the pattern at every position of s.
func matchStar(rest, s []byte, skipLonger *bool, nesting int) bool {
	for len(s) > 0 {
		if matchAt(rest, s, skipLonger, nesting+1) {
			return true
		}
		if *skipLonger {
			return false
		}
		s = s[1:]
	}
	*skipLonger = true
	return false
}

// matchClass matches c against the class that starts after '['. It returns
// the pattern after the class (after its ']', or empty for an unterminated
// class, as Redis ends up) and whether c matched.
func matchClass(p []byte, c byte) ([]byte, bool) {
	not := at(p, 0) == '^'
	if not {
		p = p[1:]
	}
	match := false
	for {
		switch {
		case len(p) == 0:
			return p, match != not
		case p[0] == '\\' && len(p) >= 2:
			p = p[1:]
			if p[0] == c {
				match = true
			}
		case p[0] == ']':
			return p[1:], match != not
		case len(p) >= 3 && p[1] == '-':
			lo, hi, x := int8(p[0]), int8(p[2]), int8(c)
			if lo > hi {
				lo, hi = hi, lo
			}
			p = p[2:]
			if x >= lo && x <= hi {
				match = true
			}
		default:
			if p[0] == c {
				match = true
			}
		}
		p = p[1:]
	}
}

// MatchFuzzTest runs Match on n random patterns and strings, as Redis's
// stringmatchlen_fuzz_test (DEBUG STRINGMATCH-TEST): it must never panic
// or loop, whatever the input.
func MatchFuzzTest(n int) {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	var pat, str [32]byte
	for range n {
		for i := range pat {
			pat[i] = byte(r.IntN(256))
			str[i] = byte(r.IntN(256))
		}
		Match(pat[:r.IntN(len(pat))], str[:r.IntN(len(str))])
	}
}
