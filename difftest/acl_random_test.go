package difftest

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// TestACLRandomDifferential applies random rule lists (fixed seed) drawn
// from commands, subcommands, categories, first arguments, key and
// channel patterns, selectors, passwords and flags, to redis-server and
// to the engine (Redis's command table), and compares SETUSER's reply,
// GETUSER (but the 7.0-only commands text) and DRYRUN of the fixed calls
// and of random commands.
func TestACLRandomDifferential(t *testing.T) {
	rc, cmds := startRedisACL(t)
	table := acl.NewCommands(cmds)
	r := rand.New(rand.NewPCG(18, 1))
	for range 150 {
		rules := randomRules(r, cmds)
		users := acl.NewUsers(table)
		mustDo(t, rc, "ACL", "DELUSER", "u")
		want := mustDo(t, rc, append([]string{"ACL", "SETUSER", "u"}, rules...)...)
		err := users.SetUser("u", rules...)
		if want.typ == '-' || err != nil {
			if got := "-" + resp.ErrorText(err); err == nil || got != "-"+want.str {
				t.Errorf("SETUSER %q: redis %v, engine %v", rules, want, err)
			}
			continue
		}
		u := users.Get("u")
		compareGetUser(t, rules, mustDo(t, rc, "ACL", "GETUSER", "u"), valueReply(t, u.GetUserReply()), false)
		sample := make([]*resp.Command, 0, 40)
		for range 40 {
			sample = append(sample, cmds[r.IntN(len(cmds))])
		}
		compareDryRuns(t, rc, rules, u, sample)
	}
}

// randomRules draws one to eight rules.
func randomRules(r *rand.Rand, cmds []*resp.Command) []string {
	var out []string
	for range 1 + r.IntN(8) {
		out = append(out, randomRule(r, cmds))
	}
	if r.IntN(5) == 0 { // a selector over two arguments
		out = append(out, "(~s*", randomRule(r, cmds)+")")
	}
	return out
}

var ruleWords = []string{
	"on", "off", "nopass", "resetpass", "reset", "allkeys", "resetkeys", "allchannels", "resetchannels",
	"allcommands", "nocommands", "clearselectors", "+@all", "-@all", "~*", "&*", ">p1", ">p2", "<p1", "#bad",
	"skip-sanitize-payload", "sanitize-payload", "bogus", "+nosuch", "+select|0", "+select|1", "-select",
	"+get|x", "+config|get|x", "+config|", "%R~", "%W~w*", "%RW~rw*", "%R~r*", "~k*", "~a", "&news.*", "&c",
	"(+get ~x)", "(&c +publish)", "()", "( ~y +@read )",
}

func randomRule(r *rand.Rand, cmds []*resp.Command) string {
	switch r.IntN(4) {
	case 0:
		return ruleWords[r.IntN(len(ruleWords))]
	case 1:
		cats := acl.CategoryNames()
		return sign(r) + "@" + cats[r.IntN(len(cats))]
	case 2:
		c := cmds[r.IntN(len(cmds))]
		if len(c.Subcommands) > 0 && r.IntN(2) == 0 {
			return sign(r) + c.Subcommands[r.IntN(len(c.Subcommands))].Name
		}
		return sign(r) + strings.ToUpper(c.Name)
	}
	return ruleWords[r.IntN(len(ruleWords))]
}

func sign(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return "-"
	}
	return "+"
}
