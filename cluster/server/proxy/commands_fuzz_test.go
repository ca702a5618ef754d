package proxy_test

import (
	"bytes"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/server/proxy"
	"github.com/slotraft/slotraft/cluster/testcluster"
	"github.com/slotraft/slotraft/resp"
)

// fuzzSkipped are commands the fuzzer does not send through the proxy:
// they change the cluster or every later input's rules (users, passwords,
// configuration, pauses, slot moves), may wait forever by design (a
// blocking command or WAIT with timeout 0, CLIENT REPLY OFF's silence),
// or dial arbitrary addresses (MIGRATE).
func fuzzSkipped(meta *resp.Command) bool {
	if meta.Is(resp.FlagBlocking) {
		return true
	}
	switch meta.Name {
	case "migrate", "wait", "waitaof", "client|reply", "client|pause", "client|kill", "debug",
		"failover", "replicaof", "slaveof", "shutdown", "monitor":
		return true
	}
	for _, prefix := range []string{"config|", "acl|", "slotraft|", "cluster|"} {
		if strings.HasPrefix(meta.Name, prefix) {
			return true
		}
	}
	return false
}

// FuzzProxyCommands sends every command the fuzzer makes (arguments split
// at NUL bytes) through a proxy of a one-node cluster, each on a new
// connection: it answers a well-formed reply, and the proxy keeps serving
// (no input panics a session, let alone the process: a recovered panic
// is logged, and the next PING still answers).
func FuzzProxyCommands(f *testing.F) {
	tails := []string{"", "\x00x", "\x00k1\x00k2", "\x00-1\x002", "\x00{t}a\x00{t}b\x001", "\x000\x00match\x00*\x00count\x001"}
	for _, c := range server.Commands().All() {
		for _, m := range append([]*resp.Command{c}, c.Subcommands...) {
			if fuzzSkipped(m) {
				continue
			}
			head := strings.ReplaceAll(m.Name, "|", "\x00")
			for _, tail := range tails {
				f.Add([]byte(head + tail))
			}
		}
	}
	c := testcluster.New(f, 1, testcluster.Options{Groups: 2, Replicas: 1})
	c.WaitLeaders(60 * time.Second)
	p := proxy.New(c.Node(0), proxy.Options{Commands: server.Commands(), RetryFor: time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	go func() { _ = p.Serve(ln) }()
	f.Cleanup(func() { _ = p.Close() })
	addr := ln.Addr().String()
	f.Fuzz(func(t *testing.T, line []byte) {
		args := bytes.Split(line, []byte{0})
		meta := server.Commands().Lookup(args[0])
		if meta == nil || len(args[0]) == 0 {
			return
		}
		if len(meta.Subcommands) > 0 && len(args) > 1 {
			if i, err := meta.SubcommandIndex(args); err == nil {
				meta = meta.Subcommands[i]
			}
		}
		if fuzzSkipped(meta) || slices.ContainsFunc(args, func(a []byte) bool { return resp.EqualFold(a, "block") }) {
			return
		}
		if f := roundTripRaw(t, addr, args); f == nil {
			t.Fatalf("%q: no reply", args)
		}
		if f := roundTripRaw(t, addr, [][]byte{[]byte("PING")}); string(f) != "+PONG\r\n" {
			t.Fatalf("after %q, PING answered %q", args, f)
		}
	})
}

// roundTripRaw sends args on a new connection and reads one reply frame.
func roundTripRaw(t *testing.T, addr string, args [][]byte) []byte {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(resp.AppendRequest(nil, args)); err != nil {
		t.Fatal(err)
	}
	f, err := resp.NewReplyReader(nc, 0).Next()
	if err != nil {
		return nil
	}
	return f
}
