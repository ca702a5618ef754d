package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/cluster"
)

// fuzzSentinelSeeds are argument vectors for every facade command and
// subcommand, with odd tails.
func fuzzSentinelSeeds() [][]byte {
	tails := [][]string{nil, {""}, {"mymaster"}, {"-1"}, {"mymaster", "x", "-5"}, {"*", "x"},
		{"127.0.0.1", "7000", "0", "*"}, {"9223372036854775808", "1", "2", "3"}, {"get", "*"}, {"set", "a", "b"}}
	var out [][]byte
	for name, c := range sentinelCommands().byName {
		heads := [][]string{{name}}
		for _, sc := range c.subs {
			heads = append(heads, []string{name, strings.SplitN(sc.meta.Name, "|", 2)[1]})
		}
		out = append(out, fuzzArgSeeds(heads, tails)...)
	}
	return out
}

// FuzzSentinelCommands sends random commands to a one-group node's
// Sentinel facade, each on a new connection, and checks that it answers a
// valid RESP value (never the internal error of a panic) and keeps
// serving.
func FuzzSentinelCommands(f *testing.F) {
	for _, s := range fuzzSentinelSeeds() {
		f.Add(s)
	}
	c := cluster.NewTestClusterGroups(f, 1, 1, 1)
	c.Leader(1)
	fn := serveFacade(f, c.Nodes[0])
	f.Fuzz(func(t *testing.T, line []byte) {
		fuzzOne(t, fn.facade, bytes.Split(line, []byte{0}))
	})
}
