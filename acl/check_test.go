package acl

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestCheck runs commands as users and compares the denial (reason,
// position, object) and the -NOPERM text with Redis 7.2's.
func TestCheck(t *testing.T) {
	cmds := testCommands()
	byName := map[string]*resp.Command{}
	for _, c := range testTable() {
		byName[c.Name] = c
	}
	for _, tt := range []struct {
		rules []string
		call  string
		want  string // "" allowed, else the NOPERM text
		pos   int
	}{
		{[]string{"+get", "~*"}, "get k", "", 0},
		{[]string{"+get", "~*"}, "set k v", "NOPERM User u has no permissions to run the 'set' command", 0},
		{[]string{"+get", "~a*"}, "get b", "NOPERM No permissions to access a key", 1},
		{[]string{"+@all", "%R~r*"}, "get r1", "", 0},
		{[]string{"+@all", "%R~r*"}, "set r1 v", "NOPERM No permissions to access a key", 1},
		{[]string{"+@all", "%W~w*"}, "set w1 v", "", 0},
		{[]string{"+@all", "%W~w*", "%R~r*"}, "copy r1 w1", "", 0},
		{[]string{"+@all", "%W~w*", "%R~r*"}, "copy w1 r1", "NOPERM No permissions to access a key", 1},
		{[]string{"+@all", "~a", "~b"}, "del a b c", "NOPERM No permissions to access a key", 3},
		{[]string{"+@all"}, "auth x", "", 0},
		{nil, "auth x", "", 0},
		{[]string{"+select|0"}, "select 0", "", 0},
		{[]string{"+select|0"}, "select 1", "NOPERM User u has no permissions to run the 'select' command", 0},
		{[]string{"+config|get"}, "config get x", "", 0},
		{[]string{"+config|get"}, "config set x y", "NOPERM User u has no permissions to run the 'config|set' command", 0},
		{[]string{"+config", "-config|set"}, "config set x y", "NOPERM User u has no permissions to run the 'config|set' command", 0},
		{[]string{"+@slow"}, "config set x y", "", 0},
		{[]string{"+@all", "&news.*"}, "publish news.1 m", "", 0},
		{[]string{"+@all", "&news.*"}, "publish other m", "NOPERM No permissions to access a channel", 1},
		{[]string{"+@all", "&news.*"}, "subscribe news.1 x", "NOPERM No permissions to access a channel", 2},
		{[]string{"+@all", "&news.*"}, "psubscribe news.*", "", 0},
		{[]string{"+@all", "&news.*"}, "psubscribe news.1", "NOPERM No permissions to access a channel", 1},
		{[]string{"+@all", "allchannels"}, "psubscribe x", "", 0},
		// Selectors: any selector may allow; the denial reported is the
		// worst (key over command), the later argument on a tie.
		{[]string{"+get", "~a", "(+set ~b)"}, "set b v", "", 0},
		{[]string{"+get", "~a", "(+set ~b)"}, "set a v", "NOPERM No permissions to access a key", 1},
		{[]string{"+@all", "~a", "(+@all ~b)"}, "copy a c", "NOPERM No permissions to access a key", 2},
		{[]string{"+get", "(+set)"}, "del x", "NOPERM User u has no permissions to run the 'del' command", 0},
	} {
		s := NewUsers(cmds)
		if err := s.SetUser("u", tt.rules...); err != nil {
			t.Fatal(err)
		}
		args := argv(tt.call)
		d := s.Get("u").Check(byName[string(args[0])], args)
		switch {
		case tt.want == "" && d != nil:
			t.Errorf("%q %s: denied %+v", tt.rules, tt.call, d)
		case tt.want != "" && d == nil:
			t.Errorf("%q %s: allowed, want %s", tt.rules, tt.call, tt.want)
		case d != nil && (d.Err("u").Error() != tt.want || d.Pos != tt.pos):
			t.Errorf("%q %s: %s at %d, want %s at %d", tt.rules, tt.call, d.Err("u"), d.Pos, tt.want, tt.pos)
		}
	}
}

func TestDryRunText(t *testing.T) {
	s := NewUsers(testCommands())
	if err := s.SetUser("u", "+get", "~a", "&c"); err != nil {
		t.Fatal(err)
	}
	u := s.Get("u")
	get := testTable()[0]
	for _, tt := range []struct {
		cmd  *resp.Command
		args string
		want string
	}{
		{get, "get a", "+OK"},
		{get, "get b", "User u has no permissions to access the 'b' key"},
		{testTable()[8], "publish d m", "User u has no permissions to run the 'publish' command"},
	} {
		v := u.DryRun(tt.cmd, argv(tt.args))
		if got := string(v.Str); (v.Kind == resp.KindStatus && "+"+got != tt.want) || (v.Kind != resp.KindStatus && got != tt.want) {
			t.Errorf("DryRun(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestChannelAllowed(t *testing.T) {
	s := NewUsers(testCommands())
	if err := s.SetUser("u", "&a*", "(&b)"); err != nil {
		t.Fatal(err)
	}
	u := s.Get("u")
	for _, tt := range []struct {
		ch      string
		pattern bool
		want    bool
	}{{"ax", false, true}, {"b", false, true}, {"c", false, false}, {"a*", true, true}, {"ax", true, false}} {
		if got := u.ChannelAllowed([]byte(tt.ch), tt.pattern); got != tt.want {
			t.Errorf("ChannelAllowed(%q, %v) = %v", tt.ch, tt.pattern, got)
		}
	}
}

func TestKeyAllowedAndUnrestricted(t *testing.T) {
	s := NewUsers(testCommands())
	for name, rules := range map[string][]string{
		"all":   {"+@all", "allkeys"},
		"rstar": {"+@all", "%R~*"},
		"wstar": {"+@all", "%W~*", "(~a* +get)"},
		"some":  {"+@all", "~a*"},
		"nocmd": {"%R~*"},
	} {
		if err := s.SetUser(name, rules...); err != nil {
			t.Fatal(err)
		}
	}
	get := testTable()[0]
	for _, tt := range []struct {
		user              string
		key               string
		read, write       bool
		keyOK, unrestrict bool
	}{
		{"all", "x", true, true, true, true},
		{"rstar", "x", true, false, true, true},
		{"rstar", "x", false, true, false, false},
		{"wstar", "x", true, false, false, false},
		{"wstar", "ab", true, false, true, false},
		{"some", "ab", true, true, true, false},
		{"some", "x", false, false, false, false},
		{"nocmd", "x", true, false, true, false},
	} {
		u := s.Get(tt.user)
		if got := u.KeyAllowed([]byte(tt.key), tt.read, tt.write); got != tt.keyOK {
			t.Errorf("%s KeyAllowed(%s, r=%v w=%v) = %v", tt.user, tt.key, tt.read, tt.write, got)
		}
		if got := u.CheckUnrestricted(get, argv("get "+tt.key), tt.read, tt.write); got != tt.unrestrict {
			t.Errorf("%s CheckUnrestricted(get %s, r=%v w=%v) = %v", tt.user, tt.key, tt.read, tt.write, got)
		}
	}
}
