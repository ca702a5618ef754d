//go:build !linux

package chaos

import "syscall"

// childAttr puts a node in its own process group (the run refuses to start
// outside Linux; this keeps the package building there).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
