package resp

import (
	"fmt"
	"strings"
	"testing"
)

// TestGetKeys: keys and flags from Redis's key specs, from the getkeys
// functions where the specs are incomplete or their flags vary, the
// fallback when a spec finds nothing valid, and Redis's errors.
func TestGetKeys(t *testing.T) {
	cmd := func(name string, arity int) *Command { return &Command{Name: name, Arity: arity} }
	for _, tc := range []struct {
		cmd  *Command
		args string
		want string
	}{
		{cmd("set", -3), "set k v", "k[OW update]"},
		{cmd("set", -3), "set k v get", "k[RW access update]"},
		{cmd("mset", -3), "mset a 1 b 2", "a[OW update] b[OW update]"},
		{cmd("sort", -2), "sort k by w get # store d", "k[RO access] d[OW update]"},
		{cmd("migrate", -6), "migrate h 1 \"\" 0 10 keys a b", "a[RW access delete] b[RW access delete]"},
		{cmd("xread", -4), "xread count 1 streams a b 0 0", "a[RO access] b[RO access]"},
		{cmd("zunionstore", -4), "zunionstore d 2 a b", "d[OW update] a[RO access] b[RO access]"},
		{cmd("zunionstore", -4), "zunionstore d x a", "ERR Invalid arguments specified for command"},
		{cmd("eval", -3), "eval s 0", ""},
		{cmd("eval", -3), "eval s 1 k", "k[RW access update]"},
		{cmd("georadius", -6), "georadius g 0 0 1 km store d", "g[RO access] d[OW update]"},
		{cmd("bitfield", -2), "bitfield k get u8 0", "k[RO access]"},
		{cmd("get", 2), "get", "ERR Invalid number of arguments specified for command"},
		{cmd("ping", -1), "ping", "ERR The command has no key arguments"},
		{&Command{Name: "mine", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1}, "mine a b", "a[RW access update] b[RW access update]"},
	} {
		keys, err := tc.cmd.GetKeys(fields(tc.args))
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s%v", fields(tc.args)[k.Pos], k.Flags))
			}
			got = strings.Join(parts, " ")
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.args, got, tc.want)
		}
	}
}

func fields(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}
