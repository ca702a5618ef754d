package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Redis Cluster clients of other languages, as Debian packages them
// (make test-deps installs them): node-redis's createCluster and
// redis-rb's Redis.new(cluster: …), each started on one node's address.
// Each learns the slots (CLUSTER SLOTS, and redis-rb the key positions
// from COMMAND), writes and reads keys of every group, a multi-key
// command and a transaction within one hash tag.

// nodeRedisScript drives node-redis (Debian's node-redis, v4).
const nodeRedisScript = `
const { createCluster } = require('redis');
const [host, port, p] = process.argv.slice(1);
(async () => {
  const c = createCluster({ rootNodes: [{ url: 'redis://' + host + ':' + port }] });
  c.on('error', (e) => { console.error('client error', e); });
  await c.connect();
  for (let i = 0; i < 200; i++) await c.set(p + ':' + i, String(i));
  for (let i = 0; i < 200; i++) {
    const v = await c.get(p + ':' + i);
    if (v !== String(i)) throw new Error(p + ':' + i + ' = ' + v);
  }
  const tag = '{' + p + '}';
  await c.mSet([tag + 'a', '1', tag + 'b', '2']);
  const m = await c.mGet([tag + 'a', tag + 'b', tag + 'none']);
  if (JSON.stringify(m) !== '["1","2",null]') throw new Error('MGET ' + JSON.stringify(m));
  const tx = await c.multi(tag + 'ctr').incr(tag + 'ctr').incr(tag + 'ctr').exec();
  if (JSON.stringify(tx) !== '[1,2]') throw new Error('EXEC ' + JSON.stringify(tx));
  await c.hSet(p + ':h', { f1: 'v1', f2: 'v2' });
  const h = await c.hGetAll(p + ':h');
  if (h.f1 !== 'v1' || h.f2 !== 'v2') throw new Error('HGETALL ' + JSON.stringify(h));
  let err = '';
  try { await c.incr(p + ':h'); } catch (e) { err = e.message; }
  if (!err.startsWith('WRONGTYPE')) throw new Error('INCR of a hash: ' + err);
  await c.quit();
  console.log('ok');
})().catch((e) => { console.error(e); process.exit(1); });
`

// redisRbScript drives redis-rb (Debian's ruby-redis, 4.8).
const redisRbScript = `
require 'redis'
r = Redis.new(cluster: ["redis://#{ARGV[0]}:#{ARGV[1]}"])
p = ARGV[2]
tag = "{#{p}}"
200.times { |i| r.set("#{p}:#{i}", i.to_s) }
200.times { |i| v = r.get("#{p}:#{i}"); raise "#{p}:#{i} = #{v.inspect}" unless v == i.to_s }
r.mset("#{tag}a", "1", "#{tag}b", "2")
m = r.mget("#{tag}a", "#{tag}b", "#{tag}none")
raise "MGET #{m.inspect}" unless m == ["1", "2", nil]
tx = r.multi { |t| t.incr("#{tag}ctr"); t.incr("#{tag}ctr") }
raise "EXEC #{tx.inspect}" unless tx == [1, 2]
r.hset("#{p}:h", "f1", "v1", "f2", "v2")
h = r.hgetall("#{p}:h")
raise "HGETALL #{h.inspect}" unless h == { "f1" => "v1", "f2" => "v2" }
begin
  r.incr("#{p}:h")
  raise "INCR of a hash succeeded"
rescue Redis::CommandError => e
  raise "INCR of a hash: #{e.message}" unless e.message.start_with?("WRONGTYPE")
end
r.close
puts "ok"
`

// TestOtherLanguageClusterClients runs node-redis and redis-rb against a
// 3-node, 3-group cluster of real processes.
func TestOtherLanguageClusterClients(t *testing.T) {
	node := lookClient(t, "node-redis", "node", "-e", "require('redis')")
	ruby := lookClient(t, "ruby-redis", "ruby", "-e", "require 'redis'")
	cli, c := e2eCluster(t, 3)
	// Just after start the preferred replicas take their groups over, and
	// a group answers CLUSTERDOWN for the moment of the hand-off, which
	// node-redis does not retry: the clients start once it is over.
	c.waitMasterPerNode(t, cli, c.nodes[0])
	host, port, _ := net.SplitHostPort(c.nodes[0].client)
	for _, run := range []struct {
		name string
		cmd  []string
	}{
		{"node-redis", []string{node, "-e", nodeRedisScript, host, port}},
		{"redis-rb", []string{ruby, "-e", redisRbScript, host, port}},
	} {
		t.Run(run.name, func(t *testing.T) { runClientScript(t, run.name, run.cmd) })
	}
}

// runClientScript runs a client's script (cmd, then a key prefix) until
// it prints ok. An election on a loaded machine answers CLUSTERDOWN or
// TRYAGAIN for a moment, which these clients hand to the caller as go-redis
// would retry them: the script runs again, on keys of a new prefix (its
// INCRs count from 1), at most three times.
func runClientScript(t *testing.T, name string, cmd []string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		run := exec.CommandContext(ctx, cmd[0], append(cmd[1:], fmt.Sprintf("%s%d", name, attempt))...)
		run.Env = clientEnv()
		out, err := run.CombinedOutput()
		cancel()
		if err == nil && strings.TrimSpace(string(out)) == "ok" {
			return
		}
		if attempt < 3 && (strings.Contains(string(out), "CLUSTERDOWN") || strings.Contains(string(out), "TRYAGAIN")) {
			t.Logf("%s, attempt %d: %v\n%s(a leader change): again", name, attempt, err, out)
			continue
		}
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

// clientEnv is the environment of the clients' interpreters: node finds
// Debian's node-redis in /usr/share/nodejs only when told.
func clientEnv() []string { return append(os.Environ(), "NODE_PATH=/usr/share/nodejs") }

// lookClient is the interpreter bin once check (its arguments) finds
// Debian's package pkg; it skips the test without it, and fails it in CI,
// where make test-deps installs it.
func lookClient(t *testing.T, pkg, bin string, check ...string) string {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err == nil {
		cmd := exec.Command(path, check...)
		cmd.Env = clientEnv()
		err = cmd.Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found in CI (make test-deps installs it): %v", pkg, err)
		}
		t.Skipf("%s not installed (Debian's %s): %v", bin, pkg, err)
	}
	return path
}
