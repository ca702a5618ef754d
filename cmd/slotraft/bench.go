package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// `slotraft bench` holds the workloads redis-benchmark cannot drive:
// MULTI/EXEC transactions, pub/sub fan-out with delivery latency, the
// time a cluster takes to accept writes again after a node is killed, and
// the memory a key costs.
// scripts/bench.sh and scripts/bench-failover.sh run them against slotraft
// and redis-server side by side.

const benchUsage = `usage: slotraft bench <workload> [flags]

workloads:
  tx         MULTI/EXEC transactions of 5 writes on one hash tag per client
  pubsub     PUBLISH to 1, 10, 100 subscribers spread over the nodes; delivery rate and latency
  failover   steady writes to one master's slots, kill -9 that master, time until writes succeed again
  reshard    a 3-node cluster of its own under a fixed-rate client: move a third of the slots, keys/s and p99
  memory     load N string keys; each node's heap (after a full GC) and RSS per key
  eviction   a cache-aside Zipf trace (GET, SET on a miss) under maxmemory; the hit rate

slotraft bench <workload> -h lists a workload's flags. With --csv the result
rows use redis-benchmark's --csv columns (then count and errors), so one
script can print both tools' results in one table.
`

// runBench implements `slotraft bench`.
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return errUsage
	}
	// Every failure is counted and reported by the workload; go-redis's
	// own log line per failed dial would drown the report.
	redis.SetLogger(quietLogger{})
	switch args[0] {
	case "tx":
		return runBenchTx(args[1:], stdout, stderr)
	case "pubsub":
		return runBenchPubSub(args[1:], stdout, stderr)
	case "failover":
		return runBenchFailover(args[1:], stdout, stderr)
	case "reshard":
		return runBenchReshard(args[1:], stdout, stderr)
	case "memory":
		return runBenchMemory(args[1:], stdout, stderr)
	case "eviction":
		return runBenchEviction(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, benchUsage)
		return nil
	default:
		fmt.Fprintf(stderr, "slotraft bench: unknown workload %q\n\n%s", args[0], benchUsage)
		return errUsage
	}
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// benchCommon holds the flags every workload has.
type benchCommon struct {
	addrs   []string
	timeout time.Duration
	csv     bool
}

func (c *benchCommon) register(fs *flag.FlagSet, timeout time.Duration) {
	fs.Func("addrs", "comma-separated host:port of the nodes (required)", func(s string) error {
		c.addrs = nil
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				c.addrs = append(c.addrs, a)
			}
		}
		if len(c.addrs) == 0 {
			return errors.New("no address")
		}
		return nil
	})
	fs.DurationVar(&c.timeout, "timeout", timeout, "upper bound on the whole run")
	fs.BoolVar(&c.csv, "csv", false, "print CSV rows (redis-benchmark's --csv columns, then count and errors)")
}

// parseBenchFlags parses a workload's command line; a bad one prints its
// usage and returns errUsage.
func parseBenchFlags(fs *flag.FlagSet, c *benchCommon, args []string, stderr io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "slotraft bench %s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return errUsage
	}
	if len(c.addrs) == 0 {
		fmt.Fprintf(stderr, "slotraft bench %s: --addrs is required\n", fs.Name())
		return errUsage
	}
	if c.timeout <= 0 {
		fmt.Fprintf(stderr, "slotraft bench %s: --timeout must be positive\n", fs.Name())
		return errUsage
	}
	return nil
}

func newBenchFlagSet(name, what string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: slotraft bench %s [flags]\n\n%s\n\nflags:\n", name, what)
		fs.PrintDefaults()
	}
	return fs
}

// benchRunID makes the keys and channels of one run distinct from those of
// any earlier run against the same servers.
func benchRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// latencySummary condenses one workload's latency samples.
type latencySummary struct {
	count                        int           // successful operations
	errors                       int           // failed (or, for pub/sub, lost) operations
	elapsed                      time.Duration // wall time the rate is computed over
	min, avg, p50, p95, p99, max time.Duration
}

// summarize sorts samples in place and takes nearest-rank percentiles.
func summarize(samples []time.Duration, errors int, elapsed time.Duration) latencySummary {
	s := latencySummary{count: len(samples), errors: errors, elapsed: elapsed}
	if len(samples) == 0 {
		return s
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	s.min, s.max = samples[0], samples[len(samples)-1]
	s.avg = sum / time.Duration(len(samples))
	s.p50, s.p95, s.p99 = percentile(samples, 50), percentile(samples, 95), percentile(samples, 99)
	return s
}

// percentile returns the nearest-rank p-th percentile of sorted samples.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// rate is operations per second over the elapsed time.
func (s latencySummary) rate() float64 {
	if s.elapsed <= 0 {
		return 0
	}
	return float64(s.count) / s.elapsed.Seconds()
}

// benchCSVHeader is redis-benchmark's --csv header plus count and errors.
const benchCSVHeader = `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms","count","errors"`

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 3, 64) }

// writeSummary prints one result as a CSV row or as a line for people.
func writeSummary(w io.Writer, csv bool, test string, s latencySummary) {
	if csv {
		fmt.Fprintf(w, "%q,\"%.2f\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%d\",\"%d\"\n",
			test, s.rate(), ms(s.avg), ms(s.min), ms(s.p50), ms(s.p95), ms(s.p99), ms(s.max), s.count, s.errors)
		return
	}
	fmt.Fprintf(w, "%-12s %10.0f/s  p50 %8s ms  p99 %8s ms  max %8s ms  (%d ok, %d errors in %.2fs)\n",
		test, s.rate(), ms(s.p50), ms(s.p99), ms(s.max), s.count, s.errors, s.elapsed.Seconds())
}

// writeNotAvailable prints a row for a workload the target does not support.
func writeNotAvailable(w io.Writer, csv bool, test, why string) {
	if csv {
		fmt.Fprintf(w, "%q,\"n/a\",\"n/a\",\"n/a\",\"n/a\",\"n/a\",\"n/a\",\"n/a\",\"0\",\"0\"\n", test)
		return
	}
	fmt.Fprintf(w, "%-12s n/a (%s)\n", test, why)
}
