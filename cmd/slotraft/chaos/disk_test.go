package chaos

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDevNumbers(t *testing.T) {
	for _, c := range []struct {
		dev          uint64
		major, minor uint64
	}{
		{dev: 0xfe00, major: 254, minor: 0},
		{dev: 0x0801, major: 8, minor: 1},
		{dev: 0x10010301, major: 259, minor: 0x10001}, // minor above 255
		{dev: 0x2d, major: 0, minor: 45},              // tmpfs
	} {
		if ma, mi := devMajor(c.dev), devMinor(c.dev); ma != c.major || mi != c.minor {
			t.Errorf("dev %#x: %d:%d, want %d:%d", c.dev, ma, mi, c.major, c.minor)
		}
	}
}

// fakeSysBlock lays out /sys/dev/block for the device of dir, as a
// partition of a disk when partition is set.
func fakeSysBlock(t *testing.T, dir string, partition bool) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev) // int32 on darwin
	num := strconv.FormatUint(devMajor(dev), 10) + ":" + strconv.FormatUint(devMinor(dev), 10)
	sys := t.TempDir()
	disk := filepath.Join(sys, "devices", "vdz")
	target := disk
	mustWrite(t, filepath.Join(disk, "dev"), "252:0\n")
	if partition {
		target = filepath.Join(disk, "vdz1")
		mustWrite(t, filepath.Join(target, "dev"), num+"\n")
		mustWrite(t, filepath.Join(target, "partition"), "1\n")
	}
	if err := os.MkdirAll(filepath.Join(sys, "block"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(sys, "block", num)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(sys, "block")
}

func mustWrite(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiskOf: a partition resolves to its disk, a disk to itself, and a
// device sysfs does not list (tmpfs, overlay) is refused.
func TestDiskOf(t *testing.T) {
	dir := t.TempDir()
	for _, partition := range []bool{false, true} {
		sys := fakeSysBlock(t, dir, partition)
		got, err := diskOf(sys, dir)
		if err != nil || got != "252:0" {
			t.Errorf("partition %v: %q, %v; want 252:0", partition, got, err)
		}
	}
	if got, err := diskOf(t.TempDir(), dir); err == nil || !strings.Contains(err.Error(), "not a block device") {
		t.Errorf("unlisted device: %q, %v; want refused", got, err)
	}
}

// TestDiskThrottleAttributesWrites: synced writes of a process moved into
// the run's cgroup are counted (and so throttled) there; after heal and
// delete nothing of the cgroup is left. Needs root and cgroup v1 blkio.
func TestDiskThrottleAttributesWrites(t *testing.T) {
	dir, d := needThrottle(t)
	defer func() {
		if err := d.delete(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(d.dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s left behind: %v", d.dir, err)
		}
	}()
	if err := d.limit(diskShape{iops: 1000, bps: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	sh, done := startWriter(t, d, dir, 8)
	if pids, err := d.members(); err != nil || !slices.Contains(pids, sh.Process.Pid) {
		t.Fatalf("cgroup members %v, %v: want pid %d", pids, err, sh.Process.Pid)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(d.dir, "blkio.throttle.io_serviced"))
	if err != nil {
		t.Fatal(err)
	}
	if !writesCounted(string(b), d.dev) {
		t.Errorf("no writes to %s counted in the cgroup:\n%s", d.dev, b)
	}
}

// writesCounted finds a non-zero "MAJ:MIN Write N" line.
func writesCounted(serviced, dev string) bool {
	for line := range strings.Lines(serviced) {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == dev && f[1] == "Write" && f[2] != "0" {
			return true
		}
	}
	return false
}

// TestDiskHealReleasesQueuedWrites: a process stalled behind the throttle
// (32 synced writes at one a second) finishes soon after leave, instead of
// draining its queued writes at the throttled rate: a node healed from a
// stalled disk must be killable and fast again at once. Needs root and
// cgroup v1 blkio.
func TestDiskHealReleasesQueuedWrites(t *testing.T) {
	dir, d := needThrottle(t)
	defer func() { _ = d.delete() }()
	if err := d.limit(diskShapes[len(diskShapes)-1]); err != nil { // stalled
		t.Fatal(err)
	}
	sh, done := startWriter(t, d, dir, 32)
	deadline := time.Now().Add(10 * time.Second)
	for { // until the throttle holds some of its writes
		b, err := os.ReadFile(filepath.Join(d.dir, "blkio.throttle.io_serviced"))
		if err == nil && writesCounted(string(b), d.dev) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never wrote through the throttle")
		}
		time.Sleep(20 * time.Millisecond) // polling the counter, not waiting for time to pass
	}
	select {
	case err := <-done:
		t.Fatalf("32 synced writes finished before the heal at 1 write/s: %v", err)
	default:
	}
	if err := d.leave(sh.Process.Pid); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second): // throttled, the rest would take 30 s
		_ = sh.Process.Kill()
		t.Fatal("the writer still waits 15 s after the heal: its queued writes were not released")
	}
}

// startWriter starts a shell that waits for its stdin, moves it into d's
// cgroup, then lets it write count blocks of 4 KiB with O_DSYNC; done
// gets its exit.
func startWriter(t *testing.T, d *diskThrottle, dir string, count int) (*exec.Cmd, <-chan error) {
	t.Helper()
	sh := exec.Command("sh", "-c", "read go; dd if=/dev/zero of="+filepath.Join(dir, "f")+" bs=4k count="+strconv.Itoa(count)+" oflag=dsync 2>/dev/null")
	in, err := sh.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sh.Wait() }()
	if err := d.enter(sh.Process.Pid); err != nil {
		_ = sh.Process.Kill()
		t.Fatal(err)
	}
	_, _ = in.Write([]byte("go\n"))
	return sh, done
}

// needThrottle is a temporary dir and the run's cgroup for its disk, or a
// skip where there is none (not root, no cgroup v1 blkio, no block device).
func needThrottle(t *testing.T) (string, *diskThrottle) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir := t.TempDir()
	d, err := newDiskThrottle(dir)
	if err != nil {
		t.Skipf("no disk throttle here: %v", err)
	}
	return dir, d
}
