package testcluster_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// rawConn speaks RESP by hand, so tests can check replies byte for byte.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, rd: bufio.NewReader(c)}
}

// do sends one command and returns its whole reply, raw.
func (r *rawConn) do(args ...string) string {
	r.t.Helper()
	r.send(args...)
	return r.read()
}

func (r *rawConn) send(args ...string) {
	r.t.Helper()
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	_ = r.c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawConn) read() string {
	r.t.Helper()
	s, err := readReply(r.rd)
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	return s
}

func readLine(rd *bufio.Reader) (string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return "", fmt.Errorf("bad line %q", line)
	}
	return line, nil
}

// readReply reads one RESP2/RESP3 reply and returns it raw.
func readReply(rd *bufio.Reader) (string, error) {
	line, err := readLine(rd)
	if err != nil {
		return "", err
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '$', '=', '!':
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return "", err
		}
		return line + string(buf), nil
	case '*', '~', '>', '%':
		if line[0] == '%' {
			n *= 2
		}
		out := line
		for range max(n, 0) {
			s, err := readReply(rd)
			if err != nil {
				return "", err
			}
			out += s
		}
		return out, nil
	}
	return line, nil
}
