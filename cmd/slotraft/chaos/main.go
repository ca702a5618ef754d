package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Exit statuses of `slotraft chaos run`.
const (
	ExitOK          = 0   // no anomaly
	ExitAnomaly     = 1   // at least one anomaly
	ExitUsage       = 2   // bad command line or input
	ExitFailed      = 3   // the run could not be carried out, or a check was inconclusive
	ExitInterrupted = 130 // SIGINT or SIGTERM
)

const usage = `usage: slotraft chaos <command> [flags]

commands:
  run    start a cluster of server processes, inject faults while workloads
         run, check the history (slotraft chaos run -h for flags)
  table  FILE.json...: one row per summary of chaos run --json, and totals

See docs/chaos.md.
`

// Main runs `slotraft chaos` with args (after "chaos") and returns the
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "run":
		return runMain(args[1:], stdout, stderr)
	case "table":
		ok, err := runTable(args[1:], stdout)
		switch {
		case errors.Is(err, errUsage):
			fmt.Fprintf(stderr, "slotraft chaos table: %v\n", err)
			return ExitUsage
		case err != nil:
			fmt.Fprintf(stderr, "slotraft chaos table: %v\n", err)
			return ExitFailed
		case !ok:
			return ExitAnomaly
		}
		return ExitOK
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "slotraft chaos: unknown command %q\n\n%s", args[0], usage)
	return ExitUsage
}

// runMain is `chaos run`: flags, signals, the run, its summary and report.
func runMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseRunFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.Is(err, errUsage):
		return ExitUsage
	case err != nil:
		fmt.Fprintf(stderr, "slotraft chaos run: %v\n", err)
		return ExitUsage
	}
	redis.SetLogger(quietLogger{})
	clean := &cleaner{}
	defer clean.run()
	ctx, stop := interruptible(clean, stderr)
	defer stop()
	s, err := Run(ctx, o, stderr, clean)
	if err != nil {
		clean.run()
		fmt.Fprintf(stderr, "slotraft chaos run: %v\n", err)
		switch {
		case errors.Is(err, errInterrupted):
			return ExitInterrupted
		case errors.Is(err, errBadInput):
			return ExitUsage
		}
		return ExitFailed
	}
	if o.Report != "" {
		if err := writeReport(o.Report, s); err != nil {
			fmt.Fprintf(stderr, "slotraft chaos run: report: %v\n", err)
			s.Report = ""
		}
	}
	if o.JSON {
		if err := s.writeJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "slotraft chaos run: %v\n", err)
		}
		s.writeText(stderr)
	} else {
		s.writeText(stdout)
	}
	return exitStatus(s)
}

func exitStatus(s *Summary) int {
	switch s.Result {
	case "ok":
		return ExitOK
	case "anomalies":
		return ExitAnomaly
	}
	return ExitFailed
}

// interruptible is a context that ends at the first SIGINT or SIGTERM; a
// second one cleans up at once and exits, for a run stuck somewhere.
func interruptible(clean *cleaner, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			fmt.Fprintf(stderr, "\nslotraft chaos run: %v: stopping (again to stop at once)\n", s)
			cancel()
		case <-done:
			return
		}
		select {
		case <-sigs:
			clean.run()
			os.Exit(ExitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
