package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/slots"
)

// `slotraft admin move-slots` and `slotraft admin rebalance` record slot
// migrations, then follow them with SLOTRAFT MIGRATIONS until none is
// pending. The migrations run in the cluster: stopping the command (Ctrl-C,
// --timeout) stops the following, not the migrations.

// migratePollInterval: four redraws a second look live and cost the node
// one small reply each.
const migratePollInterval = 250 * time.Millisecond

// migrateSettlePolls ends a wait once nothing has been pending for this
// many polls in a row (two seconds), even if fewer migrations finished
// than were recorded: one dropped by the cluster must not make us wait
// forever.
const migrateSettlePolls = 8

// migrationSample is the progress counters of a SLOTRAFT MIGRATIONS reply.
func migrationSample(r cluster.MigrationStatus, at time.Time) progressSample {
	return progressSample{at: at, pending: r.Pending, moved: int64(r.Moved), keysMoved: int64(r.KeysMoved)}
}

// migrateRequest is a parsed move-slots or rebalance command line.
type migrateRequest struct {
	cmd    string // "move-slots" or "rebalance"
	mode   progressMode
	group  uint32        // move-slots: the target group
	ranges []slots.Range // move-slots: the slots to move there
}

// adminMigrate runs move-slots or rebalance (admin.Arg(0)). --timeout bounds
// each request; given on the command line, it also bounds the whole wait,
// which otherwise lasts until the migrations are over or Ctrl-C.
func adminMigrate(ctx context.Context, rdb *redis.Client, admin *flag.FlagSet, stdout, stderr io.Writer) error {
	req, err := parseMigrateArgs(admin.Arg(0), admin.Args()[1:], stdout, stderr)
	if err != nil {
		return err
	}
	reqTimeout, bounded := adminTimeout(admin)
	if !bounded {
		// runAdmin's context ends after the default --timeout, which is
		// about one request, not a move of thousands of slots.
		ctx = context.WithoutCancel(ctx)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The baseline comes before the command, so the counters count
	// exactly the migrations finished from then on.
	base, err := fetchMigrations(ctx, rdb, reqTimeout)
	if err != nil {
		return fmt.Errorf("%s: %w", req.cmd, err)
	}
	prog := newMigrationProgress(migrationSample(base, time.Now()))
	recorded, err := req.send(ctx, rdb, reqTimeout, stdout)
	if err != nil {
		return fmt.Errorf("%s: %w", req.cmd, err)
	}
	prog.atLeast(base.Pending + recorded)
	printer := newProgressPrinter(stdout, req.mode)
	follow := migrationFollow{
		poll: func(ctx context.Context) (cluster.MigrationStatus, error) {
			return fetchMigrations(ctx, rdb, reqTimeout)
		},
		interval: migratePollInterval, patience: reqTimeout,
		rebalance: req.cmd == "rebalance", printer: printer, now: time.Now,
	}
	last, err := follow.run(ctx, prog)
	return finishFollow(ctx, printer, prog.stats(), last, err, req.cmd, reqTimeout)
}

// finishFollow writes the final summary line and says why the wait stopped
// early, if it did.
func finishFollow(ctx context.Context, printer *progressPrinter, st progressStats, last cluster.MigrationStatus, err error, cmd string, timeout time.Duration) error {
	if err == nil {
		printer.finish(st, "done: "+renderSummary(st))
		return nil
	}
	printer.finish(st, fmt.Sprintf("stopped following: %s; %s", renderSummary(st), pendingText(last)))
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("migrations not over within --timeout %v: %w", timeout, err)
	case errors.Is(ctx.Err(), context.Canceled):
		err = errors.New("interrupted")
	}
	return fmt.Errorf("%s: %w", cmd, err)
}

// parseMigrateArgs reads the subcommand's flags and operands; a bad command
// line prints what is wrong and the usage, and returns errUsage.
func parseMigrateArgs(cmd string, args []string, stdout, stderr io.Writer) (migrateRequest, error) {
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage) }
	progress := fs.String("progress", "auto", "auto (a bar on a terminal, else plain lines), bar or plain")
	req := migrateRequest{cmd: cmd}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return req, err
		}
		return req, errUsage
	}
	mode, err := parseProgressMode(*progress, stdout)
	if err == nil {
		err = req.parseOperands(fs.Args())
	}
	if err != nil {
		fmt.Fprintf(stderr, "slotraft admin %s: %v\n\n%s", cmd, err, adminUsage)
		return req, errUsage
	}
	req.mode = mode
	return req, nil
}

func (r *migrateRequest) parseOperands(args []string) error {
	if r.cmd == "rebalance" {
		if len(args) > 0 {
			return fmt.Errorf("unexpected arguments %q", args)
		}
		return nil
	}
	if len(args) < 2 {
		return errors.New("want a group id and at least one slot or start-end range")
	}
	gid, err := strconv.ParseUint(args[0], 10, 32)
	if err != nil {
		return fmt.Errorf("bad group id %q: want a number", args[0])
	}
	r.group = uint32(gid)
	r.ranges, err = parseSlotRanges(args[1:])
	return err
}

// parseSlotRanges reads slots ("5") and inclusive ranges ("0-99").
func parseSlotRanges(args []string) ([]slots.Range, error) {
	out := make([]slots.Range, 0, len(args))
	for _, a := range args {
		r, err := slots.ParseRange(a)
		if err != nil {
			return nil, fmt.Errorf("bad slot or range %q: want a slot 0-%d or start-end with start <= end", a, slots.Count-1)
		}
		out = append(out, r)
	}
	return out, nil
}

// adminTimeout returns admin's --timeout and whether the command line set it.
func adminTimeout(admin *flag.FlagSet) (time.Duration, bool) {
	d, _ := admin.Lookup("timeout").Value.(flag.Getter).Get().(time.Duration)
	set := false
	admin.Visit(func(f *flag.Flag) { set = set || f.Name == "timeout" })
	return d, set
}

// send records the migrations and says so on stdout; it returns how many
// the cluster newly recorded (0 for a rebalance, which records them in
// batches as it goes).
func (r migrateRequest) send(ctx context.Context, rdb *redis.Client, timeout time.Duration, stdout io.Writer) (int, error) {
	if r.cmd == "rebalance" {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := rdb.Do(c, "SLOTRAFT", "REBALANCE").Err(); err != nil {
			return 0, fmt.Errorf("SLOTRAFT REBALANCE: %w", err)
		}
		fmt.Fprintln(stdout, "rebalance requested")
		return 0, nil
	}
	n, err := moveSlots(ctx, rdb, timeout, r.group, r.ranges)
	if err != nil {
		return 0, err
	}
	asked := slots.NewSet(r.ranges...).Len()
	fmt.Fprintf(stdout, "recorded %d slot migrations to group %d (%d of the %d slots asked for were there or on their way)\n",
		n, r.group, asked-n, asked)
	return n, nil
}

// moveSlots sends SLOTRAFT MOVE-SLOTS and returns how many migrations the
// cluster newly recorded.
func moveSlots(ctx context.Context, rdb *redis.Client, timeout time.Duration, group uint32, ranges []slots.Range) (int, error) {
	args := []any{"SLOTRAFT", "MOVE-SLOTS", group}
	for _, r := range ranges {
		args = append(args, r.String())
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n, err := rdb.Do(c, args...).Int()
	if err != nil {
		return 0, fmt.Errorf("SLOTRAFT MOVE-SLOTS %d: %w", group, err)
	}
	return n, nil
}

// fetchMigrations reads SLOTRAFT MIGRATIONS, giving the node timeout.
func fetchMigrations(ctx context.Context, rdb *redis.Client, timeout time.Duration) (cluster.MigrationStatus, error) {
	var r cluster.MigrationStatus
	err := slotraftJSON(ctx, rdb, timeout, "MIGRATIONS", &r)
	return r, err
}

// fetchStatus reads SLOTRAFT STATUS, giving the node timeout.
func fetchStatus(ctx context.Context, rdb *redis.Client, timeout time.Duration) (cluster.ClusterStatus, error) {
	var st cluster.ClusterStatus
	err := slotraftJSON(ctx, rdb, timeout, "STATUS", &st)
	return st, err
}

// slotraftJSON runs SLOTRAFT <sub>, which answers JSON, and decodes it into v.
func slotraftJSON(ctx context.Context, rdb *redis.Client, timeout time.Duration, sub string, v any) error {
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := rdb.Do(c, "SLOTRAFT", sub).Text()
	if err == nil {
		err = json.Unmarshal([]byte(raw), v)
	}
	if err != nil {
		return fmt.Errorf("SLOTRAFT %s from %s: %w", sub, rdb.Options().Addr, err)
	}
	return nil
}

// groupSlots is the set of slots a group's status lists.
func groupSlots(g cluster.GroupStatus) (*slots.Set, error) {
	ranges, err := parseSlotRanges(g.Slots)
	if err != nil {
		return nil, fmt.Errorf("group %d: %w", g.ID, err)
	}
	return slots.NewSet(ranges...), nil
}

// migrationFollow polls SLOTRAFT MIGRATIONS until the migrations are over.
type migrationFollow struct {
	poll      func(context.Context) (cluster.MigrationStatus, error)
	interval  time.Duration
	patience  time.Duration    // how long polls may fail in a row
	rebalance bool             // also wait for the controller's rebalance to end
	printer   *progressPrinter // nil: no output
	now       func() time.Time
}

// run feeds prog with a sample per poll, the first at once, and returns the
// last reply once the migrations are over, ctx ends or the node stops
// answering for longer than the patience.
func (f *migrationFollow) run(ctx context.Context, prog *migrationProgress) (cluster.MigrationStatus, error) {
	var last cluster.MigrationStatus
	lastOK, idle := f.now(), 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-timer.C:
		}
		timer.Reset(f.interval)
		r, err := f.poll(ctx)
		now := f.now()
		if err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			if now.Sub(lastOK) >= f.patience {
				return last, fmt.Errorf("no answer for %v: %w", now.Sub(lastOK).Round(time.Millisecond), err)
			}
			continue // a leader change or a busy node: try the next poll
		}
		last, lastOK = r, now
		prog.add(migrationSample(r, now))
		st := prog.stats()
		if f.printer != nil {
			f.printer.update(st)
		}
		idle = nextIdle(idle, r, f.rebalance)
		if migrationsOver(st, idle) {
			return r, nil
		}
	}
}

// nextIdle counts the polls in a row that showed nothing to wait for.
func nextIdle(idle int, r cluster.MigrationStatus, rebalance bool) int {
	if r.Pending > 0 || rebalance && r.Rebalance {
		return 0
	}
	return idle + 1
}

// migrationsOver: nothing to wait for, and every migration counted in the
// total finished, or nothing was pending for migrateSettlePolls polls.
func migrationsOver(st progressStats, idle int) bool {
	return idle > 0 && (st.done >= st.total || idle >= migrateSettlePolls)
}

// pendingText says what is left when the wait stops early.
func pendingText(r cluster.MigrationStatus) string {
	set := new(slots.Set)
	for _, s := range r.Slots {
		set.Add(s)
	}
	which := ""
	if set.Len() > 0 {
		which = " (slots " + rangeList(set.Ranges(), 8) + ")"
	}
	return fmt.Sprintf("%d pending at the last poll%s; the migrations go on in the cluster", r.Pending, which)
}

// rangeList renders at most most ranges, then how many more there are.
func rangeList(ranges []slots.Range, most int) string {
	if len(ranges) == 0 {
		return "-"
	}
	parts := make([]string, 0, min(len(ranges), most)+1)
	for i, r := range ranges {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(ranges)-most))
			break
		}
		parts = append(parts, r.String())
	}
	return strings.Join(parts, ", ")
}
