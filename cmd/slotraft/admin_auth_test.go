package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/testcluster"
)

// TestAdminAuth: with requirepass set, slotraft admin needs --pass (or
// REDISCLI_AUTH); a user without the admin commands gets NOPERM.
func TestAdminAuth(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "slotraft.conf")
	if err := os.WriteFile(conf, []byte("requirepass s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.New(t, 1, testcluster.Options{Groups: 1, Replicas: 1, ConfigFile: conf})
	c.WaitLeaders(20 * time.Second)
	addr := c.Addrs()[0]
	cluster.PollUntil(t, "requirepass applied", func() bool {
		out, code := adminRun(t, "--addr", addr, "--timeout", "5s", "health")
		return code == 1 && strings.Contains(out, "NOAUTH")
	})
	if out, code := adminRun(t, "--addr", addr, "--timeout", "5s", "--pass", "s3cret", "health"); code != 0 {
		t.Fatalf("admin --pass health: exit %d, %q", code, out)
	}
	t.Setenv("REDISCLI_AUTH", "s3cret")
	if out, code := adminRun(t, "--addr", addr, "--timeout", "5s", "status"); code != 0 {
		t.Fatalf("admin status with REDISCLI_AUTH: exit %d, %q", code, out)
	}
	if out, code := adminRun(t, "--addr", addr, "--timeout", "5s", "--user", "nobody", "--pass", "x", "status"); code != 1 || !strings.Contains(out, "WRONGPASS") {
		t.Fatalf("admin as an unknown user: exit %d, %q", code, out)
	}
}
