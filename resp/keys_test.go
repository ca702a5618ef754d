package resp

import (
	"bytes"
	"strings"
	"testing"
)

func TestKeysOf(t *testing.T) {
	get := &Command{Name: "get", Arity: 2, FirstKey: 1, LastKey: 1, Step: 1}
	mget := &Command{Name: "mget", Arity: -2, FirstKey: 1, LastKey: -1, Step: 1}
	mset := &Command{Name: "mset", Arity: -3, FirstKey: 1, LastKey: -1, Step: 2}
	blpop := &Command{Name: "blpop", Arity: -3, FirstKey: 1, LastKey: -2, Step: 1}
	ping := &Command{Name: "ping", Arity: -1}
	custom := &Command{Name: "x", Arity: -1, Keys: func([][]byte) []int { return []int{2} }}
	tests := []struct {
		cmd  *Command
		args string
		want string
	}{
		{get, "GET k", "k"},
		{mget, "MGET a b c", "a b c"},
		{mset, "MSET a 1 b 2", "a b"},
		{blpop, "BLPOP a b 0", "a b"},
		{ping, "PING x", ""},
		{get, "GET", ""},
		{custom, "X a b", "b"},
	}
	for _, tt := range tests {
		args := fieldsOf(tt.args)
		keys := tt.cmd.KeysOf(args)
		if got := string(bytes.Join(keys, []byte(" "))); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.args, got, tt.want)
		}
		// Callers may append to the keys: never over the arguments.
		before := string(bytes.Join(args, []byte(" ")))
		_ = append(keys, []byte("zzz"))
		if after := string(bytes.Join(args, []byte(" "))); after != before {
			t.Errorf("%s: appending to the keys changed the arguments to %q", tt.args, after)
		}
	}
}

func fieldsOf(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}
