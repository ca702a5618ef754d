package acl

import (
	"strings"
	"testing"
)

// FuzzSetUser applies arbitrary rules: it must never panic, a failure
// must leave the user unchanged, and a success must describe a user that
// the description rebuilds exactly (what replication relies on).
func FuzzSetUser(f *testing.F) {
	for _, seed := range []string{
		"on >foo ~key* &* +@all -debug", "+select|0 +config|get -config|set", "(~x +get) (&c +set) clearselectors",
		"%R~r* %W~w* %RW~x", "~* ~x", "#abc !abc <x", "+@read -@READ +@nosuch", "reset nopass resetpass",
		"+config|get|x +get| -select|0 + - +@", "(~a +get", "allkeys allchannels allcommands nocommands resetkeys resetchannels",
	} {
		f.Add(seed)
	}
	cmds := testCommands()
	f.Fuzz(func(t *testing.T, line string) {
		s := NewUsers(cmds)
		if err := s.SetUser("u", "on", "~k"); err != nil {
			t.Fatal(err)
		}
		before := s.Get("u").ListLine()
		rules := strings.Split(line, " ")
		if err := s.SetUser("u", rules...); err != nil {
			if after := s.Get("u").ListLine(); after != before {
				t.Fatalf("failed SETUSER %q changed the user to %s", rules, after)
			}
			return
		}
		line1 := s.Get("u").ListLine()
		back, err := Unmarshal(cmds, s.Marshal())
		if err != nil {
			t.Fatalf("%q: description %q does not load: %v", rules, line1, err)
		}
		if got := back.Get("u").ListLine(); got != line1 {
			t.Fatalf("%q: reloaded %q, want %q", rules, got, line1)
		}
	})
}

// FuzzLoad loads arbitrary aclfiles: never a panic, all or nothing.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"user bob on >x ~* &* +@all\nuser alice off\n", "user a (~x\n", "user a\nuser a\n", "usr x\n\n\r\n",
		"user default on nopass ~* &* +@all\n", "user a\t b +nosuch ~* ~x\n",
	} {
		f.Add(seed)
	}
	cmds := testCommands()
	f.Fuzz(func(t *testing.T, file string) {
		s := NewUsers(cmds)
		if err := s.SetUser("keep", "on"); err != nil {
			t.Fatal(err)
		}
		before := string(s.Save())
		if err := s.Load([]byte(file), "f"); err != nil {
			if string(s.Save()) != before {
				t.Fatalf("failed load changed the users")
			}
			return
		}
		if s.Get(DefaultUser) == nil {
			t.Fatal("no default user after a load")
		}
	})
}
