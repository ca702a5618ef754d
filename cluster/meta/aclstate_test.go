package meta

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

func aclTable() *acl.Commands {
	cmd := func(name string, arity int, flags resp.Flag, acl ...string) *resp.Command {
		return &resp.Command{Name: name, Arity: arity, Flags: flags, FirstKey: 1, LastKey: 1, Step: 1, ACL: acl}
	}
	return acl.NewCommands([]*resp.Command{
		cmd("get", 2, resp.FlagReadOnly|resp.FlagFast, "string"),
		cmd("set", -3, resp.FlagWrite, "string"),
	})
}

func newACLFSM(t testing.TB) *FSM {
	f := quietFSM()
	f.SetACLCommands(aclTable())
	return f
}

func setUser(name string, rules ...string) ACLSetUser {
	c := ACLSetUser{Name: []byte(name)}
	for _, r := range rules {
		c.Rules = append(c.Rules, []byte(r))
	}
	return c
}

// TestFSMACL applies ACL entries in order: each step's error, and the ACL
// LIST and births after it.
func TestFSMACL(t *testing.T) {
	f := newACLFSM(t)
	steps := []struct {
		name    string
		cmd     Command
		wantErr error
		list    []string
		born    map[string]uint64
	}{
		{"setuser", setUser("alice", "on", ">pw", "+get", "~k*"), nil,
			[]string{"user alice on sanitize-payload #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~k* resetchannels -@all +get",
				"user default on nopass sanitize-payload ~* &* +@all"}, map[string]uint64{"alice": 1}},
		{"bad rule changes nothing", setUser("alice", "+set", "+nosuch"), acl.ErrUnknownCommand,
			nil, map[string]uint64{"alice": 1}},
		{"update keeps the birth", setUser("alice", "+set"), nil, nil, map[string]uint64{"alice": 1}},
		{"default cannot go", ACLDelUsers{Names: [][]byte{[]byte("alice"), []byte("default")}}, acl.ErrDefaultUser,
			nil, map[string]uint64{"alice": 1}},
		{"deluser", ACLDelUsers{Names: [][]byte{[]byte("alice"), []byte("bob")}}, nil,
			[]string{"user default on nopass sanitize-payload ~* &* +@all"}, map[string]uint64{}},
		{"made again: a new birth", setUser("alice"), nil, nil, map[string]uint64{"alice": 6}},
		{"requirepass", ACLSetUser{Name: []byte("default"), Rules: RequirePassRules([]byte("s3")), RequirePass: &[]byte{'s', '3'}}, nil,
			nil, map[string]uint64{"alice": 6}},
		{"load only while default", ACLLoad{Data: []byte("user carol on nopass\n"), File: "f", IfDefault: true}, ErrACLNotDefault,
			nil, map[string]uint64{"alice": 6}},
		{"bad load", ACLLoad{Data: []byte("user carol +nosuch\n"), File: "f"}, acl.ErrLoad, nil, map[string]uint64{"alice": 6}},
		{"load replaces users", ACLLoad{Data: []byte("user alice on nopass\nuser carol on nopass\n"), File: "f"}, nil,
			nil, map[string]uint64{"alice": 10, "carol": 10}},
	}
	for i, st := range steps {
		before := f.ACL()
		ch := f.ACLChanged()
		got := f.Apply(cmdLog(uint64(i+1), st.cmd))
		err, _ := got.(error)
		if !errors.Is(err, st.wantErr) || (st.wantErr == nil) != (err == nil) {
			t.Fatalf("%s: Apply = %v, want %v", st.name, got, st.wantErr)
		}
		if changed := f.ACL() != before; changed != (err == nil) || fired(ch) != changed {
			t.Fatalf("%s: state changed %v (signalled %v) with error %v", st.name, changed, fired(ch), err)
		}
		cur := f.ACL()
		if st.list != nil && !slices.Equal(cur.Users.List(), st.list) {
			t.Fatalf("%s: ACL LIST %q, want %q", st.name, cur.Users.List(), st.list)
		}
		for _, n := range cur.Users.Names() {
			if n != acl.DefaultUser && cur.Born(n) != st.born[n] {
				t.Fatalf("%s: %s born %d, want %d", st.name, n, cur.Born(n), st.born[n])
			}
		}
		if len(cur.Users.Names()) != len(st.born)+1 {
			t.Fatalf("%s: users %q, want %v and default", st.name, cur.Users.Names(), st.born)
		}
	}
	// ACL LOAD of a file without the default user makes it afresh (nopass);
	// requirepass stays as it was last set, as Redis's config does.
	if cur := f.ACL(); string(cur.RequirePass) != "s3" || !cur.Users.DefaultNoPass() || cur.Changes != 6 {
		t.Fatalf("requirepass %q, default nopass %v, changes %d", cur.RequirePass, cur.Users.DefaultNoPass(), cur.Changes)
	}
}

// TestACLSnapshot: the set survives a snapshot, restored before and after
// the table is known; a snapshot of the previous release (no "acl") is
// the default user only.
func TestACLSnapshot(t *testing.T) {
	f := newACLFSM(t)
	f.Apply(cmdLog(1, initCmd()))
	f.Apply(cmdLog(2, setUser("bob\xff", "on", ">x", "+get", "%R~r*", "&ch")))
	f.Apply(cmdLog(3, ACLSetUser{Name: []byte("default"), Rules: RequirePassRules([]byte("pw")), RequirePass: &[]byte{'p', 'w'}}))
	snap := persist(t, f)
	for _, early := range []bool{true, false} {
		g := quietFSM()
		if !early {
			g.SetACLCommands(aclTable())
		}
		if err := g.Restore(&closeReader{Reader: bytes.NewReader(snap)}); err != nil {
			t.Fatal(err)
		}
		if early {
			g.SetACLCommands(aclTable())
		}
		a, b := f.ACL(), g.ACL()
		if !slices.Equal(a.Users.List(), b.Users.List()) || string(b.RequirePass) != "pw" || b.Changes != 2 || b.Born("bob\xff") != 2 {
			t.Fatalf("restored (table early %v) %q %q %d, want %q", early, b.Users.List(), b.RequirePass, b.Changes, a.Users.List())
		}
		if !bytes.Equal(persist(t, g), snap) {
			t.Fatalf("snapshot of the restored FSM differs")
		}
	}
	prev, _ := json.Marshal(fixture(t)) // the previous release's snapshot: the map alone
	old := append([]byte{snapshotVersion}, prev...)
	g := newACLFSM(t)
	g.Apply(cmdLog(1, setUser("x")))
	if err := g.Restore(&closeReader{Reader: bytes.NewReader(old)}); err != nil {
		t.Fatal(err)
	}
	if got := g.ACL().Users.Names(); !reflect.DeepEqual(got, []string{"default"}) || g.ACL().Changes != 0 {
		t.Fatalf("after an old snapshot: users %q", got)
	}
}

// FuzzACLEntry: any decoded ACL entry applies without a panic, and the
// set it leaves survives a snapshot.
func FuzzACLEntry(f *testing.F) {
	for _, c := range commands() {
		if _, ok := c.(aclCommand); ok {
			f.Add(Encode(c))
		}
	}
	f.Add(Encode(setUser("u", "on", "(+get ~a*)", "&x*", "%W~w")))
	f.Fuzz(func(t *testing.T, b []byte) {
		cmd, err := Decode(b)
		if err != nil {
			return
		}
		ac, ok := cmd.(aclCommand)
		if !ok {
			return
		}
		m := newACLFSM(t)
		m.Apply(cmdLog(1, ac.(Command)))
		g := quietFSM()
		if err := g.Restore(&closeReader{Reader: bytes.NewReader(persist(t, m))}); err != nil {
			t.Fatalf("restore after %+v: %v", cmd, err)
		}
		g.SetACLCommands(aclTable())
		if a, b := m.ACL().Users.List(), g.ACL().Users.List(); !slices.Equal(a, b) {
			t.Fatalf("after %+v: restored %q, want %q", cmd, b, a)
		}
	})
}
