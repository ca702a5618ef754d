package nft

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Partitions are nftables rules in a table of the process's own,
// `inet slotraft_chaos_<pid>`, with one chain on the output hook that drops
// packets between node addresses. Every node binds its own loopback address
// for its bus port (the chaos run: its client port too) and dials other
// nodes from it (transport's Mux does), so dropping by address pair cuts
// Raft, gossip and RPCs between two nodes, while clients, which connect
// from 127.0.0.1, still reach every node. Healing flushes the chain; the
// owner deletes the table at the end, on error and on Ctrl-C. No other
// table is ever touched.

// nftTimeout bounds one nft invocation.
const nftTimeout = 10 * time.Second

// nftChain is the name of the table's one chain.
const nftChain = "cut"

// Table is a process's packet filter table.
type Table struct {
	name string
}

// New creates the process's table and chain; it fails, with the reason,
// when nft is missing or not allowed (it needs root or CAP_NET_ADMIN).
func New(ctx context.Context) (*Table, error) {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil, fmt.Errorf("partitions need nftables' nft command: %w", err)
	}
	t := &Table{name: "slotraft_chaos_" + strconv.Itoa(os.Getpid())}
	script := fmt.Sprintf("add table inet %s\nadd chain inet %s %s { type filter hook output priority 0; policy accept; }\n",
		t.name, t.name, nftChain)
	if err := nftRun(ctx, script); err != nil {
		_ = t.Delete(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("partitions: create nftables table %s (needs root or CAP_NET_ADMIN): %w", t.name, err)
	}
	return t, nil
}

// Name is the table's name, for messages.
func (t *Table) Name() string { return t.name }

// Cut replaces the chain's rules by drops of every packet between the
// addresses of each pair, both ways.
func (t *Table) Cut(ctx context.Context, pairs [][2]string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "flush chain inet %s %s\n", t.name, nftChain)
	for _, r := range dropRules(pairs) {
		fmt.Fprintf(&b, "add rule inet %s %s %s\n", t.name, nftChain, r)
	}
	return nftRun(ctx, b.String())
}

// dropRules renders pairs as one rule per source address.
func dropRules(pairs [][2]string) []string {
	to := map[string][]string{}
	for _, p := range pairs {
		to[p[0]] = append(to[p[0]], p[1])
		to[p[1]] = append(to[p[1]], p[0])
	}
	srcs := make([]string, 0, len(to))
	for s := range to {
		srcs = append(srcs, s)
	}
	slices.Sort(srcs)
	rules := make([]string, 0, len(srcs))
	for _, s := range srcs {
		dsts := slices.Compact(slices.Sorted(slices.Values(to[s])))
		rules = append(rules, fmt.Sprintf("ip saddr %s ip daddr { %s } counter drop", s, strings.Join(dsts, ", ")))
	}
	return rules
}

// Heal removes every rule and returns how many packets they dropped.
func (t *Table) Heal(ctx context.Context) (int64, error) {
	dropped, err := t.dropped(ctx)
	if ferr := nftRun(ctx, fmt.Sprintf("flush chain inet %s %s\n", t.name, nftChain)); ferr != nil {
		return dropped, ferr
	}
	return dropped, err
}

// dropped sums the rules' packet counters.
func (t *Table) dropped(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, nftTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nft", "-j", "list", "chain", "inet", t.name, nftChain).Output()
	if err != nil {
		return 0, fmt.Errorf("nft list chain: %w", err)
	}
	return parseDropped(out)
}

// Delete removes the table; a table already gone is fine.
func (t *Table) Delete(ctx context.Context) error {
	err := nftRun(ctx, fmt.Sprintf("delete table inet %s\n", t.name))
	if err != nil && strings.Contains(err.Error(), "No such file or directory") {
		return nil
	}
	return err
}

// nftRun feeds script to `nft -f -`.
func nftRun(ctx context.Context, script string) error {
	ctx, cancel := context.WithTimeout(ctx, nftTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("nft -f: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// parseDropped reads `nft -j list chain` output and sums the packets of
// every rule's counter.
func parseDropped(b []byte) (int64, error) {
	var doc struct {
		Nftables []struct {
			Rule *struct {
				Expr []map[string]json.RawMessage `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return 0, fmt.Errorf("nft -j output: %w", err)
	}
	var sum int64
	for _, obj := range doc.Nftables {
		if obj.Rule == nil {
			continue
		}
		for _, e := range obj.Rule.Expr {
			raw, ok := e["counter"]
			if !ok {
				continue
			}
			var c struct {
				Packets int64 `json:"packets"`
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				return 0, fmt.Errorf("nft -j counter %s: %w", raw, err)
			}
			if c.Packets < 0 || sum+c.Packets < sum {
				return 0, errors.New("nft -j counter: packets out of range")
			}
			sum += c.Packets
		}
	}
	return sum, nil
}
