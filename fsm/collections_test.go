package fsm

import (
	"strings"
	"testing"
)

// TestNumkeysKeys checks the keys routing reads from commands that count
// their keys: every key after a valid numkeys (and a fixed destination),
// none when numkeys is not a valid count of what follows.
func TestNumkeysKeys(t *testing.T) {
	// command: the keys routing reads from it
	keys := map[string]string{
		"LMPOP 2 a b LEFT":         "a b",
		"BLMPOP 0 1 a RIGHT":       "a",
		"SINTERCARD 2 a b LIMIT 1": "a b",
		"ZMPOP 1 a MIN":            "a",
		"BZMPOP 0 2 a b MAX":       "a b",
		"ZUNION 2 a b WITHSCORES":  "a b",
		"ZUNIONSTORE d 2 a b":      "d a b",
		"LMPOP 3 a b":              "",
		"SINTERCARD 0 a":           "",
		"ZMPOP x a MIN":            "",
		"ZUNIONSTORE d":            "",
	}
	for cmd, want := range keys {
		args := fields(cmd)
		var got []string
		for _, k := range Lookup(args[0]).Meta.KeysOf(args) {
			got = append(got, string(k))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: keys %q, want %q", cmd, got, want)
		}
	}
}
