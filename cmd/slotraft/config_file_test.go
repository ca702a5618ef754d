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
	"syscall"
	"testing"
	"time"

	"github.com/slotraft/slotraft/internal/testports"
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
	// Operators' HTTP from the file, as any flag of slotraft's.
	fs, f := newServerFlagSet(&bytes.Buffer{})
	if err := fs.Parse([]string{"--config", writeConf(t, "http 127.0.0.1:9701\nhttp-pprof yes\nproxy-bind 127.0.0.1:6401\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfigFile(fs, f); err != nil || f.http != "127.0.0.1:9701" || !f.httpPprof || f.proxy.bind != "127.0.0.1:6401" {
		t.Errorf("http from the file: %q, http-pprof %v, proxy-bind %q, err %v", f.http, f.httpPprof, f.proxy.bind, err)
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
	t.Run("environment", func(t *testing.T) { envProcess(t, bin) })
	t.Run("logfile and signals", func(t *testing.T) { logAndSignalProcess(t, bin) })
}

// logAndSignalProcess: a file's logfile receives the log (stderr stays
// empty); --log-level beats the file's loglevel, CONFIG SET loglevel
// changes what is logged; shutdown-on-sigterm decides how SIGTERM stops
// the node (now: no hand-off; save: a snapshot first).
func logAndSignalProcess(t *testing.T, bin string) {
	ports := testports.Free(t, 2)
	dir := t.TempDir()
	logfile := filepath.Join(dir, "slotraft.log")
	conf := writeConf(t, "id node1\nbind 127.0.0.1\nport "+strconv.Itoa(ports[0])+"\nbus-bind 127.0.0.1:"+strconv.Itoa(ports[1])+
		"\ndata-dir "+dir+"\ngroups 1\nreplicas 1\nlogfile "+logfile+"\nloglevel warning\nshutdown-on-sigterm now save\n")
	node := &testNode{id: "node1", client: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
		bin: bin, logPath: filepath.Join(dir, "stderr.log"), args: []string{"server", "--config", conf, "--log-level", "debug"}}
	c := &testCluster{bin: bin, nodes: []*testNode{node}}
	t.Cleanup(func() { c.stop(t) })
	node.start(t)
	c.waitOK(t)
	ask(t, node.client, "CONFIG GET loglevel", "*2\r\n$8\r\nloglevel\r\n$5\r\ndebug\r\n") // the flag wins
	ask(t, node.client, "CONFIG SET loglevel nothing", "+OK\r\n")
	before := fileText(t, logfile)
	if !strings.Contains(before, "slotraft node started") {
		t.Errorf("the logfile lacks the start line at level debug:\n%s", before)
	}
	stopBySignal(t, node, syscall.SIGTERM)
	if after := fileText(t, logfile); after != before {
		t.Errorf("loglevel nothing, yet the stop logged:\n%s", strings.TrimPrefix(after, before))
	}

	node.args = []string{"server", "--config", conf} // the file's loglevel now
	node.start(t)
	c.waitOK(t)
	ask(t, node.client, "CONFIG GET loglevel", "*2\r\n$8\r\nloglevel\r\n$7\r\nwarning\r\n")
	ask(t, node.client, "CONFIG SET loglevel notice", "+OK\r\n")
	stopBySignal(t, node, syscall.SIGTERM)
	log := fileText(t, logfile)
	for _, want := range []string{"signal received, shutting down", "signal=terminated", "hand_off=false", "save=true", "slotraft node stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("the logfile lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "leaving incomplete") { // its one group has no other replica: a leave waits in vain
		t.Errorf("shutdown-on-sigterm now, yet the node tried to leave:\n%s", log)
	}
	if out := fileText(t, node.logPath); out != "" {
		t.Errorf("with a logfile, stderr got:\n%s", out)
	}
}

// stopBySignal sends sig to node and waits for a clean exit.
func stopBySignal(t *testing.T, node *testNode, sig os.Signal) {
	t.Helper()
	if err := node.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-node.done:
	case <-time.After(e2eDeadline):
		t.Fatalf("%s did not stop after %v", node.id, sig)
	}
	if code := node.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("%s exited with status %d after %v", node.id, code, sig)
	}
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// envProcess starts a node from environment variables alone (one of
// them naming a config file) and reads its version from INFO.
func envProcess(t *testing.T, bin string) {
	ports := testports.Free(t, 2)
	dir := t.TempDir()
	client := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	node := &testNode{id: "node1", client: client, bin: bin, logPath: filepath.Join(dir, "node.log"), args: []string{"server"},
		env: []string{"SLOTRAFT_ID=node1", "SLOTRAFT_BIND=" + client, "SLOTRAFT_BUS_BIND=127.0.0.1:" + strconv.Itoa(ports[1]),
			"SLOTRAFT_DATA_DIR=" + dir, "SLOTRAFT_GROUPS=1", "SLOTRAFT_REPLICAS=1",
			"SLOTRAFT_CONFIG=" + writeConf(t, "maxmemory 3mb\ngroups 2\n")}}
	c := &testCluster{bin: bin, nodes: []*testNode{node}}
	t.Cleanup(func() { c.stop(t) })
	node.start(t)
	c.waitOK(t)
	ask(t, client, "CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$7\r\n3145728\r\n")
	ask(t, client, "CLUSTER SHARDS", "*1\r\n") // one group: the environment's, not the file's 2
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(string(out)), "slotraft ")
	inGit := exec.Command("git", "rev-parse", "HEAD").Run() == nil
	if version == "" || inGit && version == "dev" {
		t.Errorf("slotraft version = %q: want the build's (git) version", out)
	}
	info := infoOf(t, client)
	if !strings.Contains(info, "\r\nslotraft_version:"+version+"\r\n") {
		t.Errorf("INFO server lacks slotraft_version:%s:\n%s", version, info)
	}
}

// infoOf is the text of INFO server.
func infoOf(t *testing.T, addr string) string {
	t.Helper()
	br := send(t, addr, "INFO server")
	head, err := br.ReadString('\n')
	n, err2 := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || err2 != nil {
		t.Fatalf("INFO: %q %v %v", head, err, err2)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	return string(body)
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
	ports := testports.Free(t, 2)
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
	buf := make([]byte, len(want))
	if _, err := io.ReadFull(send(t, addr, cmd), buf); err != nil || string(buf) != want {
		t.Fatalf("%s: got %q (%v), want %q", cmd, buf, err, want)
	}
}

// send sends an inline command on a new connection, closed when the test
// ends, and returns the connection's reader.
func send(t *testing.T, addr, cmd string) *bufio.Reader {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(e2eDeadline))
	if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatal(err)
	}
	return bufio.NewReader(conn)
}
