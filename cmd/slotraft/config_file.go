package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"

	"github.com/slotraft/slotraft/cluster/server"
)

// `slotraft server --config FILE`: a config file in Redis's syntax
// (cluster/server/config_file.go). Besides Redis's parameters it takes
// slotraft's own flags under their names (`data-dir /var/lib/slotraft`,
// `peers "n1=a:7001,n2=b:7001"`), except --bind: Redis's `bind` and
// `port` make slotraft's client listen address. A flag given on the
// command line wins over the file.

// errWrongArgs is Redis's text for a directive with the wrong number of
// arguments.
var errWrongArgs = errors.New("wrong number of arguments")

// readConfigFile reads f.config into the flags the command line left
// unset, and returns the file for the server.
func readConfigFile(fs *flag.FlagSet, f *serverFlags) (*server.ConfigFile, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true })
	file, err := server.ReadConfigFile(f.config, ownDirectives(fs, onCommandLine))
	if err != nil {
		return nil, err
	}
	if !onCommandLine["bind"] {
		if f.bind, err = fileListenAddr(file, f.bind); err != nil {
			return nil, fmt.Errorf("config file %s: %w", file.Path(), err)
		}
	}
	return file, nil
}

// ownDirectives are the server's flags as file directives: one argument
// each (yes/no for a switch), ignored when the command line gave the flag.
func ownDirectives(fs *flag.FlagSet, onCommandLine map[string]bool) map[string]server.OwnDirective {
	own := map[string]server.OwnDirective{}
	fs.VisitAll(func(fl *flag.Flag) {
		if fl.Name == "config" || fl.Name == "bind" {
			return // no nested files; bind is Redis's (fileListenAddr)
		}
		own[fl.Name] = func(args []string) error {
			if len(args) != 1 {
				return errWrongArgs
			}
			if onCommandLine[fl.Name] {
				return nil
			}
			return fs.Set(fl.Name, flagValue(fl, args[0]))
		}
	})
	return own
}

// flagValue reads a switch's yes/no as Redis's files write booleans.
func flagValue(fl *flag.Flag, v string) string {
	if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		switch strings.ToLower(v) {
		case "yes":
			return "true"
		case "no":
			return "false"
		}
	}
	return v
}

// fileListenAddr is the client listen address the file's bind and port
// make of addr (host:port): port replaces the port; bind's first address
// replaces the host, without the '-' that marks an optional address in
// Redis; "*" and "::*" are every IPv4 and every IPv6 interface. slotraft
// listens on one address: bind's others are reported by CONFIG GET only.
func fileListenAddr(file *server.ConfigFile, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--bind %q: %w", addr, err)
	}
	if p, ok := file.Value("port"); ok {
		port = p
	}
	if b, ok := file.Value("bind"); ok {
		first, _, _ := strings.Cut(b, " ")
		switch first = strings.TrimPrefix(first, "-"); first {
		case "":
			return "", errors.New(`bind "": slotraft needs an address to listen on`)
		case "*":
			host = "0.0.0.0"
		case "::*":
			host = "::"
		default:
			host = first
		}
	}
	return net.JoinHostPort(host, port), nil
}
