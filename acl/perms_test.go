package acl

import (
	"strings"
	"testing"
)

func TestPermsRoundTrip(t *testing.T) {
	cmds := testCommands()
	s := NewUsers(cmds)
	for name, rules := range map[string][]string{
		"a": {"on", ">secret", "%R~r*", "%W~w*", "&c", "+@all", "-debug", "-@write", "+set"},
		"b": {"+select|0", "+config|get", "(~x +get)", "(&y* +@read -get)"},
		"c": {"nopass", "allkeys", "allchannels", "allcommands", "-config|set"},
		"d": {},
	} {
		if err := s.SetUser(name, rules...); err != nil {
			t.Fatal(err)
		}
		u := s.Get(name)
		perms := u.Perms()
		if strings.Contains(string(perms), HashPassword([]byte("secret"))) {
			t.Errorf("%s: Perms carries a password hash: %s", name, perms)
		}
		back, err := UserFromPerms(cmds, perms)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.Name != name || back.Enabled() || len(back.Passwords()) != 0 {
			t.Errorf("%s: rebuilt as %s", name, back.ListLine())
		}
		if len(back.selectors) != len(u.selectors) {
			t.Fatalf("%s: %d selectors, want %d", name, len(back.selectors), len(u.selectors))
		}
		for i := range u.selectors {
			a, b := u.selectors[i], back.selectors[i]
			if a.describe() != b.describe() || !equalBits(a.allowed, b.allowed) {
				t.Errorf("%s selector %d: %s, want %s", name, i, b.describe(), a.describe())
			}
		}
		if string(back.Perms()) != string(perms) {
			t.Errorf("%s: Perms of the rebuilt user differ:\n%s\n%s", name, back.Perms(), perms)
		}
	}
	for _, bad := range []string{"", "{", `{"name":"eA==","rules":["K25vc3VjaA=="]}`, `[]`} {
		if _, err := UserFromPerms(cmds, []byte(bad)); err == nil {
			t.Errorf("UserFromPerms(%q) took it", bad)
		}
	}
}

func TestDenialText(t *testing.T) {
	for _, tt := range []struct {
		d    Denial
		want string
	}{
		{Denial{Reason: ReasonCommand, Command: "set"}, "User u has no permissions to run the 'set' command"},
		{Denial{Reason: ReasonKey, Command: "get", Object: "k"}, "No permissions to access a key"},
		{Denial{Reason: ReasonChannel, Command: "publish", Object: "c"}, "No permissions to access a channel"},
	} {
		if got := tt.d.Text("u"); got != tt.want {
			t.Errorf("Text = %q, want %q", got, tt.want)
		}
		if got := tt.d.Err("u").Error(); got != "NOPERM "+tt.want {
			t.Errorf("Err = %q", got)
		}
	}
}

// FuzzUserFromPerms: a log entry's user record is bytes from the disk or
// the network: never a panic, and what parses describes itself again.
func FuzzUserFromPerms(f *testing.F) {
	cmds := testCommands()
	s := NewUsers(cmds)
	_ = s.SetUser("a", "~x*", "+get", "(&c +publish)")
	f.Add(s.Get("a").Perms())
	f.Add([]byte(`{"name":"YQ==","rules":["fg=="]}`))
	f.Add([]byte(`{"rules":null,"selectors":[[]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := UserFromPerms(cmds, data)
		if err != nil {
			return
		}
		back, err := UserFromPerms(cmds, u.Perms())
		if err != nil {
			t.Fatalf("%q: its own Perms do not parse: %v", data, err)
		}
		if back.ListLine() != u.ListLine() {
			t.Fatalf("%q: %s, then %s", data, u.ListLine(), back.ListLine())
		}
	})
}
