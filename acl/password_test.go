package acl

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

func TestAuthenticate(t *testing.T) {
	s := NewUsers(testCommands())
	for name, rules := range map[string][]string{
		"alice": {"on", ">foo", ">bar"},
		"off":   {"off", ">foo"},
		"any":   {"on", "nopass"},
		"none":  {"on"},
		"hash":  {"on", "#" + hashFoo},
	} {
		if err := s.SetUser(name, rules...); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		user, pass string
		want       bool
	}{
		{"alice", "foo", true}, {"alice", "bar", true}, {"alice", "baz", false}, {"alice", "", false},
		{"off", "foo", false}, {"any", "whatever", true}, {"none", "", false}, {"hash", "foo", true},
		{"nobody", "foo", false}, {"default", "x", true},
	} {
		if got := s.Authenticate(tt.user, []byte(tt.pass)) != nil; got != tt.want {
			t.Errorf("Authenticate(%s, %s) = %v", tt.user, tt.pass, got)
		}
	}
}

func TestHashPassword(t *testing.T) {
	if got := HashPassword([]byte("foo")); got != hashFoo {
		t.Errorf("HashPassword(foo) = %s", got)
	}
}

func TestGenPass(t *testing.T) {
	r := bytes.NewReader(bytes.Repeat([]byte{0xab}, 1024))
	for _, tt := range []struct {
		bits int
		want string
	}{{256, strings.Repeat("ab", 32)}, {1, "a"}, {5, "ab"}, {4096, strings.Repeat("ab", 512)}} {
		r.Reset(bytes.Repeat([]byte{0xab}, 1024))
		got, err := GenPass(tt.bits, r)
		if err != nil || got != tt.want {
			t.Errorf("GenPass(%d) = %q, %v", tt.bits, got, err)
		}
	}
	for _, bits := range []int{0, -1, 4097} {
		if _, err := GenPass(bits, r); !errors.Is(err, ErrGenPassBits) {
			t.Errorf("GenPass(%d) = %v", bits, err)
		}
	}
	for _, tt := range []struct {
		arg  string
		want error
	}{{"abc", resp.ErrNotInteger}, {"0", ErrGenPassBits}, {"4097", ErrGenPassBits}, {"-5", ErrGenPassBits}, {" 5", resp.ErrNotInteger}} {
		if _, err := ParseGenPassBits([]byte(tt.arg)); !errors.Is(err, tt.want) {
			t.Errorf("ParseGenPassBits(%q) = %v, want %v", tt.arg, err, tt.want)
		}
	}
	if n, err := ParseGenPassBits([]byte("128")); n != 128 || err != nil {
		t.Errorf("ParseGenPassBits(128) = %d, %v", n, err)
	}
	if got := resp.ErrorText(ErrGenPassBits); got != "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096" {
		t.Errorf("text %q", got)
	}
}

func TestRequirePass(t *testing.T) {
	s := NewUsers(testCommands())
	if s.AuthRequired() || !s.DefaultNoPass() {
		t.Fatal("a new set requires auth")
	}
	s.SetRequirePass("secret")
	if !s.AuthRequired() || s.DefaultNoPass() || s.Authenticate(DefaultUser, []byte("secret")) == nil || s.Authenticate(DefaultUser, []byte("x")) != nil {
		t.Errorf("requirepass secret: %s", s.Get(DefaultUser).ListLine())
	}
	s.SetRequirePass("")
	if s.AuthRequired() || s.Get(DefaultUser).ListLine() != "user default on nopass sanitize-payload ~* &* +@all" {
		t.Errorf("requirepass \"\": %s", s.Get(DefaultUser).ListLine())
	}
	if err := s.SetUser(DefaultUser, "off"); err != nil || !s.AuthRequired() {
		t.Errorf("default off: auth not required (%v)", err)
	}
}
