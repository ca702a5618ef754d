package server

import (
	"fmt"
	"syscall"
)

// The operating system's figures INFO shows, on Linux: uname, getrusage
// and the machine's memory, as Redis reads them.

// unameString is Redis's "os" field: sysname release machine.
func unameString() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "Linux"
	}
	return cString(u.Sysname[:]) + " " + cString(u.Release[:]) + " " + cString(u.Machine[:])
}

// cString is a NUL-terminated C string (int8 or uint8, as the
// architecture has it).
func cString[T int8 | uint8](f []T) string {
	b := make([]byte, 0, len(f))
	for _, c := range f {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// cpuTimes are used_cpu_sys, used_cpu_user and the children's, as Redis
// prints a struct timeval ("%ld.%06ld"); false where getrusage fails.
func cpuTimes() (sys, user, sysChildren, userChildren string, ok bool) {
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return "", "", "", "", false
	}
	tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
	return tv(self.Stime), tv(self.Utime), tv(children.Stime), tv(children.Utime), true
}

// systemMemory is the machine's physical memory (total_system_memory).
func systemMemory() uint64 {
	var si syscall.Sysinfo_t
	if syscall.Sysinfo(&si) != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}

// multiplexingAPI is the poller Go's runtime uses for network I/O here.
const multiplexingAPI = "epoll"
