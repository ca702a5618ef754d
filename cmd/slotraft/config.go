package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/cluster/server"
	"github.com/slotraft/slotraft/cluster/transport"
)

// defaultRaftTimeout is the heartbeat and election timeout of every Raft
// group. hashicorp/raft's default (1 s) put failover after a kill -9 at
// 1.5-3 s; 400 ms brings it under 1 s (docs/benchmarks.md) while a leader
// still sends a heartbeat every 40 ms (timeout/10), so a busy node on a
// loaded machine has ten chances before a follower gives up on it. The
// leader's lease (step down without a quorum's contact) is as long: it is
// only that check here (reads are confirmed by a heartbeat round, never
// by the lease), and half of it deposed leaders under slot migrations on
// a loaded 2-core machine.
const defaultRaftTimeout = 400 * time.Millisecond

// minRaftTimeout: below this, a GC pause or a slow fsync on a small
// machine deposes leaders.
const minRaftTimeout = 100 * time.Millisecond

// busPortOffset is the distance between a node's client port and its
// cluster-bus port when the bus address is not given, as in Redis Cluster.
const busPortOffset = 10000

const serverUsage = `usage: slotraft server [flags]

Runs one slotraft node. How it finds its cluster:
  --peers id=addr,...   static: every node is given the same list and bootstraps with it
  --bootstrap           a new cluster of this node alone, which other nodes --join
  --bootstrap-expect N  with --join: once N nodes see each other, they create the cluster
  --join host:port,...  wait to be added to the cluster of the running nodes at these bus
                        addresses (give this node's own --advertise / --bus-advertise)
  --meet                as a Redis Cluster node: alone, no slots, until CLUSTER MEET
                        (redis-cli --cluster create | add-node forms the cluster)
  none of these         a single-node cluster, which other nodes may --join

flags:
`

// serverFlags holds the raw values of `slotraft server`'s flags.
type serverFlags struct {
	id              string
	bind            string
	advertise       string
	busBind         string
	busAdvertise    string
	peers           string
	join            string
	bootstrap       bool
	bootstrapExpect int
	meet            bool
	deadAfter       time.Duration
	raftTimeout     time.Duration
	dataDir         string
	groups          int
	groupsPerNode   int
	replicas        int
	logStore        string
	logLevel        string
	logFormat       string
	pprof           string
	http            string
	httpPprof       bool
	config          string
	secretFile      string
	busTLSCert      string
	busTLSKey       string
	busTLSCA        string
	protectedMode   string       // "" keeps the config file's (or the default, yes)
	sentinel        sentinelOpts // --sentinel-* (sentinel.go)
	proxy           proxyOpts    // --proxy-* (proxy.go)
}

// newServerFlagSet declares the server flags on a fresh FlagSet.
func newServerFlagSet(out io.Writer) (*flag.FlagSet, *serverFlags) {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(out)
	f := &serverFlags{}
	fs.StringVar(&f.id, "id", "", "stable node id (required), e.g. node1")
	fs.StringVar(&f.bind, "bind", "127.0.0.1:7001", "client listen address host:port")
	fs.StringVar(&f.advertise, "advertise", "", "client address other nodes and clients use (default: this node's --peers entry, else --bind)")
	fs.StringVar(&f.busBind, "bus-bind", "", "cluster-bus listen address (default: --bind host, client port + 10000)")
	fs.StringVar(&f.busAdvertise, "bus-advertise", "", "cluster-bus address other nodes dial (default: advertised host, client port + 10000)")
	fs.StringVar(&f.peers, "peers", "", "static cluster: every node, self included, same order everywhere: id=host:port[@bushost:busport],...")
	fs.StringVar(&f.join, "join", "", "bus addresses host:port[,host:port...] of running nodes (DNS names allowed): wait to be added to their cluster")
	fs.BoolVar(&f.bootstrap, "bootstrap", false, "create a new cluster of this node alone, which others --join (even with --join set; never repeated once the data dir has state)")
	fs.BoolVar(&f.meet, "meet", false, "start as a Redis Cluster node does: alone and without slots until CLUSTER MEET joins it to another node (redis-cli --cluster create, add-node); excludes the other start modes")
	fs.IntVar(&f.bootstrapExpect, "bootstrap-expect", 0, "wait until gossip (through --join) sees N nodes; the one with the smallest id then creates the cluster of those N")
	fs.DurationVar(&f.deadAfter, "dead-after", 30*time.Second, "how long a node may be unreachable before its replicas are replaced and it is removed from the cluster map")
	fs.DurationVar(&f.raftTimeout, "raft-timeout", defaultRaftTimeout, "Raft heartbeat and election timeout: a follower that has not heard from its leader for this long (randomised up to twice) starts an election; a leader that has not heard from a quorum for this long steps down")
	fs.StringVar(&f.dataDir, "data-dir", "", "directory for Raft logs and snapshots (default: data/<id>)")
	fs.IntVar(&f.groups, "groups", 3, "number of slot groups (Raft groups)")
	fs.IntVar(&f.groupsPerNode, "groups-per-node", 1, "as nodes join, create slot groups up to this many per node and spread the slots over them, online (0: keep the number of groups)")
	fs.IntVar(&f.replicas, "replicas", 3, "replicas per slot group (not capped at the number of nodes: groups get replicas as nodes join)")
	fs.StringVar(&f.logStore, "log-store", cluster.LogStorePebble, "where groups created from now on keep their Raft log: pebble (one store for the node, one fsync for many groups), bolt (raft-boltdb per group) or wal (raft-wal per group); existing groups keep theirs")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.StringVar(&f.config, "config", "", "config file in Redis's syntax: Redis's parameters (as CONFIG SET), bind/port for the client address, and these flags by name; flags on the command line win; CONFIG REWRITE writes it back")
	fs.StringVar(&f.secretFile, "cluster-secret-file", "", "file holding the cluster secret (at least 32 bytes; surrounding whitespace ignored): every bus connection must prove it and is then encrypted; the same file on every node (default: none, and anyone who reaches the bus port can join)")
	fs.StringVar(&f.busTLSCert, "bus-tls-cert", "", "PEM certificate (chain) of this node for the cluster bus, signed by --bus-tls-ca, naming this node's --id as its Common Name or a DNS name; with --bus-tls-key and --bus-tls-ca, every bus connection is TLS between such certificates")
	fs.StringVar(&f.busTLSKey, "bus-tls-key", "", "PEM private key of --bus-tls-cert")
	fs.StringVar(&f.busTLSCA, "bus-tls-ca", "", "PEM certificate(s) of the CA that signs every node's --bus-tls-cert")
	fs.StringVar(&f.pprof, "pprof", "", "serve Go's profiles (/debug/pprof/) on this host:port (off by default; keep it on loopback)")
	fs.StringVar(&f.http, "http", "", "serve HTTP for operators on this host:port: /metrics (Prometheus), /healthz, /readyz, the dashboard /ui/ (off by default)")
	fs.StringVar(&f.protectedMode, "protected-mode", "", "yes or no: Redis's protected-mode (default yes, as the config file may set it): with no password, refuse clients that are not on loopback")
	fs.StringVar(&f.proxy.bind, "proxy-bind", "", "serve clients that do not speak Redis Cluster on this host:port: proxy mode, every command forwarded to its slot's leader (docs/proxy.md; off by default)")
	fs.StringVar(&f.proxy.advertise, "proxy-advertise", "", "the proxy's address other nodes announce (a Sentinel facade names it as the master) and clients dial (default: --proxy-bind, with the advertised host when it binds every interface)")
	fs.StringVar(&f.sentinel.bind, "sentinel-bind", "", "also serve Redis Sentinel's protocol on this host:port, so Sentinel clients find the master here (off by default; docs/sentinel.md)")
	fs.StringVar(&f.sentinel.advertise, "sentinel-advertise", "", "the Sentinel facade's address other nodes list and clients dial (default: --sentinel-bind, with the advertised host when it binds every interface)")
	fs.StringVar(&f.sentinel.masters, "sentinel-master-name", server.DefaultSentinelMaster, "the master name(s), comma-separated, the Sentinel facade answers for: each is this whole cluster")
	fs.BoolVar(&f.httpPprof, "http-pprof", false, "also serve Go's profiles (/debug/pprof/) on --http (off by default: a profile shows what the process does)")
	fs.Usage = func() {
		fmt.Fprint(out, serverUsage)
		fs.PrintDefaults()
	}
	return fs, f
}

// parsePeers parses "id=host:port[@bushost:busport],...". A missing bus
// address is derived from the client address (port + 10000).
func parsePeers(s string) ([]cluster.Peer, error) {
	var peers []cluster.Peer
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, addrs, ok := strings.Cut(item, "=")
		if !ok || id == "" || addrs == "" {
			return nil, fmt.Errorf("peer %q: want id=host:port[@bushost:busport]", item)
		}
		if seen[id] {
			return nil, fmt.Errorf("peer %q: duplicate id %q", item, id)
		}
		seen[id] = true
		client, bus, hasBus := strings.Cut(addrs, "@")
		if err := checkHostPort(client); err != nil {
			return nil, fmt.Errorf("peer %q: client address: %w", item, err)
		}
		if !hasBus {
			var err error
			if bus, err = offsetPort(client, busPortOffset); err != nil {
				return nil, fmt.Errorf("peer %q: %w", item, err)
			}
		} else if err := checkHostPort(bus); err != nil {
			return nil, fmt.Errorf("peer %q: bus address: %w", item, err)
		}
		peers = append(peers, cluster.Peer{ID: id, ClientAddr: client, BusAddr: bus})
	}
	return peers, nil
}

// checkHostPort accepts host:port with a non-empty host and a port in 1..65535.
func checkHostPort(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("%q: missing host", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%q: bad port", addr)
	}
	return nil
}

// offsetPort returns addr with its port moved by delta.
func offsetPort(addr string, delta int) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p+delta > 65535 {
		return "", fmt.Errorf("address %q: port + %d is not a valid port", addr, delta)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+delta)), nil
}

// isUnspecified reports whether addr listens on every interface (0.0.0.0, ::
// or an empty host), which other nodes cannot dial.
func isUnspecified(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// clusterConfig turns the flags into a cluster.Config (Logger left nil).
func (f *serverFlags) clusterConfig() (cluster.Config, error) {
	var cfg cluster.Config
	if f.id == "" {
		return cfg, errors.New("--id is required")
	}
	if strings.ContainsAny(f.id, "=,@ ") {
		return cfg, fmt.Errorf("--id %q: must not contain '=', ',', '@' or spaces", f.id)
	}
	if err := checkPort(f.bind); err != nil {
		return cfg, fmt.Errorf("--bind: %w", err)
	}
	if f.groups < 1 {
		return cfg, fmt.Errorf("--groups %d: want at least 1", f.groups)
	}
	if f.replicas < 1 {
		return cfg, fmt.Errorf("--replicas %d: want at least 1", f.replicas)
	}
	peers, err := parsePeers(f.peers)
	if err != nil {
		return cfg, fmt.Errorf("--peers: %w", err)
	}
	join, err := parseJoin(f.join)
	if err != nil {
		return cfg, fmt.Errorf("--join: %w", err)
	}
	if err := f.checkStartMode(len(peers) > 0, len(join) > 0); err != nil {
		return cfg, err
	}
	if f.deadAfter <= 0 {
		return cfg, fmt.Errorf("--dead-after %v: want a positive duration", f.deadAfter)
	}
	if f.raftTimeout < minRaftTimeout {
		return cfg, fmt.Errorf("--raft-timeout %v: want at least %v", f.raftTimeout, minRaftTimeout)
	}
	if f.groupsPerNode < 0 {
		return cfg, fmt.Errorf("--groups-per-node %d: want 0 or more", f.groupsPerNode)
	}
	switch f.logStore {
	case cluster.LogStorePebble, cluster.LogStoreBolt, cluster.LogStoreWAL:
	default:
		return cfg, fmt.Errorf("--log-store %q: want pebble, bolt or wal", f.logStore)
	}
	self, err := f.selfPeer(peers)
	if err != nil {
		return cfg, err
	}
	if len(peers) == 0 {
		peers = []cluster.Peer{self}
	}
	busBind := f.busBind
	if busBind == "" {
		if busBind, err = offsetPort(f.bind, busPortOffset); err != nil {
			return cfg, fmt.Errorf("--bus-bind default: %w", err)
		}
	} else if err := checkPort(busBind); err != nil {
		return cfg, fmt.Errorf("--bus-bind: %w", err)
	}
	dataDir := f.dataDir
	if dataDir == "" {
		dataDir = filepath.Join("data", f.id)
	}
	var secret transport.Secret
	if f.secretFile != "" {
		if secret, err = readClusterSecret(f.secretFile); err != nil {
			return cfg, err
		}
	}
	busTLS, err := f.loadBusTLS()
	if err != nil {
		return cfg, err
	}
	return cluster.Config{
		ID:              f.id,
		ClientBind:      f.bind,
		ClientAdvertise: self.ClientAddr,
		BusBind:         busBind,
		BusAdvertise:    self.BusAddr,
		DataDir:         dataDir,
		LogStore:        f.logStore,
		Peers:           peers,
		Join:            join,
		BootstrapExpect: f.bootstrapExpect,
		Bootstrap:       f.bootstrap,
		Meet:            f.meet,
		Groups:          f.groups,
		GroupsPerNode:   f.groupsPerNode,
		Replicas:        f.replicas,
		DeadAfter:       f.deadAfter,
		RaftHeartbeat:   f.raftTimeout,
		RaftElection:    f.raftTimeout,
		RaftLeaderLease: f.raftTimeout,
		ClusterSecret:   secret,
		BusTLS:          busTLS,
	}, nil
}

// checkStartMode refuses combinations of the start-mode flags that
// contradict each other: a static --peers cluster bootstraps with its list
// and needs neither --join nor --bootstrap[-expect].
func (f *serverFlags) checkStartMode(hasPeers, hasJoin bool) error {
	switch {
	case f.bootstrapExpect < 0:
		return fmt.Errorf("--bootstrap-expect %d: want a positive number of nodes", f.bootstrapExpect)
	case f.bootstrap && hasPeers:
		return errors.New("--bootstrap creates a cluster of this node alone: it excludes --peers (a static cluster bootstraps with its peer list)")
	case f.bootstrapExpect > 0 && hasPeers:
		return errors.New("--bootstrap-expect excludes --peers (a static cluster bootstraps with its peer list)")
	case f.bootstrapExpect > 0 && f.bootstrap:
		return errors.New("--bootstrap-expect excludes --bootstrap: give one start mode")
	case hasJoin && hasPeers:
		return errors.New("--join excludes --peers: a static cluster needs no join (use one or the other)")
	case f.meet && (hasPeers || hasJoin || f.bootstrap || f.bootstrapExpect > 0):
		return errors.New("--meet excludes --peers, --join, --bootstrap and --bootstrap-expect: a node started with --meet waits for CLUSTER MEET")
	}
	return nil
}

// parseJoin parses the --join seeds "host:port[,host:port...]": bus
// addresses of running nodes. Hosts may be DNS names, resolved at each try.
func parseJoin(s string) ([]string, error) {
	var seeds []string
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if err := checkHostPort(item); err != nil {
			return nil, fmt.Errorf("seed %w", err)
		}
		if !seen[item] {
			seen[item] = true
			seeds = append(seeds, item)
		}
	}
	return seeds, nil
}

// selfPeer works out this node's advertised addresses from the flags and its
// own --peers entry, and checks that they agree.
func (f *serverFlags) selfPeer(peers []cluster.Peer) (cluster.Peer, error) {
	var entry *cluster.Peer
	for i := range peers {
		if peers[i].ID == f.id {
			entry = &peers[i]
		}
	}
	if len(peers) > 0 && entry == nil {
		return cluster.Peer{}, fmt.Errorf("--peers does not list this node's --id %q", f.id)
	}
	self := cluster.Peer{ID: f.id, ClientAddr: f.advertise, BusAddr: f.busAdvertise}
	if self.ClientAddr == "" {
		if entry != nil {
			self.ClientAddr = entry.ClientAddr
		} else {
			self.ClientAddr = f.bind
		}
	}
	if err := checkHostPort(self.ClientAddr); err != nil {
		return self, fmt.Errorf("--advertise: %w", err)
	}
	if isUnspecified(self.ClientAddr) {
		return self, fmt.Errorf("advertised address %q is not dialable: set --advertise", self.ClientAddr)
	}
	if self.BusAddr == "" {
		if entry != nil {
			self.BusAddr = entry.BusAddr
		} else {
			bus, err := offsetPort(self.ClientAddr, busPortOffset)
			if err != nil {
				return self, fmt.Errorf("--bus-advertise default: %w", err)
			}
			self.BusAddr = bus
		}
	}
	if err := checkHostPort(self.BusAddr); err != nil {
		return self, fmt.Errorf("--bus-advertise: %w", err)
	}
	if entry != nil && (entry.ClientAddr != self.ClientAddr || entry.BusAddr != self.BusAddr) {
		return self, fmt.Errorf("this node's --peers entry %s@%s disagrees with its advertised addresses %s@%s",
			entry.ClientAddr, entry.BusAddr, self.ClientAddr, self.BusAddr)
	}
	return self, nil
}

// checkPort accepts a listen address host:port whose host may be empty.
func checkPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%q: bad port", addr)
	}
	return nil
}
