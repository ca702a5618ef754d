package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// testACLCommands is an ACL command table of the data commands.
func testACLCommands() *acl.Commands {
	var metas []*resp.Command
	for _, c := range Commands() {
		metas = append(metas, c.Meta)
	}
	return acl.NewCommands(metas)
}

// testUser is a user with rules, and its permissions as an entry carries them.
func testUser(t *testing.T, cmds *acl.Commands, rules ...string) (*acl.User, []byte) {
	t.Helper()
	us := acl.NewUsers(cmds)
	if err := us.SetUser("alice", rules...); err != nil {
		t.Fatal(err)
	}
	u := us.Get("alice")
	return u, u.Perms()
}

// applyAs applies one command in an entry carrying perms.
func (h *harness) applyAs(perms []byte, args ...string) Outcome {
	h.idx++
	cmd := make([][]byte, len(args))
	for i, a := range args {
		cmd[i] = []byte(a)
	}
	e := &Entry{Type: EntryCommands, Now: h.now, Seed: h.idx, User: perms, Cmds: [][][]byte{cmd}}
	d, err := DecodeEntry(e.Encode()) // as a replica gets it
	if err != nil {
		h.t.Fatal(err)
	}
	return h.s.Apply(h.idx, d)[0]
}

func TestScriptCallsCheckedAsCaller(t *testing.T) {
	cmds := testACLCommands()
	h := newHarness(t)
	h.s.setUserParser(func(p []byte) (*acl.User, error) { return acl.UserFromPerms(cmds, p) })
	_, perms := testUser(t, cmds, "on", "nopass", "~k*", "%R~ro*", "+@all", "-set")
	setK := "return redis.call('set', KEYS[1], 'x')"
	sha := SHA1Hex([]byte(setK))
	for _, tc := range []struct {
		args   []string
		want   string
		denial *acl.Denial
	}{
		{[]string{"eval", setK, "1", "k1"}, "-ERR ACL failure in script: User alice has no permissions to run the 'set' command script: " + sha + ", on @user_script:1.",
			&acl.Denial{Reason: acl.ReasonCommand, Command: "set", Object: "set"}},
		{[]string{"eval", "return redis.pcall('set', KEYS[1], 'x')", "1", "k1"}, "-ERR ACL failure in script: User alice has no permissions to run the 'set' command",
			&acl.Denial{Reason: acl.ReasonCommand, Command: "set", Object: "set"}},
		{[]string{"eval", "return redis.call('incr', KEYS[1])", "1", "k1"}, ":1", nil},
		{[]string{"eval", "return redis.call('incr', KEYS[1])", "1", "ro1"}, "-ERR ACL failure in script: No permissions to access a key script: " +
			SHA1Hex([]byte("return redis.call('incr', KEYS[1])")) + ", on @user_script:1.", &acl.Denial{Reason: acl.ReasonKey, Command: "incr", Pos: 1, Object: "ro1"}},
		{[]string{"eval", "return redis.call('get', KEYS[1])", "1", "ro1"}, "nil", nil},
		// The write check comes after the ACL check, as in Redis.
		{[]string{"eval_ro", setK, "1", "k1"}, "-ERR ACL failure in script: User alice has no permissions to run the 'set' command script: " + sha + ", on @user_script:1.",
			&acl.Denial{Reason: acl.ReasonCommand, Command: "set", Object: "set"}},
		{[]string{"eval", "return {redis.acl_check_cmd('set', 'k'), redis.acl_check_cmd('get', 'k'), redis.acl_check_cmd('incr', 'ro1')}", "0"}, "[nil :1 nil]", nil},
	} {
		o := h.applyAs(perms, tc.args...)
		if got := show(o.Reply); got != tc.want {
			t.Errorf("%q = %s, want %s", tc.args, got, tc.want)
		}
		switch {
		case tc.denial == nil && len(o.Denials) != 0:
			t.Errorf("%q: denials %+v, want none", tc.args, o.Denials)
		case tc.denial != nil && (len(o.Denials) != 1 || o.Denials[0].Denial != *tc.denial):
			t.Errorf("%q: denials %+v, want %+v", tc.args, o.Denials, *tc.denial)
		}
	}
	if got := h.do("get k1"); got != `"1"` {
		t.Errorf("k1 = %s, want the INCR only", got)
	}
	// Without a user in the entry nothing is checked.
	if got := h.do("eval " + strings.ReplaceAll(setK, " ", "~") + " 1 k2"); got != "+OK" {
		t.Errorf("unchecked EVAL = %s", got)
	}
}

func TestScriptUserReadsAndBrokenPerms(t *testing.T) {
	cmds := testACLCommands()
	h := newHarness(t)
	h.do("set k v")
	u, perms := testUser(t, cmds, "~*", "+@all", "-get")
	get := "return redis.call('get', KEYS[1])"
	args := [][]byte{[]byte("eval_ro"), []byte(get), []byte("1"), []byte("k")}
	o := h.s.ReadWith(h.now, Lookup(args[0]), args, ReadOpts{User: u})
	if want := "-ERR ACL failure in script: User alice has no permissions to run the 'get' command script: " + SHA1Hex([]byte(get)) + ", on @user_script:1."; show(o.Reply) != want || len(o.Denials) != 1 {
		t.Errorf("read as alice = %s %+v", show(o.Reply), o.Denials)
	}
	// Permissions that do not parse (or no parser): every call is denied.
	calls := 0
	h.s.setUserParser(func(p []byte) (*acl.User, error) { calls++; return nil, errors.New("unknown command") })
	for range 2 {
		if o := h.applyAs(perms, "eval", "return redis.call('ping')", "0"); !strings.HasPrefix(show(o.Reply), "-ERR ACL failure in script: User ? has no permissions to run the 'ping' command") {
			t.Errorf("broken user's call = %s", show(o.Reply))
		}
	}
	if calls != 1 {
		t.Errorf("the same permissions were parsed %d times, want once", calls)
	}
	if o := h.applyAs(perms, "eval", "return redis.acl_check_cmd('ping')", "0"); show(o.Reply) != "nil" {
		t.Errorf("broken user's acl_check_cmd = %s", show(o.Reply))
	}
}
