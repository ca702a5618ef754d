package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotraft/slotraft/cluster"
)

const adminUsage = `usage: slotraft admin [--addr host:port] [--timeout d] [--user u] [--pass p] <command>

--addr defaults to the node of this host or container: $SLOTRAFT_BIND (the server's
environment; an unspecified host such as 0.0.0.0 becomes 127.0.0.1), else 127.0.0.1:7001.
--user and --pass authenticate as redis-cli's do (the password defaults to $REDISCLI_AUTH);
the user needs the admin commands (SLOTRAFT, CLUSTER INFO, PING).

commands:
  health [--ready]  exit 0 when the node answers PING (with --ready: and its
                    CLUSTER INFO says cluster_state:ok), else print why and exit 1;
                    the Docker image's HEALTHCHECK
  backup FILE       copy every slot group, each at one point of its log (a cut every
                    replica agrees on), key by key while writes go on, into FILE: an
                    RDB file (redis-server loads it too) that records the cuts
  restore FILE      load a backup into a cluster that holds no keys
  export-rdb FILE   write every key of the cluster (DUMP, PTTL, SCANned on every
                    master) as an RDB file redis-server 7.0+ loads; a key written
                    during the export may be in it or not (no point-in-time cut)
  import-rdb [--replace] FILE
                    RESTORE the keys of a redis-server RDB file (database 0, with
                    their TTLs; expired ones skipped) and its function libraries
                    into the cluster; existing keys are kept unless --replace
  status [--json]   map epoch, meta leader, nodes, slot groups, leaders, replicas,
                    lag and slot ranges
  transfer-leader <group> <node-id>
                    make <node-id> the preferred leader of a slot group (kept in the
                    group's log, so leader spreading keeps it there) and wait until it leads
  remove-node <node-id>
                    take a node out of the cluster: a live one is drained first (its
                    replicas and leaderships move to other nodes, then it leaves the
                    map); one gone for good leaves the map at once, instead of waiting
                    --dead-after; its replicas are replaced on other nodes
  leave             make the node at --addr leave as on SIGTERM: it hands off its
                    leaderships, waits until no group needs it for a quorum, exits
  move-slots [--progress auto|bar|plain] <group> <slot|start-end>...
                    move slots to a slot group online, then follow the migrations
                    until none is pending: a bar on a terminal, else a line every 2s
  rebalance [--progress auto|bar|plain]
                    spread the slots evenly over the groups and follow the
                    migrations until the rebalance is over
                    (--timeout bounds each request; given, it also bounds the wait
                    of move-slots and rebalance; Ctrl-C stops the wait, not the moves)
`

// runAdmin runs an administration command against the node at --addr.
func runAdmin(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage) }
	addr := fs.String("addr", defaultAdminAddr(os.Getenv(envName("bind"))), "client address (host:port) of any node")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the node")
	// As redis-cli: --user and --pass, the password also from REDISCLI_AUTH
	// (so it stays out of the process list).
	user := fs.String("user", "", "ACL user to authenticate as (default: the default user)")
	pass := fs.String("pass", os.Getenv("REDISCLI_AUTH"), "password (default: $REDISCLI_AUTH)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn := adminConn{addr: *addr, timeout: *timeout, user: *user, pass: *pass}
	rdb := conn.client(*addr)
	defer rdb.Close()
	switch fs.Arg(0) {
	case "health":
		return adminHealth(ctx, rdb, fs.Args()[1:], stdout, stderr)
	case "export-rdb": // as long as it takes: --timeout bounds each request
		return adminExportRDB(context.Background(), conn, fs.Args()[1:], stdout, stderr)
	case "import-rdb":
		return adminImportRDB(context.Background(), conn, fs.Args()[1:], stdout, stderr)
	case "backup":
		return adminBackup(conn, fs.Args()[1:], stdout, stderr)
	case "restore":
		return adminRestore(context.Background(), conn, fs.Args()[1:], stdout, stderr)
	case "status":
		return adminStatus(ctx, rdb, fs.Args()[1:], stdout, stderr)
	case "transfer-leader":
		if fs.NArg() != 3 {
			fmt.Fprint(stderr, adminUsage)
			return errUsage
		}
		if err := rdb.Do(ctx, "SLOTRAFT", "TRANSFER-LEADER", fs.Arg(1), fs.Arg(2)).Err(); err != nil {
			return fmt.Errorf("transfer-leader: %w", err)
		}
		fmt.Fprintf(stdout, "group %s is led by %s\n", fs.Arg(1), fs.Arg(2))
		return nil
	case "remove-node":
		if fs.NArg() != 2 {
			fmt.Fprint(stderr, adminUsage)
			return errUsage
		}
		reply, err := rdb.Do(ctx, "SLOTRAFT", "REMOVE-NODE", fs.Arg(1)).Text()
		if err != nil {
			return fmt.Errorf("remove-node %s: %w", fs.Arg(1), err)
		}
		if reply == "DRAINING" {
			fmt.Fprintf(stdout, "node %s is draining: its replicas and leaderships move to other nodes, then it is removed from the cluster map\n", fs.Arg(1))
			return nil
		}
		fmt.Fprintf(stdout, "node %s is removed from the cluster map\n", fs.Arg(1))
		return nil
	case "move-slots", "rebalance":
		return adminMigrate(ctx, rdb, fs, stdout, stderr)
	case "leave":
		if err := rdb.Do(ctx, "SLOTRAFT", "LEAVE").Err(); err != nil {
			return fmt.Errorf("leave %s: %w", *addr, err)
		}
		fmt.Fprintf(stdout, "%s is leaving\n", *addr)
		return nil
	default:
		fmt.Fprintf(stderr, "slotraft admin: unknown command %q\n\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
}

func adminStatus(ctx context.Context, rdb *redis.Client, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the status as JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	raw, err := rdb.Do(ctx, "SLOTRAFT", "STATUS").Text()
	if err != nil {
		return fmt.Errorf("status from %s: %w", rdb.Options().Addr, err)
	}
	if *asJSON {
		_, err := fmt.Fprintln(stdout, raw)
		return err
	}
	var st cluster.ClusterStatus
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return fmt.Errorf("status from %s: %w", rdb.Options().Addr, err)
	}
	return printStatus(stdout, st)
}

// printStatus renders the status as a header line (the asking node, the
// cluster map's epoch and the meta group's leader) and two tables: nodes,
// then groups.
func printStatus(w io.Writer, st cluster.ClusterStatus) error {
	metaLeader := st.MetaLeader
	if metaLeader == "" {
		metaLeader = "-"
	}
	fmt.Fprintf(w, "self %s  epoch %d  meta leader %s\n\n", st.Self, st.Epoch, metaLeader)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tCLIENT\tBUS\tSTATE\tGOSSIP\tLEADERS\tREPLICAS")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", n.ID, n.ClientAddr, n.BusAddr, nodeState(n), n.Gossip, n.Leaders, n.Replicas)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "GROUP\tSLOTS\tLEADER\tREPLICAS (state, lag)")
	for _, g := range st.Groups {
		leader := g.Leader
		if leader == "" {
			leader = "-"
		}
		reps := make([]string, len(g.Replicas))
		for i, r := range g.Replicas {
			reps[i] = fmt.Sprintf("%s %s %d", r.Node, strings.ToLower(r.State), r.Lag)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", g.ID, strings.Join(g.Slots, ","), leader, strings.Join(reps, ", "))
	}
	return tw.Flush()
}

func nodeState(n cluster.NodeStatus) string {
	switch {
	case !n.Reachable:
		return "unreachable"
	case n.Leaving:
		return "leaving"
	default:
		return "up"
	}
}
