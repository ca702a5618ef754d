//go:build !linux

package server

import "runtime"

// Where there is no Linux: the OS's name only, and no CPU or memory
// figures (INFO leaves those fields out).

func unameString() string { return runtime.GOOS }

func cpuTimes() (sys, user, sysChildren, userChildren string, ok bool) { return "", "", "", "", false }

func systemMemory() uint64 { return 0 }

// multiplexingAPI is the poller of Go's runtime: kqueue on the BSDs and
// macOS, evport on illumos and Solaris, IOCP on Windows.
var multiplexingAPI = map[string]string{
	"darwin": "kqueue", "freebsd": "kqueue", "netbsd": "kqueue", "openbsd": "kqueue", "dragonfly": "kqueue",
	"illumos": "evport", "solaris": "evport", "windows": "iocp",
}[runtime.GOOS]
