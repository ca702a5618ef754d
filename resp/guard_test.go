package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/redcon"
)

// feedAll runs in through a fresh guard in chunks of size chunk.
func feedAll(l Limits, in []byte, chunk int) ([]byte, error) {
	g := guard{limits: l.withDefaults()}
	var out []byte
	for len(in) > 0 {
		n := min(chunk, len(in))
		var err error
		out, err = g.feed(out, in[:n])
		if err != nil {
			return out, err
		}
		in = in[n:]
	}
	return out, nil
}

func TestGuardPassesValidInput(t *testing.T) {
	inputs := []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
		"*2\r\n$3\r\nGET\r\n$10\r\n\r\n*1\r\n$1\r\r\n", // bodies may hold anything
		"PING\r\n",
		"PING\n",
		"\r\n",
		"\n\n",
		"set k \"a b\"\r\n*1\r\n$4\r\nPING\r\n",
		"$not multibulk, inline\r\n",
		"*1\r\n$4\r\nPING\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n",
		"*1\r\n$4\r\nPI", // incomplete is fine
		"*1\r\n$536870912\r\nabc",
	}
	for _, in := range inputs {
		for _, chunk := range []int{1, 2, 3, 7, 1 << 20} {
			out, err := feedAll(Limits{}, []byte(in), chunk)
			if err != nil || string(out) != in {
				t.Errorf("feed(%q, chunk %d) = %q, %v; want it unchanged", in, chunk, out, err)
			}
		}
	}
}

func TestGuardDropsEmptyMultibulk(t *testing.T) {
	for _, in := range []string{"*0\r\n", "*-10\r\n", "*-1\r\n"} {
		out, err := feedAll(Limits{}, []byte(in+"*1\r\n$4\r\nPING\r\n"), 1)
		if err != nil || string(out) != "*1\r\n$4\r\nPING\r\n" {
			t.Errorf("feed(%q+PING) = %q, %v", in, out, err)
		}
	}
}

func TestGuardViolations(t *testing.T) {
	big := strings.Repeat("x", DefaultMaxInlineLen+1)
	tests := []struct {
		in      string
		lim     Limits
		wantOut string
		err     *ProtocolError
	}{
		{"*1\r\n$536870913\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$9223372036854775807\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$99999999999999999999\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$-1\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$+1\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$01\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$1\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$1\rx\r\n", Limits{}, "*1\r\n", ErrProtoBulkLength},
		{"*1\r\n$11\r\n", Limits{MaxBulkLen: 10}, "*1\r\n", ErrProtoBulkLength},
		{"*2147483648\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*3000000000\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*1048577\r\n", Limits{MaxMultibulkLen: 1024 * 1024}, "", ErrProtoMultibulkLength},
		{"*abc\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*1\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*-0\r\n", Limits{}, "", ErrProtoMultibulkLength},
		{"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", Limits{}, "*3\r\n$3\r\nSET\r\n$1\r\nx\r\n", errExpectedDollar('f')},
		{"PING\r\n" + big, Limits{}, "PING\r\n", ErrProtoInlineTooBig},
		{"*1\r\n$4\r\nPING\r\n*" + big, Limits{}, "*1\r\n$4\r\nPING\r\n", ErrProtoMbulkCountBig},
		{"*1\r\n$" + big, Limits{}, "*1\r\n", ErrProtoBulkCountBig},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 5, 1 << 20} {
			out, err := feedAll(tt.lim, []byte(tt.in), chunk)
			var pe *ProtocolError
			// Inline bytes stream through until the limit is passed.
			if !errors.As(err, &pe) || pe.Text != tt.err.Text || !strings.HasPrefix(tt.in, string(out)) ||
				len(out) > len(tt.wantOut)+DefaultMaxInlineLen {
				t.Errorf("feed(%.40q, chunk %d) = %.60q, %v; want %.60q, %q", tt.in, chunk, out, err, tt.wantOut, tt.err.Text)
			}
			if chunk == 1<<20 && string(out) != tt.wantOut {
				t.Errorf("feed(%.40q) whole = %.60q, want %.60q", tt.in, out, tt.wantOut)
			}
		}
	}
}

// An inline line of exactly the limit is fine; Redis refuses only more.
func TestGuardInlineAtLimit(t *testing.T) {
	in := strings.Repeat("x", DefaultMaxInlineLen) + "\n"
	if out, err := feedAll(Limits{}, []byte(in), 4096); err != nil || string(out) != in {
		t.Fatalf("inline of %d bytes refused: %v", DefaultMaxInlineLen, err)
	}
}

// serveGuarded accepts one connection through GuardListener and reads it with
// redcon's reader, answering every command with +OK until an error.
func serveGuarded(t *testing.T) (addr string, done <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	gl := GuardListener(ln)
	ch := make(chan error, 1)
	go func() {
		c, err := gl.Accept()
		if err != nil {
			ch <- err
			return
		}
		defer c.Close()
		rd := redcon.NewReader(c)
		for {
			cmds, err := rd.ReadCommands()
			if err != nil {
				ch <- err
				return
			}
			for _, cmd := range cmds {
				if _, err := c.Write([]byte("+" + strings.ToUpper(string(cmd.Args[0])) + "\r\n")); err != nil {
					ch <- err
					return
				}
			}
		}
	}()
	return ln.Addr().String(), ch
}

func TestGuardListener(t *testing.T) {
	tests := []struct {
		name, send string
		want       []string
		err        *ProtocolError
	}{
		{"bulk", "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$536870913\r\n", []string{"+PING", "-ERR Protocol error: invalid bulk length"}, ErrProtoBulkLength},
		{"multibulk", "*-10\r\nPING\r\n*3000000000\r\n", []string{"+PING", "-ERR Protocol error: invalid multibulk length"}, ErrProtoMultibulkLength},
		{"inline", strings.Repeat("a", 70000), []string{"-ERR Protocol error: too big inline request"}, ErrProtoInlineTooBig},
		{"dollar", "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", []string{"-ERR Protocol error: expected '$', got 'f'"}, errExpectedDollar('f')},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, done := serveGuarded(t)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			for _, w := range tt.want {
				line, err := br.ReadString('\n')
				if err != nil || line != w+"\r\n" {
					t.Fatalf("read %q, %v; want %q", line, err, w)
				}
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("connection not closed after the error: %v", err)
			}
			var pe *ProtocolError
			if err := <-done; !errors.As(err, &pe) || pe.Text != tt.err.Text {
				t.Errorf("server read error %v, want %q", err, tt.err.Text)
			}
		})
	}
}

// encode renders args as a RESP multibulk request.
func encode(args [][]byte) []byte {
	b := appendHeader(nil, '*', int64(len(args)))
	for _, a := range args {
		b = appendBulk(b, '$', a)
	}
	return b
}

func FuzzGuardValid(f *testing.F) {
	f.Add([]byte("SET"), []byte("k"), []byte("v\r\n*"), uint8(3))
	f.Add([]byte(""), []byte("$"), []byte("*1\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, a, b, c []byte, chunk uint8) {
		in := append(encode([][]byte{a, b, c}), encode([][]byte{c})...)
		if len(a) > 0 && !bytes.ContainsAny(a, "\r\n*") {
			in = append(in, a...)
			in = append(in, '\n')
		}
		out, err := feedAll(Limits{}, in, int(chunk)+1)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("valid input %q changed: %q, %v", in, out, err)
		}
	})
}

func FuzzGuard(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "*-1\r\n", "$1\r\n", "*1\r\n$99999999999\r\n", "PING\n"} {
		f.Add([]byte(s), uint8(0))
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8) {
		whole, werr := feedAll(Limits{MaxInlineLen: 100}, in, len(in)+1)
		parts, perr := feedAll(Limits{MaxInlineLen: 100}, in, int(chunk)+1)
		if (werr == nil) != (perr == nil) || !bytes.HasPrefix(whole, parts) && !bytes.HasPrefix(parts, whole) {
			t.Fatalf("chunking changes the result: %q/%v vs %q/%v", whole, werr, parts, perr)
		}
		// Whatever passes the guard must never make redcon panic.
		readAllCommands(whole)
	})
}

// readAllCommands feeds b to redcon's reader until it fails.
func readAllCommands(b []byte) (n int, err error) {
	rd := redcon.NewReader(bytes.NewReader(b))
	for {
		cmds, err := rd.ReadCommands()
		if err != nil {
			return n, err
		}
		n += len(cmds)
	}
}

// TestRedconPanicsWithoutGuard documents why the guard matters: redcon's
// reader indexes out of range on a bulk length near MaxInt64.
func TestRedconPanicsWithoutGuard(t *testing.T) {
	in := []byte("*1\r\n$" + strconv.FormatInt(1<<63-1, 10) + "\r\n")
	func() {
		defer func() {
			if recover() == nil {
				t.Log("redcon no longer panics on a huge bulk length")
			}
		}()
		readAllCommands(in)
	}()
	out, err := feedAll(Limits{}, in, len(in))
	if !errors.Is(err, ErrProtoBulkLength) || string(out) != "*1\r\n" {
		t.Fatalf("guard passed %q, %v", out, err)
	}
	readAllCommands(out) // must not panic
}

func FuzzRedconReader(f *testing.F) {
	for _, s := range []string{"*1\r\n$4\r\nPING\r\n", "PING \"a\\n\" 'b'\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*0\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// Run through the guard as the server does; redcon alone panics on
		// bulk lengths near MaxInt64 (see TestRedconPanicsWithoutGuard).
		out, _ := feedAll(Limits{}, in, len(in)+1)
		readAllCommands(out)
	})
}
