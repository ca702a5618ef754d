package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cmd/slotraft/internal/probe"
	"github.com/slotraft/slotraft/internal/testports"
	"github.com/slotraft/slotraft/slots"
)

// TestDockerCompose builds the image (deploy/Dockerfile) and runs
// deploy/docker-compose.yml's six nodes on their own published ports:
// containers are restarted in turn (two in make test, all six in make
// test-long) while a client writes (no error
// reaches the client, no acknowledged write is lost), then a group's
// leader is cut off from the other nodes (docker network disconnect) and
// must not answer a read with the value the others have since replaced.
func TestDockerCompose(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test: skipped with -short")
	}
	d := newDockerCompose(t)
	d.up(t)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: d.addrs, MaxRedirects: 16, MaxRetries: 20,
		MinRetryBackoff: 50 * time.Millisecond, MaxRetryBackoff: 500 * time.Millisecond, DisableIdentity: true})
	t.Cleanup(func() { rdb.Close() })
	t.Run("rolling restart", func(t *testing.T) { rollingRestart(t, d, rdb) })
	t.Run("partitioned leader", func(t *testing.T) { partitionedLeader(t, d, rdb) })
}

// dockerCompose is one compose project of the test: its image, its ports
// and the environment that points deploy/docker-compose.yml at them.
type dockerCompose struct {
	project, image string
	addrs          []string // the nodes' client addresses on the host
	env            []string
}

func newDockerCompose(t *testing.T) *dockerCompose {
	t.Helper()
	for _, tool := range []string{"docker", "docker-compose"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: the Docker test needs Docker Engine and docker-compose", tool)
		}
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Skipf("no Docker daemon: %v %s", err, out)
	}
	suffix := randomHex(t)
	d := &dockerCompose{project: "slotrafttest" + suffix, image: "slotraft:test-" + suffix}
	ctxDir := t.TempDir()
	bin, err := os.ReadFile(buildSlotraft(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctxDir, "slotraft"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ctxDir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	dockerRun(t, "docker", "build", "-q", "-f", "../../deploy/Dockerfile", "-t", d.image, ctxDir)
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", d.image).Run() })
	d.env = append(os.Environ(), "SLOTRAFT_IMAGE="+d.image)
	for i, p := range testports.Free(t, 6) {
		d.env = append(d.env, fmt.Sprintf("NODE%d_PORT=%d", i+1, p))
		d.addrs = append(d.addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	return d
}

// up starts the six containers, removed with their volumes when the test
// ends, and waits for cluster_state:ok on every node.
func (d *dockerCompose) up(t *testing.T) {
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := d.compose("logs", "--no-color", "--tail", "80").CombinedOutput()
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := d.compose("down", "-v", "-t", "5").CombinedOutput(); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	d.run(t, "up", "-d")
	d.waitOK(t)
}

// compose is a docker-compose command on the project, with its
// environment, killed if it runs for more than 5 minutes.
func (d *dockerCompose) compose(args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, "docker-compose", append([]string{"-p", d.project, "-f", "../../deploy/docker-compose.yml"}, args...)...)
	cmd.Env = d.env
	time.AfterFunc(5*time.Minute, cancel) // the context's resources go with its timeout
	return cmd
}

// run runs a docker-compose command, failing the test on error.
func (d *dockerCompose) run(t *testing.T, args ...string) {
	t.Helper()
	out, err := d.compose(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (d *dockerCompose) waitOK(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eDeadline)
	defer cancel()
	if err := probe.WaitClusterOK(ctx, d.addrs); err != nil {
		t.Fatal(err)
	}
}

// container is the id of service nodeN's container.
func (d *dockerCompose) container(t *testing.T, n int) string {
	t.Helper()
	out, err := d.compose("ps", "-q", "node"+strconv.Itoa(n)).Output()
	if err != nil || len(strings.TrimSpace(string(out))) == 0 {
		t.Fatalf("compose ps node%d: %v %s", n, err, out)
	}
	return strings.TrimSpace(string(out))
}

// rollingRestart restarts node1…node6 one after the other (SIGTERM: each
// hands off its leaderships first), waiting for cluster_state:ok between
// them, while a client writes; every write must succeed and read back.
func rollingRestart(t *testing.T, d *dockerCompose, rdb *redis.ClusterClient) {
	ctx := context.Background()
	stop := make(chan struct{})
	var mu sync.Mutex
	var acked []int
	var failed []error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			err := rdb.Set(ctx, "dk:"+strconv.Itoa(i), i, 0).Err()
			mu.Lock()
			if err != nil {
				failed = append(failed, fmt.Errorf("SET dk:%d: %w", i, err))
			} else {
				acked = append(acked, i)
			}
			mu.Unlock()
		}
	}()
	// make test restarts two of the six (the time it has); make test-long
	// all of them.
	restart := []int{1, 4}
	if os.Getenv("SLOTRAFT_TEST_LONG") == "1" {
		restart = []int{1, 2, 3, 4, 5, 6}
	}
	for _, n := range restart {
		d.run(t, "restart", "-t", "30", "node"+strconv.Itoa(n))
		d.waitOK(t)
	}
	close(stop)
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d writes failed during the rolling restart; first: %v", len(failed), len(failed)+len(acked), failed[:min(5, len(failed))])
	}
	if len(acked) == 0 {
		t.Fatal("no write succeeded")
	}
	for _, i := range acked {
		if v, err := rdb.Get(ctx, "dk:"+strconv.Itoa(i)).Result(); err != nil || v != strconv.Itoa(i) {
			t.Fatalf("acknowledged dk:%d reads %q, %v", i, v, err)
		}
	}
	t.Logf("%d writes acknowledged and read back across the restart of %d containers", len(acked), len(restart))
}

// partitionedLeader cuts the leader of a key's group off the bus network:
// once the other nodes have accepted a new value, reads sent to the old
// leader (still reachable from the host) must never return the old one.
func partitionedLeader(t *testing.T, d *dockerCompose, rdb *redis.ClusterClient) {
	ctx := context.Background()
	const key = "dk:partition"
	if err := rdb.Set(ctx, key, "old", 0).Err(); err != nil {
		t.Fatal(err)
	}
	n := d.leaderOf(t, rdb, key)
	id := d.container(t, n)
	ip := strings.TrimSpace(dockerRun(t, "docker", "inspect", "-f",
		`{{(index .NetworkSettings.Networks "`+d.project+`_access").IPAddress}}`, id))
	bus := d.project + "_bus"
	dockerRun(t, "docker", "network", "disconnect", bus, id)
	t.Cleanup(func() {
		_ = exec.Command("docker", "network", "connect", "--alias", "node"+strconv.Itoa(n)+".bus", bus, id).Run()
	})
	// The write goes through a client on the majority's side of the
	// partition: it cannot reach the cut-off node (whose published port the
	// host still reaches through the access network). go-redis reloads its
	// slot map only after a MOVED or every ClusterStateReloadInterval (60 s
	// by default), not after connection errors: a short interval is what an
	// application that wants to ride out a partition sets.
	cutOff := d.addrs[n-1]
	others := redis.NewClusterClient(&redis.ClusterOptions{Addrs: slices.Delete(slices.Clone(d.addrs), n-1, n),
		MaxRedirects: 16, DisableIdentity: true, ClusterStateReloadInterval: 500 * time.Millisecond,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == cutOff {
				return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	defer others.Close()
	start := time.Now()
	deadline := start.Add(e2eDeadline)
	for err := others.Set(ctx, key, "new", 0).Err(); err != nil; err = others.Set(ctx, key, "new", 0).Err() {
		if time.Now().After(deadline) {
			shards, _ := others.ClusterShards(ctx).Result()
			t.Fatalf("the majority did not accept a write within %v of node%d's partition: %v; shards: %+v", e2eDeadline, n, err, shards)
		}
	}
	t.Logf("the other nodes accepted the new value %v after node%d was cut off", time.Since(start).Round(time.Millisecond), n)
	old := redis.NewClient(&redis.Options{Addr: ip + ":7001", MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 3 * time.Second, DisableIdentity: true})
	defer old.Close()
	for range 5 {
		v, err := old.Get(ctx, key).Result()
		if err == nil && v == "old" {
			t.Fatalf("node%d, cut off from the others, answered the replaced value %q", n, v)
		}
		t.Logf("GET from the partitioned node%d: %q %v", n, v, err)
	}
	dockerRun(t, "docker", "network", "connect", "--alias", "node"+strconv.Itoa(n)+".bus", bus, id)
	start = time.Now()
	d.waitOK(t)
	t.Logf("cluster_state:ok on every node %v after the partition healed", time.Since(start).Round(time.Millisecond))
	if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "new" {
		t.Fatalf("after the partition healed: %q %v, want new", v, err)
	}
}

// leaderOf is the node (1-6) whose client port serves key's slot.
func (d *dockerCompose) leaderOf(t *testing.T, rdb *redis.ClusterClient, key string) int {
	t.Helper()
	shards, err := rdb.ClusterShards(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	slot := int64(slots.Of([]byte(key)))
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if slot < r.Start || slot > r.End {
				continue
			}
			for _, nd := range sh.Nodes {
				for i, a := range d.addrs {
					if nd.Role == "master" && strings.HasSuffix(a, ":"+strconv.FormatInt(nd.Port, 10)) {
						return i + 1
					}
				}
			}
		}
	}
	t.Fatalf("no node serves %s (slot %d): %+v", key, slot, shards)
	return 0
}

// dockerRun runs a docker command and returns its output, failing the
// test on error.
func dockerRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func randomHex(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
