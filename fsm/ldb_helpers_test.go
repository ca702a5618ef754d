package fsm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/resp"
)

// ldbClient is a debugging client that sends one command per read, in
// order, and records what the debugger sends it: each array of log lines
// is one "reply". Once its commands are used up, it is gone (reads fail).
type ldbClient struct {
	cmds    [][]string
	raw     [][]byte // bytes to send as they are, before cmds (protocol tests)
	out     bytes.Buffer
	onRead  func() // called before each read (a test ends the session there)
	written int
}

func (c *ldbClient) Read(p []byte) (int, error) {
	if c.onRead != nil {
		c.onRead()
	}
	if len(c.raw) > 0 {
		n := copy(p, c.raw[0])
		if c.raw[0] = c.raw[0][n:]; len(c.raw[0]) == 0 {
			c.raw = c.raw[1:]
		}
		return n, nil
	}
	if len(c.cmds) == 0 {
		return 0, io.EOF
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(c.cmds[0]))
	for _, a := range c.cmds[0] {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.cmds = c.cmds[1:]
	return copy(p, b.Bytes()), nil // the tests' commands fit in one read
}

func (c *ldbClient) Write(p []byte) (int, error) {
	c.written++
	return c.out.Write(p)
}

// replies parses what the debugger sent: one string slice per array.
func (c *ldbClient) replies(t *testing.T) [][]string {
	t.Helper()
	var out [][]string
	rd := bufio.NewReader(bytes.NewReader(c.out.Bytes()))
	for {
		head, err := rd.ReadString('\n')
		if err == io.EOF {
			return out
		}
		var n int
		if _, err := fmt.Sscanf(head, "*%d\r\n", &n); err != nil {
			t.Fatalf("debugger output %q: %v", head, err)
		}
		lines := []string{}
		for range n {
			l, err := rd.ReadString('\n')
			if err != nil || !strings.HasPrefix(l, "+") || !strings.HasSuffix(l, "\r\n") {
				t.Fatalf("debugger line %q: %v", l, err)
			}
			lines = append(lines, strings.TrimSuffix(l[1:], "\r\n"))
		}
		out = append(out, lines)
	}
}

// debugEval runs a debugging session of script on a copy of h's state
// with the client's commands and returns what the client saw and the
// EVAL's reply.
func debugEval(t *testing.T, h *harness, c *ldbClient, script string, keysAndArgs ...string) ([][]string, resp.Value) {
	t.Helper()
	return debugEvalOpts(t, h, c, DebugOpts{}, script, keysAndArgs...)
}

func debugEvalOpts(t *testing.T, h *harness, c *ldbClient, opts DebugOpts, script string, keysAndArgs ...string) ([][]string, resp.Value) {
	t.Helper()
	args := [][]byte{[]byte("EVAL"), []byte(script)}
	nkeys := 0
	for i, a := range keysAndArgs {
		if a == "," {
			nkeys = i
			keysAndArgs = append(keysAndArgs[:i:i], keysAndArgs[i+1:]...)
			break
		}
		nkeys = i + 1
	}
	args = append(args, []byte(fmt.Sprint(nkeys)))
	for _, a := range keysAndArgs {
		args = append(args, []byte(a))
	}
	opts.Conn = c
	done := make(chan resp.Value, 1)
	go func() { done <- h.s.DebugCopy().Eval(h.now, args, false, opts) }()
	select {
	case v := <-done:
		return c.replies(t), v
	case <-time.After(30 * time.Second):
		t.Fatal("debugging session did not end")
	}
	return nil, resp.Value{}
}

// cmds turns "s", "p x" … into debugger commands.
func cmds(lines ...string) [][]string {
	out := make([][]string, len(lines))
	for i, l := range lines {
		out[i] = strings.Fields(l)
	}
	return out
}
