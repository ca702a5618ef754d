package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "slotraft.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigFileFlags: the file sets the flags the command line leaves
// unset; Redis's bind and port make the client address unless --bind is
// given.
func TestConfigFileFlags(t *testing.T) {
	conf := writeConf(t, "id n1\ngroups 5\ndata-dir \"/tmp/a b\"\nbootstrap yes\nport 7100\nbind -192.0.2.1 ::1\nmaxmemory 1mb\n")
	for _, tc := range []struct {
		args                 []string
		bind, dataDir, id    string
		groups               int
		bootstrap, wantError bool
	}{
		{args: []string{"--config", conf}, bind: "192.0.2.1:7100", dataDir: "/tmp/a b", id: "n1", groups: 5, bootstrap: true},
		{args: []string{"--config", conf, "--groups", "2", "--bind", "127.0.0.1:9", "--id", "x"}, bind: "127.0.0.1:9", dataDir: "/tmp/a b", id: "x", groups: 2, bootstrap: true},
		{args: []string{"--bootstrap=false", "--config", conf}, bind: "192.0.2.1:7100", dataDir: "/tmp/a b", id: "n1", groups: 5},
	} {
		fs, f := newServerFlagSet(&bytes.Buffer{})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		file, err := readConfigFile(fs, f)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if f.bind != tc.bind || f.dataDir != tc.dataDir || f.id != tc.id || f.groups != tc.groups || f.bootstrap != tc.bootstrap {
			t.Errorf("%v: bind %s data-dir %s id %s groups %d bootstrap %v; want %s %s %s %d %v", tc.args,
				f.bind, f.dataDir, f.id, f.groups, f.bootstrap, tc.bind, tc.dataDir, tc.id, tc.groups, tc.bootstrap)
		}
		if v, _ := file.Value("maxmemory"); v != "1048576" {
			t.Errorf("maxmemory %q", v)
		}
	}
	for text, want := range map[string]string{
		"bind *\n":            "0.0.0.0:7001",
		"bind \"::*\"\n":      "[::]:7001",
		"port 0\n":            "127.0.0.1:0",
		"timeout 5\n":         "127.0.0.1:7001",
		"bind \"\"\n":         "!slotraft needs an address",
		"groups x\n":          "!line 1",
		"groups 1 2\n":        "!wrong number of arguments",
		"config other.conf\n": "!Bad directive",
	} {
		fs, f := newServerFlagSet(&bytes.Buffer{})
		if err := fs.Parse([]string{"--config", writeConf(t, text)}); err != nil {
			t.Fatal(err)
		}
		_, err := readConfigFile(fs, f)
		got := f.bind
		if err != nil {
			got = "!" + err.Error()
		}
		if !strings.HasPrefix(want, "!") && got != want || strings.HasPrefix(want, "!") && !strings.Contains(got, want[1:]) {
			t.Errorf("%q: got %q, want %q", text, got, want)
		}
	}
}

// TestConfigFileProcess runs the real binary (built once) with a bad
// file and with a good one.
func TestConfigFileProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	bin := buildSlotraft(t)
	t.Run("bad file", func(t *testing.T) { badStart(t, bin) })
	t.Run("rewrite", func(t *testing.T) { rewriteProcess(t, bin) })
}

// badStart: a bad file stops the start with Redis's message naming the
// line, and the process exits with 1.
func badStart(t *testing.T, bin string) {
	conf := writeConf(t, "# a node\nid node1\n\nmaxmemory lots\n")
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "server", "--config", conf, "--data-dir", t.TempDir()).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want status 1; output:\n%s", err, out)
	}
	want := "*** FATAL CONFIG FILE ERROR (Redis 7.2.0) ***\nReading the configuration file, at line 4\n>>> 'maxmemory lots'\nargument must be a memory value\n"
	if !strings.Contains(string(out), want) {
		t.Errorf("output:\n%s\nwant it to hold:\n%s", out, want)
	}
}

// rewriteProcess starts a node from a file alone, changes a parameter,
// rewrites the file, and restarts the node on it.
func rewriteProcess(t *testing.T, bin string) {
	ports := freePorts(t, 2)
	dir := t.TempDir()
	conf := writeConf(t, "# node one\nid node1\nbind 127.0.0.1\nport "+strconv.Itoa(ports[0])+
		"\nbus-bind 127.0.0.1:"+strconv.Itoa(ports[1])+"\ndata-dir "+dir+"\ngroups 1\nreplicas 1\n\n# memory\nmaxmemory 1mb\n")
	node := &testNode{id: "node1", client: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		bin: bin, logPath: filepath.Join(dir, "node.log"), args: []string{"server", "--config", conf}}
	c := &testCluster{bin: bin, nodes: []*testNode{node}}
	t.Cleanup(func() { c.stop(t) })
	node.start(t)
	c.waitOK(t)
	ask(t, node.client, "CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$7\r\n1048576\r\n")
	ask(t, node.client, "CONFIG SET maxmemory 2mb", "+OK\r\n")
	ask(t, node.client, "CONFIG REWRITE", "+OK\r\n")
	got, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "# node one\nid node1\n") || !strings.Contains(string(got), "# memory\nmaxmemory 2mb\n") {
		t.Errorf("rewritten file:\n%s", got)
	}
	c.stop(t)
	node.start(t)
	c.waitOK(t)
	ask(t, node.client, "CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$7\r\n2097152\r\n")
}

// ask sends an inline command and wants exactly want back.
func ask(t *testing.T, addr, cmd, want string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(e2eDeadline))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(bufio.NewReader(conn), buf); err != nil || string(buf) != want {
		t.Fatalf("%s: got %q (%v), want %q", cmd, buf, err, want)
	}
}
