package chaos

import "syscall"

// childAttr puts a node in its own process group, so a Ctrl-C in the
// terminal reaches only the chaos run (which then kills the nodes by pid),
// and asks the kernel to SIGKILL the node if the run itself dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
