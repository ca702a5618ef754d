package resp

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"*", "anything", true}, {"*", "", false}, {"", "", true}, {"a", "", false},
		{"h?llo", "hello", true}, {"h?llo", "hllo", false}, {"h*llo", "hllo", true}, {"h*llo", "heeeello", true},
		{"h[ae]llo", "hallo", true}, {"h[ae]llo", "hillo", false}, {"h[^e]llo", "hallo", true}, {"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true}, {"h[a-b]llo", "hcllo", false}, {"h[b-a]llo", "hallo", true},
		{`h\*llo`, "h*llo", true}, {`h\*llo`, "hallo", false}, {`[\]]`, "]", true}, {`[\-]`, "-", true},
		{"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false}, {"a**", "a", true}, {"a*", "a", true},
		{"[abc", "a", true}, {"[abc", "d", false}, {"[^", "a", true}, {"[", "a", false},
		{`a\`, `a\`, true}, {"[a-]", "]", true}, {"*a", "ba", true},
		{"foo*bar", "foobar", true}, {"*?", "", false}, {"?*", "x", true},
		{"[\xff-a]", "b", false}, {"[a-\xff]", "b", false}, {"[\x80-\xff]", "\x90", true},
	}
	for _, c := range cases {
		if got := Match([]byte(c.pat), []byte(c.s)); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestMatchAbusivePattern(t *testing.T) {
	pat := strings.Repeat("*a", 30) + "b"
	s := strings.Repeat("a", 60)
	if Match([]byte(pat), []byte(s)) {
		t.Fatal("unexpected match")
	}
}

func FuzzMatch(f *testing.F) {
	f.Add([]byte("h[^a-c]*\\?"), []byte("hello?"))
	f.Fuzz(func(t *testing.T, pat, s []byte) {
		Match(pat, s) // must not panic
		if len(pat) > 0 && !Match(append([]byte("*"), pat...), append([]byte("x"), s...)) && Match(pat, s) {
			t.Fatalf("%q matches %q but *pattern does not match x+s", pat, s)
		}
	})
}
