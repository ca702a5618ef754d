package testcluster_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/testcluster"
)

// TestPasswordCluster: three nodes started with the same config file
// (requirepass and an aclfile) get the file's users and the password once,
// cluster-wide; go-redis's ClusterClient and redis-cli -c with a user and
// password work across the nodes (redirects included); without them
// NOAUTH; a user limited to some keys gets NOPERM for others.
func TestPasswordCluster(t *testing.T) {
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "users.acl")
	users := "user app on >apppw ~app:* &* +@all -@dangerous\nuser default on >ignored ~* &* +@all\n"
	if err := os.WriteFile(aclFile, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slotraft.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("requirepass s3cret\naclfile %s\n", aclFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.New(t, 3, testcluster.Options{ConfigFile: conf})
	c.WaitLeaders(20 * time.Second)
	ctx := context.Background()

	open := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), MaxRedirects: 16})
	defer open.Close()
	cluster.PollUntil(t, "requirepass on every node", func() bool {
		return strings.HasPrefix(fmt.Sprint(open.Ping(ctx).Err()), "NOAUTH")
	})

	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Username: "app", Password: "apppw", MaxRedirects: 16})
	defer rdb.Close()
	cluster.PollUntil(t, "user app on every node", func() bool {
		for _, a := range c.Addrs() {
			one := redis.NewClient(&redis.Options{Addr: a, Username: "app", Password: "apppw"})
			err := one.Ping(ctx).Err()
			one.Close()
			if err != nil {
				return false
			}
		}
		return true
	})
	for i := range 50 {
		key := fmt.Sprintf("app:%d", i)
		if err := rdb.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s as app: %v", key, err)
		}
	}
	if err := rdb.Set(ctx, "other", 1, 0).Err(); err == nil || err.Error() != "NOPERM No permissions to access a key" {
		t.Fatalf("SET other as app: %v, want NOPERM", err)
	}
	admin := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), Password: "s3cret", MaxRedirects: 16})
	defer admin.Close()
	if v, err := admin.Get(ctx, "app:7").Result(); err != nil || v != "7" {
		t.Fatalf("GET app:7 as default: %q %v", v, err)
	}

	aclSaveLoad(ctx, t, c, aclFile)

	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not found")
	}
	host, port, _ := net.SplitHostPort(c.Addrs()[2])
	for i := range 10 {
		key := fmt.Sprintf("app:%d", i)
		out, err := exec.Command(cli, "-h", host, "-p", port, "--user", "app", "--pass", "apppw", "--no-auth-warning", "-c", "GET", key).CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != fmt.Sprint(i) {
			t.Fatalf("redis-cli -c GET %s = %q (%v)", key, out, err)
		}
	}
	out, _ := exec.Command(cli, "-h", host, "-p", port, "GET", "app:1").CombinedOutput()
	if !strings.Contains(string(out), "NOAUTH") {
		t.Fatalf("redis-cli without a password: %q", out)
	}
}

// aclSaveLoad: ACL SAVE writes the cluster's users to the aclfile; a bad
// file is refused by ACL LOAD with nothing changed; a good one replaces
// the users on every node and closes the connections of replaced users.
func aclSaveLoad(ctx context.Context, t *testing.T, c *testcluster.Cluster, aclFile string) {
	t.Helper()
	admin := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], Password: "s3cret"})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatalf("ACL SAVE: %v", err)
	}
	saved, _ := os.ReadFile(aclFile)
	if !strings.Contains(string(saved), "user app on ") {
		t.Fatalf("aclfile after ACL SAVE:\n%s", saved)
	}
	app := redis.NewClient(&redis.Options{Addr: c.Addrs()[2], Username: "app", Password: "apppw", PoolSize: 1})
	defer app.Close()
	id, err := app.Do(ctx, "CLIENT", "ID").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(aclFile, append(saved, "user bad +nosuch\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "ACL", "LOAD").Err(); err == nil || !strings.Contains(err.Error(), "no change to the previously active ACL rules was performed") {
		t.Fatalf("ACL LOAD of a bad file: %v", err)
	}
	if err := os.WriteFile(aclFile, append(saved, "user ops on >opspw +@all ~*\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatalf("ACL LOAD: %v", err)
	}
	cluster.PollUntil(t, "ops on node 3, app's connection closed", func() bool {
		ops := redis.NewClient(&redis.Options{Addr: c.Addrs()[2], Username: "ops", Password: "opspw"})
		defer ops.Close()
		now, err := app.Do(ctx, "CLIENT", "ID").Int64() // a new connection: the old one was closed
		return ops.Ping(ctx).Err() == nil && err == nil && now != id
	})
}
