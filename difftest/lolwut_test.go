package difftest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// lolwutVersion is where LOLWUT prints the server's version; it differs
// (redis-server 7.0.x, slotraft 7.2.0) and is replaced before comparing.
var lolwutVersion = regexp.MustCompile(`Redis ver\. [0-9.]+\n`)

// TestLolwutDifferential compares LOLWUT byte by byte with redis-server
// where the drawing does not depend on rand(): version 5 with at most two
// rows of squares (Redis turns the rows below at random), the version-only
// reply, and the argument errors. The random drawings are compared by
// shape: version 5's lines of braille, version 6's rows of coloured
// pixels, and their closing text.
func TestLolwutDifferential(t *testing.T) {
	rc, sc := connect(t, startRedis(t), "3"), connect(t, startSlotraft(t), "3")
	do := func(c *client, args []string) string {
		t.Helper()
		r, err := c.do(args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if len(r.elems) > 0 {
			t.Fatalf("%q: an aggregate reply %v", args, r)
		}
		return string(r.typ) + lolwutVersion.ReplaceAllString(r.str, "Redis ver. X\n")
	}
	for _, args := range [][]string{
		{"LOLWUT"}, {"LOLWUT", "VERSION"}, {"LOLWUT", "10", "20"}, {"lolwut", "version", "7"},
		{"LOLWUT", "VERSION", "x"}, {"LOLWUT", "VERSION", "-1"}, {"LOLWUT", "VERSION", "59"},
		{"LOLWUT", "VERSION", "5", "10", "3", "2"}, {"LOLWUT", "VERSION", "5", "1", "1", "1"},
		{"LOLWUT", "VERSION", "5", "0", "0", "0"}, {"LOLWUT", "VERSION", "5", "3", "2", "1"},
		{"LOLWUT", "VERSION", "5", "40", "7", "2"}, {"LOLWUT", "VERSION", "5", "2000", "300", "1"},
		{"LOLWUT", "VERSION", "5", "x"}, {"LOLWUT", "VERSION", "5", "10", "y"}, {"LOLWUT", "VERSION", "6", "10", "z"},
		{"LOLWUT", "VERSION", "4"}, {"LOLWUT", "VERSION", "8"},
	} {
		if w, g := do(rc, args), do(sc, args); w != g {
			t.Errorf("%q:\nredis:    %q\nslotraft: %q", args, w, g)
		}
	}
	for _, args := range [][]string{
		{"LOLWUT", "VERSION", "5"}, {"LOLWUT", "VERSION", "5", "30", "5", "9"},
		{"LOLWUT", "VERSION", "6"}, {"LOLWUT", "VERSION", "6", "13", "7"}, {"LOLWUT", "VERSION", "6", "1", "1"},
	} {
		if w, g := lolwutShape(do(rc, args)), lolwutShape(do(sc, args)); w != g {
			t.Errorf("%q by shape:\nredis:    %q\nslotraft: %q", args, w, g)
		}
	}
}

// lolwutShape keeps a drawing's size, not its pixels: each line's count
// of braille characters or of colour escapes, then the closing text.
func lolwutShape(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.Contains(line, "\033["):
			out = append(out, "colors:"+strconv.Itoa(strings.Count(line, "\033[0m")))
		case strings.IndexFunc(line, isBraille) >= 0:
			out = append(out, "braille:"+strconv.Itoa(len([]rune(line))))
		default:
			out = append(out, line)
		}
	}
	return strings.Join(out, "|")
}

func isBraille(r rune) bool { return r >= 0x2800 && r <= 0x28ff }
