package fsm

import (
	"strings"
	"testing"

	"github.com/slotraft/slotraft/resp"
)

// withCommand makes cmd a data command for the duration of the test.
func withCommand(t *testing.T, cmd *Command) {
	t.Helper()
	register(cmd)
	t.Cleanup(func() { delete(registry, cmd.Meta.Name) })
}

// A command with a bug must not take the node down: the panic becomes the
// command's error reply, the same on every replica.
func TestPanickingCommandIsAnError(t *testing.T) {
	withCommand(t, &Command{
		Meta: &resp.Command{Name: "testpanic", Arity: -1, Flags: resp.FlagWrite},
		Run: func(c *Ctx, args [][]byte) resp.Value {
			return resp.Bulk(args[len(args)]) // index out of range: a runtime panic
		},
	})
	readBug := &Command{
		Meta: &resp.Command{Name: "testpanicro", Arity: -1, Flags: resp.FlagReadOnly},
		Run:  func(c *Ctx, args [][]byte) resp.Value { panic("read bug") },
	}
	s := NewState()
	replies := repliesOf(s.Apply(1, &Entry{Type: EntryCommands, Now: 1, Cmds: [][][]byte{
		{[]byte("testpanic")}, {[]byte("set"), []byte("k"), []byte("v")},
	}}))
	if len(replies) != 2 || !replies[0].IsError() || !strings.Contains(string(replies[0].Str), "internal error in 'testpanic'") {
		t.Fatalf("apply of a panicking command: %+v", replies)
	}
	if string(replies[1].Str) != "OK" {
		t.Fatalf("the next command of the entry did not run: %+v", replies[1])
	}
	v := replyOf(s.Read(2, readBug, [][]byte{[]byte("testpanicro")}))
	if !v.IsError() || !strings.Contains(string(v.Str), "read bug") {
		t.Fatalf("read of a panicking command: %+v", v)
	}
}
