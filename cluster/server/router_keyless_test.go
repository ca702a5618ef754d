package server

import (
	"strings"
	"testing"
)

// TestKeylessSubcommand: a container of writes whose subcommand names no
// key (XGROUP HELP) runs by its subcommand's flags; a bad subcommand gets
// Redis's errors before any routing.
func TestKeylessSubcommand(t *testing.T) {
	do := singleNodeDo(t)
	if got := do("XGROUP", "HELP"); !strings.HasPrefix(got, "[+XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:") {
		t.Fatalf("XGROUP HELP = %q", got)
	}
	for _, tc := range [][2]string{
		{"XGROUP HELP x", "-ERR wrong number of arguments for 'xgroup|help' command"},
		{"XGROUP NOPE", "-ERR unknown subcommand 'NOPE'. Try XGROUP HELP."},
	} {
		if got := do(strings.Fields(tc[0])...); got != tc[1] {
			t.Errorf("%s = %q, want %q", tc[0], got, tc[1])
		}
	}
}
