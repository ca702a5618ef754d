package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"

	"github.com/redis/go-redis/v9"
)

// errUnhealthy makes `slotraft admin health` exit with status 1 after it
// printed why.
var errUnhealthy = fmt.Errorf("unhealthy: %w", errReported)

// defaultAdminAddr is the client address admin commands use without
// --addr: the server's own --bind given through the environment (as in
// the Docker image and Kubernetes manifests, where a HEALTHCHECK or a
// probe runs beside the server), with loopback for an unspecified host.
func defaultAdminAddr(bind string) string {
	if bind == "" {
		return "127.0.0.1:7001"
	}
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return bind // the command's dial reports it
	}
	if isUnspecified(bind) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// adminHealth is `slotraft admin health [--ready]`: the node answers PING;
// with --ready, its map also covers every slot with a reachable leader
// (CLUSTER INFO's cluster_state:ok).
func adminHealth(ctx context.Context, rdb *redis.Client, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ready := fs.Bool("ready", false, "also require cluster_state:ok")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, adminUsage)
		return errUsage
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		fmt.Fprintf(stdout, "unhealthy: PING: %v\n", err)
		return errUnhealthy
	}
	if *ready {
		info, err := rdb.ClusterInfo(ctx).Result()
		if err != nil {
			fmt.Fprintf(stdout, "not ready: CLUSTER INFO: %v\n", err)
			return errUnhealthy
		}
		if state := infoFields(info)["cluster_state"]; state != "ok" {
			fmt.Fprintf(stdout, "not ready: cluster_state:%s\n", state)
			return errUnhealthy
		}
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
