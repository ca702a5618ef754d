package server

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// redisSchotter10x3x2 is redis-server's LOLWUT VERSION 5 10 3 2: two rows
// of squares, the part of the drawing that does not depend on rand().
const redisSchotter10x3x2 = "⢰⠒⠒⢲⠒⠒⣶⠒⠒⡆\n⢸⣀⣀⣸⣀⣀⣿⣀⣀⡇\n⢸⠀⠀⢸⠀⠀⣿⠀⠀⡇\n⠘⠒⠒⠚⠒⠒⠛⠒⠒⠃\n"

func TestLolwut(t *testing.T) {
	zero := func() int { return 0 }
	tests := []struct {
		args []string
		want string // the whole reply, or its start when it ends in "…"
		err  string
	}{
		{args: []string{"LOLWUT"}, want: "Redis ver. 7.2.0\n"},
		{args: []string{"LOLWUT", "VERSION"}, want: "Redis ver. 7.2.0\n"},
		{args: []string{"LOLWUT", "version", "7"}, want: "Redis ver. 7.2.0\n"},
		{args: []string{"LOLWUT", "VERSION", "59"}, want: "Redis ver. 7.2.0\n"},
		{args: []string{"LOLWUT", "VERSION", "-1"}, want: "Redis ver. 7.2.0\n"},
		{args: []string{"LOLWUT", "VERSION", "x"}, err: "ERR value is not an integer or out of range"},
		{args: []string{"LOLWUT", "VERSION", "5", "10", "x"}, err: "ERR value is not an integer or out of range"},
		{args: []string{"LOLWUT", "VERSION", "5", "10", "3", "2"},
			want: redisSchotter10x3x2 + "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. 7.2.0\n"},
		{args: []string{"LOLWUT", "VERSION", "6", "1", "1"},
			want: "\033[0;97;107m \033[0m\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 bit image from Plaguemon by hikikomori. Redis ver. 7.2.0\n"},
	}
	for _, tc := range tests {
		got, err := lolwut(cluster.Argv(tc.args...), zero)
		switch {
		case tc.err != "":
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
		case err != nil || got != tc.want:
			t.Errorf("%q = %q, %v\nwant %q", tc.args, got, err, tc.want)
		}
	}
}

// TestLolwutSizes: the drawings have the sizes Redis's arguments ask for,
// clamped as Redis clamps them, whatever rand() gives.
func TestLolwutSizes(t *testing.T) {
	n := 0
	counting := func() int { n = n*1103515245 + 12345; return n & randMax }
	tests := []struct {
		args        []string
		lines, cols int
	}{
		{[]string{"LOLWUT", "VERSION", "6"}, 20, 80},
		{[]string{"LOLWUT", "VERSION", "6", "13", "7"}, 7, 13},
		{[]string{"LOLWUT", "VERSION", "6", "0", "-4"}, 1, 1},
		{[]string{"LOLWUT", "VERSION", "5"}, 49, 66}, // 12 rows of 16-pixel squares and padding: 196 pixels, 4 a line
		{[]string{"LOLWUT", "VERSION", "5", "2000", "1", "1"}, 500, 1000},
	}
	for _, tc := range tests {
		got, err := lolwut(cluster.Argv(tc.args...), counting)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		lines := strings.Split(got, "\n")
		lines = lines[:len(lines)-3] // the closing text and its lines
		if len(lines) != tc.lines {
			t.Errorf("%q: %d lines, want %d", tc.args, len(lines), tc.lines)
		}
		for _, l := range lines {
			if c := max(strings.Count(l, "\033[0m"), len([]rune(l))*boolInt(!strings.Contains(l, "\033"))); c != tc.cols {
				t.Errorf("%q: a line of %d pixels or characters, want %d", tc.args, c, tc.cols)
				break
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
