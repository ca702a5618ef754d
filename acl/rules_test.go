package acl

import (
	"errors"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

const hashFoo = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae" // sha256("foo")

// TestSetUserDescribe applies rule lists to a new user and compares the
// ACL LIST line with what Redis 7.2 prints.
func TestSetUserDescribe(t *testing.T) {
	for _, tt := range []struct {
		rules []string
		want  string
	}{
		{nil, "user u off sanitize-payload resetchannels -@all"},
		{[]string{"on", ">foo", "~key*", "&*", "+@all", "-debug"}, "user u on sanitize-payload #" + hashFoo + " ~key* &* +@all -debug"},
		{[]string{"on", "nopass", "allkeys", "allchannels", "allcommands"}, "user u on nopass sanitize-payload ~* &* +@all"},
		{[]string{"+get", "+GET"}, "user u off sanitize-payload resetchannels -@all +get"},
		{[]string{"+get", "-get", "+set"}, "user u off sanitize-payload resetchannels -@all -get +set"},
		{[]string{"+@all", "-get", "+get"}, "user u off sanitize-payload resetchannels +@all +get"},
		{[]string{"+@READ", "-@read", "+@write"}, "user u off sanitize-payload resetchannels -@all -@read +@write"},
		{[]string{"+config|get", "+config"}, "user u off sanitize-payload resetchannels -@all +config"},
		{[]string{"+config", "-config|set"}, "user u off sanitize-payload resetchannels -@all +config -config|set"},
		{[]string{"+select|0", "+select|1", "-select"}, "user u off sanitize-payload resetchannels -@all -select"},
		{[]string{"+select|0", "+select|1"}, "user u off sanitize-payload resetchannels -@all +select|0 +select|1"},
		{[]string{"+get", "nocommands"}, "user u off sanitize-payload resetchannels -@all"},
		{[]string{"%R~r*", "%W~w*", "%RW~rw*", "~a", "%R~a"}, "user u off sanitize-payload %R~r* %W~w* ~rw* ~a resetchannels -@all"},
		{[]string{"%R~x", "%W~x"}, "user u off sanitize-payload ~x resetchannels -@all"},
		{[]string{"~a", "~a", "resetkeys", "~b"}, "user u off sanitize-payload ~b resetchannels -@all"},
		{[]string{"&a", "&b", "&a"}, "user u off sanitize-payload resetchannels &a &b -@all"},
		{[]string{">foo", ">foo", "#" + hashFoo}, "user u off sanitize-payload #" + hashFoo + " resetchannels -@all"},
		{[]string{">foo", "nopass"}, "user u off nopass sanitize-payload resetchannels -@all"},
		{[]string{"nopass", ">foo"}, "user u off sanitize-payload #" + hashFoo + " resetchannels -@all"},
		{[]string{">foo", "<foo"}, "user u off sanitize-payload resetchannels -@all"},
		{[]string{"skip-sanitize-payload"}, "user u off skip-sanitize-payload resetchannels -@all"},
		{[]string{"(~x +get)", "(&c", "+set)"}, "user u off sanitize-payload resetchannels -@all (~x resetchannels -@all +get) (resetchannels &c -@all +set)"},
		{[]string{"(~x +get)", "clearselectors"}, "user u off sanitize-payload resetchannels -@all"},
		{[]string{"on", ">foo", "~*", "&*", "+@all", "(~x)", "reset"}, "user u off sanitize-payload resetchannels -@all"},
		{[]string{"", "on"}, "user u on sanitize-payload resetchannels -@all"},
		{[]string{"%R"}, "user u off sanitize-payload %R~ resetchannels -@all"},
	} {
		s := NewUsers(testCommands())
		if err := s.SetUser("u", tt.rules...); err != nil {
			t.Errorf("SetUser(%q): %v", tt.rules, err)
			continue
		}
		if got := s.Get("u").ListLine(); got != tt.want {
			t.Errorf("SetUser(%q):\n got %s\nwant %s", tt.rules, got, tt.want)
		}
	}
}

// TestSetUserErrors checks Redis's error texts and that a failing rule
// list leaves the user as it was.
func TestSetUserErrors(t *testing.T) {
	for _, tt := range []struct {
		rules []string
		is    error
		text  string
	}{
		{[]string{"bogus"}, ErrSyntax, "ERR Error in ACL SETUSER modifier 'bogus': Syntax error"},
		{[]string{"+nosuch"}, ErrUnknownCommand, "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{[]string{"-@nosuch"}, ErrUnknownCommand, "ERR Error in ACL SETUSER modifier '-@nosuch': Unknown command or category name in ACL"},
		{[]string{"+"}, ErrUnknownCommand, "ERR Error in ACL SETUSER modifier '+': Unknown command or category name in ACL"},
		{[]string{"+@"}, ErrUnknownCommand, "ERR Error in ACL SETUSER modifier '+@': Unknown command or category name in ACL"},
		{[]string{"~*", "~foo"}, ErrKeyAfterAll, "ERR Error in ACL SETUSER modifier '~foo': " + ErrKeyAfterAll.Error()},
		{[]string{"allchannels", "&foo"}, ErrChannelAfterAll, "ERR Error in ACL SETUSER modifier '&foo': " + ErrChannelAfterAll.Error()},
		{[]string{"<nopass"}, ErrNoSuchPassword, "ERR Error in ACL SETUSER modifier '<nopass': The password you are trying to remove from the user does not exist"},
		{[]string{"#abc"}, ErrBadHash, "ERR Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{[]string{"!" + hashFoo[:63] + "A"}, ErrBadHash, ""},
		{[]string{"+config|get|x"}, ErrSubcommandArg, ""},
		{[]string{"+config|x|y"}, ErrUnknownCommand, ""},
		{[]string{"+config|get|"}, ErrSubcommandArg, "ERR Error in ACL SETUSER modifier '+config|get|': Allowing first-arg of a subcommand is not supported"},
		{[]string{"+config|nosuch"}, ErrUnknownCommand, ""},
		{[]string{"+get|"}, ErrSyntax, ""},
		{[]string{"-select|0"}, ErrUnknownCommand, ""},
		{[]string{"~a b"}, ErrSyntax, ""},
		{[]string{"&a\tb"}, ErrSyntax, ""},
		{[]string{"%X~a"}, ErrSyntax, ""},
		{[]string{"%RR~a"}, ErrSyntax, ""},
		{[]string{"%~a"}, ErrSyntax, ""},
		{[]string{"%"}, ErrSyntax, ""},
		{[]string{"(+nosuch)"}, ErrUnknownCommand, "ERR Error in ACL SETUSER modifier '(+nosuch)': Unknown command or category name in ACL"},
		{[]string{"(~a", "+get"}, ErrUnmatchedParen, "ERR Unmatched parenthesis in acl selector starting at '(~a'."},
		{[]string{"on", "(~a"}, ErrUnmatchedParen, ""},
		{[]string{"+select|a b"}, ErrSyntax, ""},
	} {
		s := NewUsers(testCommands())
		if err := s.SetUser("u", "on", ">foo", "~k", "+get"); err != nil {
			t.Fatal(err)
		}
		before := s.Get("u").ListLine()
		err := s.SetUser("u", append([]string{"off", "resetpass"}, tt.rules...)...)
		if !errors.Is(err, tt.is) {
			t.Errorf("SetUser(%q) = %v, want %v", tt.rules, err, tt.is)
			continue
		}
		if tt.text != "" && resp.ErrorText(err) != tt.text {
			t.Errorf("SetUser(%q) text:\n got %s\nwant %s", tt.rules, resp.ErrorText(err), tt.text)
		}
		if after := s.Get("u").ListLine(); after != before {
			t.Errorf("SetUser(%q) changed the user: %s", tt.rules, after)
		}
	}
	s := NewUsers(testCommands())
	if err := s.SetUser("a b"); !errors.Is(err, ErrUsernameSpaces) || resp.ErrorText(err) != "ERR Usernames can't contain spaces or null characters" {
		t.Errorf("SetUser(\"a b\") = %v", err)
	}
	if err := s.SetUser("x", "+nosuch"); err == nil || s.Get("x") != nil {
		t.Errorf("a failed SETUSER created the user: %v", err)
	}
}
