package acl_test

import (
	"fmt"

	"github.com/slotraft/slotraft/acl"
	"github.com/slotraft/slotraft/resp"
)

// The server builds Commands once from its table, keeps one Users (under
// its lock), and checks every command of a connection's user.
func Example() {
	get := &resp.Command{Name: "get", Arity: 2, Flags: resp.FlagReadOnly | resp.FlagFast, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"string"}}
	set := &resp.Command{Name: "set", Arity: -3, Flags: resp.FlagWrite | resp.FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, ACL: []string{"string"}}
	users := acl.NewUsers(acl.NewCommands([]*resp.Command{get, set}))

	if err := users.SetUser("alice", "on", ">secret", "~cache:*", "+@read"); err != nil {
		fmt.Println(resp.ErrorText(err))
	}
	err := users.SetUser("alice", "+nosuch")
	fmt.Println(resp.ErrorText(err))
	fmt.Println(users.List()[0])

	alice := users.Authenticate("alice", []byte("secret"))
	fmt.Println(alice.Check(get, [][]byte{[]byte("GET"), []byte("cache:1")}) == nil)
	if d := alice.Check(get, [][]byte{[]byte("GET"), []byte("other")}); d != nil {
		fmt.Println(d.Err(alice.Name), d.Reason, d.Pos, d.Object)
	}
	if d := alice.Check(set, [][]byte{[]byte("SET"), []byte("cache:1"), []byte("v")}); d != nil {
		fmt.Println(d.Err(alice.Name))
	}
	// Output:
	// ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL
	// user alice on sanitize-payload #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~cache:* resetchannels -@all +@read
	// true
	// NOPERM No permissions to access a key key 1 other
	// NOPERM User alice has no permissions to run the 'set' command
}
