package probe

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReadBulk(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "$5\r\nhello\r\n", want: "hello"},
		{in: "$0\r\n\r\n", want: ""},
		{in: "=9\r\ntxt:a:b:c\r\n", want: "txt:a:b:c"},
		{in: "-ERR nope\r\n", wantErr: "ERR nope"},
		{in: "+OK\r\n", wantErr: "unexpected reply"},
		{in: "$-1\r\n", wantErr: "bad bulk length"},
		{in: "$x\r\n", wantErr: "bad bulk length"},
		{in: "$5\r\nhel", wantErr: "EOF"},
		{in: "\r\n", wantErr: "empty reply"},
	}
	for _, tt := range tests {
		got, err := readBulk(bufio.NewReader(strings.NewReader(tt.in)))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("readBulk(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("readBulk(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestWaitClusterOK serves CLUSTER INFO from a fake node that reports
// cluster_state:fail twice, then ok.
func TestWaitClusterOK(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			state := "fail"
			if i >= 2 {
				state = "ok"
			}
			body := "cluster_state:" + state + "\r\ncluster_slots_assigned:16384\r\n"
			_, _ = bufio.NewReader(c).ReadString('\n') // enough to know a request came
			_, _ = c.Write([]byte("$" + strconv.Itoa(len(body)) + "\r\n" + body + "\r\n"))
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := WaitClusterOK(ctx, []string{ln.Addr().String()}); err != nil {
		t.Fatal(err)
	}

	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := WaitClusterOK(short, []string{"127.0.0.1:1"}); err == nil {
		t.Fatal("want an error when nothing listens")
	}
}

// FuzzReadBulk: any bytes give a string or an error, never a panic, and a
// bulk string is never longer than its declared length allows.
func FuzzReadBulk(f *testing.F) {
	for _, s := range []string{"$5\r\nhello\r\n", "=9\r\ntxt:a:b:c\r\n", "-ERR x\r\n", "$-1\r\n", "$99999999\r\n", "\r\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readBulk(bufio.NewReader(bytes.NewReader(b)))
		if err == nil && len(got) > len(b) {
			t.Fatalf("readBulk(%q) = %d bytes from %d bytes of input", b, len(got), len(b))
		}
	})
}
