package main

import "syscall"

// childProcAttr puts a dev node in its own process group, so that Ctrl-C in
// the terminal reaches only `slotraft dev` (which forwards it once), and asks
// the kernel to send it SIGTERM if `slotraft dev` dies.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
