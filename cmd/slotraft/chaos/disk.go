package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Disk faults throttle one node's writes to the block device that holds
// the data dirs, with the kernel's block-I/O controller (cgroup v1
// blkio.throttle): the node's process is moved into a cgroup of the run's
// own whose write IOPS and bytes per second are capped, so its fsyncs (the
// data blocks they flush are submitted from the node's own threads) take as
// long as a slow or stalled disk makes them. Nothing in slotraft knows:
// this is the real write path on a real disk, slowed by the kernel.
// Healing moves the process back to the root cgroup; the run removes its
// cgroup at the end, on error and on Ctrl-C.

// blkioRoot is where the cgroup v1 block-I/O hierarchy is mounted.
const blkioRoot = "/sys/fs/cgroup/blkio"

// sysBlock maps a device number "MAJ:MIN" to its sysfs directory.
const sysBlock = "/sys/dev/block"

// diskShape is how hard a disk fault throttles: write operations and bytes
// per second.
type diskShape struct {
	name string
	iops int
	bps  int
}

// diskShapes: a slow disk (an fsync of a few blocks takes some 100 ms) and
// a stalled one (seconds per fsync: writes queue behind it).
var diskShapes = []diskShape{
	{name: "slow", iops: 30, bps: 1 << 20},
	{name: "stalled", iops: 1, bps: 4096},
}

// diskThrottle is the run's block-I/O cgroup.
type diskThrottle struct {
	root string // the hierarchy's root cgroup: pids return there
	dir  string // the run's cgroup
	dev  string // "MAJ:MIN" of the whole disk holding the data dirs
}

// newDiskThrottle creates the run's cgroup for the disk holding dataDir;
// it fails, with the reason, where the platform cannot throttle it.
func newDiskThrottle(dataDir string) (*diskThrottle, error) {
	dev, err := diskOf(sysBlock, dataDir)
	if err != nil {
		return nil, fmt.Errorf("disk faults: %w", err)
	}
	if _, err := os.Stat(filepath.Join(blkioRoot, "blkio.throttle.write_iops_device")); err != nil {
		return nil, fmt.Errorf("disk faults need the cgroup v1 block-I/O controller mounted at %s (cgroup v2's io.max is not supported yet): %w", blkioRoot, err)
	}
	d := &diskThrottle{root: blkioRoot, dev: dev, dir: filepath.Join(blkioRoot, "slotraft_chaos_"+strconv.Itoa(os.Getpid()))}
	if err := os.Mkdir(d.dir, 0o755); err != nil {
		return nil, fmt.Errorf("disk faults: create cgroup %s (needs root): %w", d.dir, err)
	}
	if err := d.limit(diskShapes[0]); err != nil {
		_ = d.delete()
		return nil, fmt.Errorf("disk faults: throttle device %s: %w", dev, err)
	}
	return d, nil
}

// diskOf is "MAJ:MIN" of the whole disk that holds path: the throttle
// applies to disks, not to their partitions.
func diskOf(sys, path string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	dev := uint64(st.Dev) // int32 on darwin, uint64 on linux
	major, minor := devMajor(dev), devMinor(dev)
	dir := filepath.Join(sys, fmt.Sprintf("%d:%d", major, minor))
	real, err := filepath.EvalSymlinks(dir)
	if major == 0 || err != nil {
		return "", fmt.Errorf("%s is on device %d:%d, which is not a block device (tmpfs, overlay…); give --dir on a disk", path, major, minor)
	}
	if _, err := os.Stat(filepath.Join(real, "partition")); err == nil {
		real = filepath.Dir(real) // a partition's directory sits in its disk's
	}
	b, err := os.ReadFile(filepath.Join(real, "dev"))
	if err != nil {
		return "", fmt.Errorf("device of %s: %w", path, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// devMajor and devMinor split a Linux dev_t (glibc's encoding).
func devMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func devMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }

// limit sets the cgroup's write throttle to shape; zero lifts it.
func (d *diskThrottle) limit(s diskShape) error {
	if err := d.write("blkio.throttle.write_iops_device", fmt.Sprintf("%s %d", d.dev, s.iops)); err != nil {
		return err
	}
	return d.write("blkio.throttle.write_bps_device", fmt.Sprintf("%s %d", d.dev, s.bps))
}

func (d *diskThrottle) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(d.dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, file, err)
	}
	return nil
}

// enter moves process pid (all its threads) into the throttled cgroup.
func (d *diskThrottle) enter(pid int) error { return movePid(d.dir, pid) }

// leave lifts the throttle, which releases the writes it holds queued,
// then moves pid back to the root cgroup; a process that is gone has left.
// Moving the process alone would leave its queued writes draining at the
// throttled rate, and a process waiting for them cannot even be killed.
func (d *diskThrottle) leave(pid int) error {
	if err := d.limit(diskShape{}); err != nil {
		return err
	}
	if err := movePid(d.root, pid); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func movePid(cgroup string, pid int) error {
	if err := os.WriteFile(filepath.Join(cgroup, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		return fmt.Errorf("move pid %d to cgroup %s: %w", pid, cgroup, err)
	}
	return nil
}

// members lists the pids in the run's cgroup.
func (d *diskThrottle) members() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("read cgroup %s: %w", d.dir, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// heal moves every process out of the run's cgroup.
func (d *diskThrottle) heal() error {
	pids, err := d.members()
	if err != nil {
		return err
	}
	var errs error
	for _, pid := range pids {
		errs = errors.Join(errs, d.leave(pid))
	}
	return errs
}

// delete empties and removes the run's cgroup.
func (d *diskThrottle) delete() error {
	if _, err := os.Stat(d.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := d.heal(); err != nil {
		return err
	}
	if err := os.Remove(d.dir); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", d.dir, err)
	}
	return nil
}

// diskFault throttles the writes of one node (a group's leader, mostly)
// to a slow or a stalled disk, and lifts the throttle at heal.
type diskFault struct{}

func (diskFault) Kind() string { return "disk" }

func (diskFault) Inject(ctx context.Context, e *env, pick uint64) (Injected, error) {
	if e.disk == nil {
		return Injected{}, errors.New("disk faults were not set up")
	}
	n, err := e.victim(ctx, pick)
	if err != nil {
		return Injected{}, err
	}
	shape := diskShapes[(pick>>32)%uint64(len(diskShapes))]
	pid := n.pid()
	if err := e.disk.limit(shape); err != nil {
		return Injected{}, err
	}
	if err := e.disk.enter(pid); err != nil {
		return Injected{}, err
	}
	return Injected{
		Desc: fmt.Sprintf("%s disk for %s (pid %d): writes capped at %d op/s, %d B/s%s",
			shape.name, n.id, pid, shape.iops, shape.bps, leaderNote(ctx, e, n)),
		Targets: []string{n.id},
		Heal: func(context.Context) (string, error) {
			return "", e.disk.leave(pid)
		},
	}, nil
}
