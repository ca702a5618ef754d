package resp

import "testing"

func TestSplitArgs(t *testing.T) {
	cases := []struct {
		in   string
		want []string // nil: unbalanced
	}{
		{"#!lua name=a", []string{"#!lua", "name=a"}},
		{"  #!lua \t name=a  ", []string{"#!lua", "name=a"}},
		{`#!lua "name=a b"`, []string{"#!lua", "name=a b"}},
		{`#!lua "a\x41\n"`, []string{"#!lua", "aA\n"}},
		{`#!lua 'it\'s'`, []string{"#!lua", "it's"}},
		{`#!lua "open`, nil},
		{`#!lua "a"b`, nil},
		{`#!lua 'a'b`, nil},
		{`#!"lua" x`, []string{"#!lua", "x"}},
		{"", []string{}},
	}
	for _, c := range cases {
		got, ok := SplitArgs([]byte(c.in))
		if c.want == nil {
			if ok {
				t.Errorf("SplitArgs(%q) = %q, want unbalanced", c.in, got)
			}
			continue
		}
		if !ok || len(got) != len(c.want) {
			t.Errorf("SplitArgs(%q) = %q %v, want %q", c.in, got, ok, c.want)
			continue
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Errorf("SplitArgs(%q)[%d] = %q, want %q", c.in, i, got[i], c.want[i])
			}
		}
	}
}
