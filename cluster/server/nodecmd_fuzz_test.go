package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// fuzzSkipped are node commands the fuzzer may not send: they change the
// cluster or the node for every later input (leave, membership, slot moves,
// configuration) or dial arbitrary addresses (MIGRATE).
var fuzzSkipped = map[string]bool{
	"slotraft|leave": true, "slotraft|remove-node": true, "slotraft|move-slots": true,
	"slotraft|rebalance": true, "slotraft|transfer-leader": true,
	"cluster|setslot": true, "migrate": true, "config|set": true, "config|rewrite": true,
}

// fuzzNodeSeeds are argument vectors for every node command and
// subcommand: none, odd counts, numbers out of range, empty strings.
func fuzzNodeSeeds() [][]byte {
	tails := [][]string{nil, {""}, {"x"}, {"-1"}, {"0", "0"}, {"9223372036854775808"}, {"*", "x", "-5"},
		{"count", "1", "type", "string"}, {"id", "1", "2", "3"}}
	var out [][]byte
	for _, name := range slices.Sorted(maps.Keys(commands().byName)) {
		c := commands().byName[name]
		if !c.isNode() || fuzzSkipped[name] {
			continue
		}
		var heads [][]string
		if len(c.subs) == 0 || c.node != nil {
			heads = append(heads, []string{name})
		}
		for _, sc := range c.subs {
			if !fuzzSkipped[strings.ToLower(sc.meta.Name)] {
				heads = append(heads, []string{name, strings.SplitN(sc.meta.Name, "|", 2)[1]})
			}
		}
		out = append(out, fuzzArgSeeds(heads, tails)...)
	}
	return out
}

// fuzzArgSeeds are each head followed by each tail, as a fuzz input:
// the arguments joined by NUL bytes.
func fuzzArgSeeds(heads, tails [][]string) [][]byte {
	var out [][]byte
	for _, h := range heads {
		for _, tail := range tails {
			out = append(out, []byte(strings.Join(append(append([]string(nil), h...), tail...), "\x00")))
		}
	}
	return out
}

// FuzzNodeCommands sends node commands with random arguments to a
// one-node cluster's server, each on a new connection, and checks that the
// server answers a valid RESP value and keeps serving: no input may panic
// its way out of a handler (that would end the process), nor panic at all
// (the recovered internal error is a bug too).
func FuzzNodeCommands(f *testing.F) {
	for _, s := range fuzzNodeSeeds() {
		f.Add(s)
	}
	c := cluster.NewTestCluster(f, 1, 1)
	_, addr := serveNode(f, c.Nodes[0])
	f.Fuzz(func(t *testing.T, line []byte) {
		args := bytes.Split(line, []byte{0})
		name := strings.ToLower(string(args[0]))
		cmd := commands().lookup(args[0])
		if cmd == nil || !cmd.isNode() || fuzzSkipped[name] ||
			(len(args) > 1 && fuzzSkipped[name+"|"+strings.ToLower(string(args[1]))]) {
			return
		}
		fuzzOne(t, addr, args)
	})
}

// fuzzOne sends args as one command to addr on a new connection and
// checks that a valid RESP value comes back and that the listener still
// serves (PING on a fresh connection: this one may be subscribed or
// closing).
func fuzzOne(t *testing.T, addr string, args [][]byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = string(a)
	}
	if _, err := conn.Write(encodeCommand(words...)); err != nil {
		t.Fatal(err)
	}
	if err := readRESP(bufio.NewReader(conn), 0); err != nil {
		t.Fatalf("%q: no valid reply: %v", args, err)
	}
	ping, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("after %q: %v", args, err)
	}
	defer ping.Close()
	_ = ping.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = ping.Write(encodeCommand("PING"))
	if got, err := bufio.NewReader(ping).ReadString('\n'); err != nil || got != "+PONG\r\n" {
		t.Fatalf("after %q: PING = %q, %v", args, got, err)
	}
}

// readRESP reads one RESP2 or RESP3 value and fails on anything malformed,
// and on the internal error of a recovered panic.
func readRESP(rd *bufio.Reader, depth int) error {
	if depth > 64 {
		return errors.New("nested too deep")
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") || strings.ContainsAny(line[1:len(line)-2], "\r\n") {
		return fmt.Errorf("bad line %q", line)
	}
	body := line[1 : len(line)-2]
	if strings.HasPrefix(line, "-ERR internal error") {
		return fmt.Errorf("a handler panicked: %s", body)
	}
	count := func(min int64) (int64, error) {
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil || n < min {
			return 0, fmt.Errorf("bad count in %q", line)
		}
		return n, nil
	}
	switch line[0] {
	case '+', '-', ',', '(':
		return nil
	case ':':
		_, err := strconv.ParseInt(body, 10, 64)
		return err
	case '_':
		if body != "" {
			return fmt.Errorf("bad null %q", line)
		}
		return nil
	case '#':
		if body != "t" && body != "f" {
			return fmt.Errorf("bad boolean %q", line)
		}
		return nil
	case '$', '!', '=':
		n, err := count(-1)
		if err != nil || n < 0 {
			if line[0] == '$' && n == -1 && err == nil {
				return nil
			}
			return fmt.Errorf("bad length in %q", line)
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		if string(buf[n:]) != "\r\n" {
			return errors.New("bulk string not ended by CRLF")
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, err := count(-1)
		if err != nil || (n == -1 && line[0] != '*') {
			return fmt.Errorf("bad count in %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if err := readRESP(rd, depth+1); err != nil {
				return err
			}
		}
		if line[0] == '|' { // attributes precede the value they describe
			return readRESP(rd, depth+1)
		}
		return nil
	}
	return fmt.Errorf("unknown type %q", line)
}

// TestNodeCommandPanicIsAnError: a node command whose handler panics (a
// bug) answers Redis-style "ERR internal error in '<cmd>': …", like a data
// command that panics in the state machine, and the connection and the
// process go on serving.
func TestNodeCommandPanicIsAnError(t *testing.T) {
	c := cluster.NewTestCluster(t, 1, 1)
	srv := New(c.Nodes[0], cluster.TestLogger())
	tab := &commandTable{byName: maps.Clone(srv.table.byName), meta: srv.table.meta}
	boom := func(*Server, *client, [][]byte) resp.Value { panic("boom") }
	tab.byName["xpanic"] = &command{meta: &resp.Command{Name: "xpanic", Arity: -1}, node: boom}
	tab.byName["xpanicpush"] = &command{meta: &resp.Command{Name: "xpanicpush", Arity: -1},
		push: func(s *Server, c *client, args [][]byte) { boom(s, c, args) }}
	srv.table = tab
	bc := dialBlk(t, serveServer(t, srv))
	for _, name := range []string{"xpanic", "xpanicpush"} {
		bc.send(name, "a")
		if got, want := bc.read(5*time.Second), "-ERR internal error in '"+name+"': boom"; got != want {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
		bc.send("PING")
		if got := bc.read(5 * time.Second); got != "+PONG" {
			t.Fatalf("PING after %s = %q", name, got)
		}
	}
}
