package acl

import (
	"errors"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

func TestLoadSave(t *testing.T) {
	s := NewUsers(testCommands())
	def := s.Get(DefaultUser)
	file := "user bob on #" + hashFoo + " ~b* &* +@all -debug\n\n  user alice   on nopass (~x +get) \r\n"
	if err := s.Load([]byte(file), "users.acl"); err != nil {
		t.Fatal(err)
	}
	want := "user alice on nopass sanitize-payload resetchannels -@all (~x resetchannels -@all +get)\n" +
		"user bob on sanitize-payload #" + hashFoo + " ~b* &* +@all -debug\n" +
		"user default on nopass sanitize-payload ~* &* +@all\n"
	if got := string(s.Save()); got != want {
		t.Errorf("Save:\n got %q\nwant %q", got, want)
	}
	if s.Get(DefaultUser) != def {
		t.Error("Load replaced the default *User")
	}
	// The default user in the file starts from a new user, not from the
	// default's permissions.
	if err := s.Load([]byte("user default on >foo"), "f"); err != nil {
		t.Fatal(err)
	}
	if got := def.ListLine(); got != "user default on sanitize-payload #"+hashFoo+" resetchannels -@all" {
		t.Errorf("default after load: %s", got)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, tt := range []struct {
		file, want string
	}{
		{"usr bob on", "f:1 should start with user keyword followed by the username. "},
		{"user", "f:1 should start with user keyword followed by the username. "},
		{"USER bob", "f:1 should start with user keyword followed by the username. "},
		{"user a\tb on", "'f:1: username 'a\tb' contains invalid characters. "},
		{"user a on\nuser a off", "WARNING: Duplicate user 'a' found on line 2. "},
		{"user a bogus +nosuch1 ~x* +nosuch2 bad2", "f:1: Syntax error. f:1: Error in applying operation '+nosuch1': Unknown command or category name in ACL. f:1: Error in applying operation '+nosuch2': Unknown command or category name in ACL. "},
		{"user a (~x +get", "f:1: Unmatched parenthesis in selector definition."},
		{"\n\nuser a ~* ~x", "f:3: " + string(ErrKeyAfterAll) + ". "},
	} {
		s := NewUsers(testCommands())
		if err := s.SetUser("keep", "on"); err != nil {
			t.Fatal(err)
		}
		before := string(s.Save())
		err := s.Load([]byte(tt.file), "f")
		want := "ERR " + tt.want + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
		if !errors.Is(err, ErrLoad) || resp.ErrorText(err) != want {
			t.Errorf("Load(%q):\n got %v\nwant %s", tt.file, err, want)
		}
		if string(s.Save()) != before {
			t.Errorf("Load(%q) changed the users", tt.file)
		}
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	cmds := testCommands()
	s := NewUsers(cmds)
	for name, rules := range map[string][]string{
		"a": {"on", ">p1", ">p2", "%R~r*", "%W~w*", "&c", "+@all", "-debug", "-@write", "+set"},
		"b": {"+select|0", "+config|get", "(~x +get)", "(&y* +@read -get)"},
		"c": {"skip-sanitize-payload", "nopass", "allkeys", "allchannels", "allcommands", "-config|set"},
	} {
		if err := s.SetUser(name, rules...); err != nil {
			t.Fatal(err)
		}
	}
	data := s.Marshal()
	back, err := Unmarshal(cmds, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(back.Marshal()); got != string(data) {
		t.Errorf("round trip:\n got %s\nwant %s", got, data)
	}
	for _, name := range s.Names() {
		for i := range s.Get(name).selectors {
			a, b := s.Get(name).selectors[i], back.Get(name).selectors[i]
			if string(a.describe()) != string(b.describe()) || !equalBits(a.allowed, b.allowed) {
				t.Errorf("%s selector %d differs after the round trip", name, i)
			}
		}
	}
	if _, err := Unmarshal(cmds, []byte(`[{"name":"eA==","rules":["K25vc3VjaA=="]}]`)); !errors.Is(err, ErrUnknownCommand) {
		t.Errorf("Unmarshal of an unknown command: %v", err)
	}
}

func equalBits(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestUsersSet(t *testing.T) {
	s := NewUsers(testCommands())
	for _, n := range []string{"zed", "Alice", "bob"} {
		if err := s.SetUser(n, "on"); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Names(); len(got) != 4 || got[0] != "Alice" || got[1] != "bob" || got[2] != "default" || got[3] != "zed" {
		t.Errorf("Names = %v", got)
	}
	if n, err := s.DelUsers("bob", "default"); n != 0 || !errors.Is(err, ErrDefaultUser) || s.Get("bob") == nil {
		t.Errorf("DelUsers with default = %d, %v", n, err)
	}
	if n, err := s.DelUsers("bob", "nobody", "zed"); n != 2 || err != nil {
		t.Errorf("DelUsers = %d, %v", n, err)
	}
	alice := s.Get("Alice")
	c := s.Clone()
	if err := s.SetUser("Alice", "+get"); err != nil || s.Get("Alice") != alice {
		t.Errorf("SetUser replaced the *User: %v", err)
	}
	if c.Get("Alice").ListLine() == alice.ListLine() {
		t.Error("Clone shares users")
	}
	s.SetPubsubDefault(true)
	if err := s.SetUser("p", "(~x)"); err != nil {
		t.Fatal(err)
	}
	if got := s.Get("p").ListLine(); got != "user p off sanitize-payload &* -@all (~x &* -@all)" {
		t.Errorf("with acl-pubsub-default allchannels: %s", got)
	}
	cat, err := testCommands().Category("SLOW")
	if err != nil || len(cat) == 0 || cat[0] != "set" {
		t.Errorf("Category(slow) = %v, %v", cat, err)
	}
	if _, err := testCommands().Category("nope"); err == nil || resp.ErrorText(err) != "ERR Unknown category 'nope'" {
		t.Errorf("Category(nope) = %v", err)
	}
}
