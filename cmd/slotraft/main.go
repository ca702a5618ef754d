// Command slotraft runs a node of a slotraft cluster (`slotraft server`) or a
// local three-process cluster for development (`slotraft dev`).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/slotraft/slotraft/cmd/slotraft/chaos"
)

const usage = `slotraft: a Redis-Cluster-compatible key-value store replicated with Raft.

usage:
  slotraft server [flags]   run one node (slotraft server -h for flags)
  slotraft dev [flags]      run a local cluster of separate server processes
  slotraft bench <workload> transactions, pub/sub and failover benchmarks (slotraft bench help)
  slotraft admin <command>  administer a running cluster (slotraft admin -h)
  slotraft chaos run        faults on a cluster of real processes, and a checker (slotraft chaos -h)
  slotraft version          print the version
`

// version is set at build time with -ldflags "-X main.version=..." (the
// Makefile gives it `git describe`); a plain `go build` leaves "dev", and
// buildVersion then reads what Go recorded of the checkout.
var version = "dev"

// buildVersion is the version this binary reports: -X main.version, else
// the module version Go derived from the git checkout it was built in
// (v0.0.0-<time>-<commit>[+dirty]), else the commit, else "dev".
func buildVersion() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", ""
	for _, st := range bi.Settings {
		switch {
		case st.Key == "vcs.revision":
			rev = st.Value[:min(12, len(st.Value))]
		case st.Key == "vcs.modified" && st.Value == "true":
			dirty = "-dirty"
		}
	}
	if rev == "" {
		return version
	}
	return rev + dirty
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "chaos":
		return chaos.Main(args[1:], stdout, stderr)
	case "server":
		err = runServer(args[1:], stderr)
	case "dev":
		err = runDev(args[1:], stdout, stderr)
	case "bench":
		err = runBench(args[1:], stdout, stderr)
	case "admin":
		err = runAdmin(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintf(stdout, "slotraft %s\n", buildVersion())
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "slotraft: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errReported):
		return 1
	default:
		fmt.Fprintf(stderr, "slotraft %s: %v\n", args[0], err)
		return 1
	}
}

// errUsage marks a bad command line whose message was already printed.
var errUsage = errors.New("usage")

// errReported marks a failure whose message was already printed.
var errReported = errors.New("reported")
