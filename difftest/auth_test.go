package difftest

import (
	"strings"
	"testing"
)

// TestAuthACLWireDifferential: AUTH, HELLO … AUTH, the ACL subcommands,
// NOAUTH, WRONGPASS and NOPERM (commands, keys, channels; at the top level
// and in MULTI), RESET, requirepass and the ACL LOG entries they make, on
// redis-server and on slotraft: the same replies (ACL LOG compared by the
// fields that do not depend on time or the connection).
func TestAuthACLWireDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	same := func(rc, sc *client, user string, cmds [][]string) {
		t.Helper()
		for _, args := range cmds {
			want, got := both(t, rc, sc, args)
			if w := as72(want.String(), user); w != got.String() {
				t.Errorf("%q:\n  redis:    %s\n  slotraft: %s", args, w, got)
			}
		}
	}
	same(rc, sc, "alice", [][]string{
		{"AUTH", "pw"}, {"AUTH", "nobody", "pw"}, {"AUTH", "default", "any"}, {"AUTH", "a", "b", "c"},
		{"ACL", "LOG", "RESET"},
		{"ACL", "SETUSER", "alice", "on", ">pw", "+get", "+sort", "+multi", "+exec", "+acl|whoami", "~k*", "&ch*"},
		{"ACL", "SETUSER", "alice", "+set", "+nosuch"},
		{"ACL", "SETUSER", "alice", "(+set", "~x"},
		{"ACL", "SETUSER", "alice", "~k*"},
		{"ACL", "SETUSER", "a b"},
		{"ACL", "USERS"}, {"ACL", "WHOAMI"},
		{"ACL", "DELUSER", "default"}, {"ACL", "DELUSER", "nobody"},
		{"ACL", "GENPASS", "0"}, {"ACL", "GENPASS", "5000"}, {"ACL", "GENPASS", "1", "2"},
		{"ACL", "DRYRUN", "alice", "get", "k1"}, {"ACL", "DRYRUN", "alice", "set", "k1", "v"},
		{"ACL", "DRYRUN", "alice", "get", "x"}, {"ACL", "DRYRUN", "nobody", "get", "k"},
		{"ACL", "DRYRUN", "alice", "nosuch"}, {"ACL", "DRYRUN", "alice", "get"},
		{"ACL", "DRYRUN", "alice", "config", "nosuch"}, {"ACL", "DRYRUN", "alice", "config", "get"},
		{"ACL", "DRYRUN", "alice", "config", "get", "x"}, {"ACL", "DRYRUN", "default", "client", "id"},
		{"ACL", "LOAD"}, {"ACL", "SAVE"}, {"ACL", "CAT", "nosuch"}, {"ACL", "CAT"},
		{"ACL", "LOG", "x"}, {"ACL", "NOSUCH"}, {"ACL"},
		{"ACL", "GETUSER", "nobody"},
		{"CLIENT", "KILL", "USER", "nobody"},
	})
	ra, sa := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	same(ra, sa, "alice", [][]string{
		{"AUTH", "alice", "nope"}, {"AUTH", "alice", "pw"}, {"ACL", "WHOAMI"},
		{"SET", "k1", "v"}, {"GET", "x{k}"}, {"GET", "k1"}, {"PUBLISH", "ch1", "m"},
		{"SORT", "k1"}, {"SORT", "k1", "BY", "k1_*"}, {"SORT", "k1", "BY", "nosort"}, {"SORT", "k1", "LIMIT", "0", "1", "GET", "#"},
		{"MULTI"}, {"GET", "other"}, {"GET", "k2"}, {"EXEC"},
		{"MULTI"}, {"AUTH", "alice", "bad"}, {"GET", "k2"}, {"EXEC"},
	})
	if w, g := aclLogFields(t, rc), aclLogFields(t, sc); w != g {
		t.Errorf("ACL LOG:\n  redis:    %s\n  slotraft: %s", w, g)
	}
	sameReplies(t, rc, sc, [][]string{
		{"CONFIG", "SET", "requirepass", "s3"}, {"CONFIG", "GET", "requirepass"},
	})
	rn, sn := dialBoth(t, redisAddr, slotraftAddr)
	same(rn, sn, "default", [][]string{
		{"PING"}, {"HELLO", "3"}, {"HELLO", "3", "AUTH", "default", "bad"}, {"AUTH", "bad"}, {"ACL", "WHOAMI"},
		{"AUTH", "s3"}, {"PING"}, {"RESET"}, {"PING"}, {"AUTH", "default", "s3"}, {"ACL", "WHOAMI"},
	})
	sameReplies(t, rc, sc, [][]string{{"PING"}, {"CONFIG", "SET", "requirepass", ""}, {"ACL", "DELUSER", "alice"}})
}

// as72 is a redis-server 7.0 reply as 7.2 words it (src/acl.c
// getAclErrorMessage, networking.c's HELLO): slotraft follows 7.2.
func as72(r, user string) string {
	return strings.NewReplacer(
		"NOPERM this user has no permissions to run", "NOPERM User "+user+" has no permissions to run",
		"NOPERM this user has no permissions to access one of the keys used as arguments", "NOPERM No permissions to access a key",
		"NOPERM this user has no permissions to access one of the channels used as arguments", "NOPERM No permissions to access a channel",
		"\"This user has no permissions", "\"User "+user+" has no permissions",
		"otherwise the HELLO AUTH <user>", "otherwise the HELLO <proto> AUTH <user>",
	).Replace(r)
}

// dialBoth connects to both servers without HELLO.
func dialBoth(t *testing.T, redisAddr, slotraftAddr string) (*client, *client) {
	t.Helper()
	var out [2]*client
	for i, addr := range []string{redisAddr, slotraftAddr} {
		c, err := dial(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.close)
		out[i] = c
	}
	return out[0], out[1]
}

// aclLogFields is ACL LOG's entries by count, reason, context, object and
// username.
func aclLogFields(t *testing.T, c *client) string {
	t.Helper()
	r := mustDo(t, c, "ACL", "LOG")
	var b strings.Builder
	for _, e := range r.elems {
		for i := 0; i+1 < len(e.elems); i += 2 {
			switch e.elems[i].str {
			case "count", "reason", "context", "object", "username":
				b.WriteString(e.elems[i].str + "=" + e.elems[i+1].String() + " ")
			}
		}
		b.WriteString("| ")
	}
	return b.String()
}

// TestScriptACLDifferential: a script's redis.call and redis.pcall checked
// against the caller's user (commands, keys, in EVAL, EVAL_RO and MULTI),
// redis.acl_check_cmd, and the ACL LOG entries (context lua), on
// redis-server and on slotraft.
func TestScriptACLDifferential(t *testing.T) {
	redisAddr, slotraftAddr := startRedis(t), startSlotraft(t)
	rc, sc := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	sameReplies(t, rc, sc, [][]string{
		{"ACL", "LOG", "RESET"}, {"SET", "{k}ro", "0"},
		{"ACL", "SETUSER", "carol", "on", ">pw", "~{k}*", "%R~ro*", "%R~{k}ro", "+@all", "-set", "-lpush"},
	})
	ra, sa := connect(t, redisAddr, "2"), connect(t, slotraftAddr, "2")
	const setK = "return redis.call('set', KEYS[1], 'x')"
	for _, tc := range []struct {
		args []string
		cmd  string // the command denied, in 7.2's words for 7.0's reply
	}{
		{[]string{"AUTH", "carol", "pw"}, ""},
		{[]string{"EVAL", setK, "1", "{k}a"}, "set"},
		{[]string{"EVAL", "return redis.pcall('lpush', KEYS[1], 'x')", "1", "{k}a"}, "lpush"},
		{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "{k}a"}, ""},
		{[]string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "{k}ro"}, ""},
		{[]string{"EVAL_RO", "return redis.call('get', KEYS[1])", "1", "{k}ro"}, ""},
		{[]string{"EVAL_RO", setK, "1", "{k}a"}, "set"},
		{[]string{"EVAL", "return {redis.acl_check_cmd('set', 'a'), redis.acl_check_cmd('get', '{k}a'), redis.acl_check_cmd('get', 'zz')}", "0"}, ""},
		{[]string{"MULTI"}, ""}, {[]string{"EVAL", setK, "1", "{k}b"}, "set"}, {[]string{"INCR", "{k}b"}, ""}, {[]string{"EXEC"}, "set"},
		{[]string{"GET", "{k}a"}, ""}, {[]string{"GET", "{k}b"}, ""},
	} {
		want, got := both(t, ra, sa, tc.args)
		if w := scriptACL72(want.String(), tc.cmd); w != got.String() {
			t.Errorf("%q:\n  redis:    %s\n  slotraft: %s", tc.args, w, got)
		}
	}
	if w, g := aclLogFields(t, rc), aclLogFields(t, sc); w != g {
		t.Errorf("ACL LOG:\n  redis:    %s\n  slotraft: %s", w, g)
	}
	sameReplies(t, rc, sc, [][]string{{"ACL", "DELUSER", "carol"}, {"ACL", "LOG", "RESET"}})
}

// scriptACL72 is redis-server 7.0's script ACL error as 7.2 words it
// (script.c scriptVerifyACL with getAclErrorMessage's user and command).
func scriptACL72(r, cmd string) string {
	return strings.NewReplacer(
		"The user executing the script can't run this command or subcommand",
		"ACL failure in script: User carol has no permissions to run the '"+cmd+"' command",
		"The user executing the script can't access at least one of the keys mentioned in the command arguments",
		"ACL failure in script: No permissions to access a key",
	).Replace(r)
}
