package main

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestShutdownCommand: SHUTDOWN sent to one `slotraft server` process of a
// three-node cluster makes it hand off its leaderships and exit with
// status 0 (the client gets no reply, its connection closes); the others
// go on serving every slot. SHUTDOWN inside MULTI and ABORT answer Redis's
// errors and stop nothing.
func TestShutdownCommand(t *testing.T) {
	cli, c := e2eCluster(t, 3)
	victim := c.nodes[1]
	if out, _ := redisCLI(cli, victim, "SHUTDOWN", "ABORT"); out != "ERR No shutdown in progress." {
		t.Errorf("SHUTDOWN ABORT = %q", out)
	}
	conn, err := net.DialTimeout("tcp", victim.client, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := conn.Write([]byte("MULTI\r\nSHUTDOWN\r\nDISCARD\r\nSHUTDOWN\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var got []byte
	for {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break // the server closed the connection: no reply to SHUTDOWN
		}
	}
	if want := "+OK\r\n-ERR Command not allowed inside a transaction\r\n+OK\r\n"; string(got) != want {
		t.Errorf("MULTI, SHUTDOWN, DISCARD, SHUTDOWN answered %q, want %q and the connection closed", got, want)
	}
	select {
	case <-victim.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the process did not exit after SHUTDOWN")
	}
	if code := victim.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	victim.cmd = nil // gone: nothing for the cleanup to stop
	log, _ := os.ReadFile(victim.logPath)
	if !strings.Contains(string(log), "SHUTDOWN received") || !strings.Contains(string(log), "slotraft node stopped") {
		t.Errorf("the log does not show a SHUTDOWN and a clean stop:\n%s", tail(victim.logPath, 20))
	}
	for _, n := range c.nodes {
		if n == victim {
			continue
		}
		c.eventually(t, "set and get through "+n.id+" after the SHUTDOWN", func() error {
			if err := c.expect(cli, n, "OK", "-c", "set", "after-"+n.id, "v"); err != nil {
				return err
			}
			return c.expect(cli, n, "v", "-c", "get", "after-"+n.id)
		})
	}
}

// e2eCluster starts n `slotraft server` processes for an end-to-end test
// driven with redis-cli, once they answer; it skips as lookRedisCLI does,
// and with -short.
func e2eCluster(t *testing.T, n int) (cli string, c *testCluster) {
	t.Helper()
	cli = lookRedisCLI(t)
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	c = startTestCluster(t, buildSlotraft(t), n)
	c.waitOK(t)
	return cli, c
}
