//go:build !linux

package server

import "runtime"

// Where there is no Linux: the OS's name only, and no CPU or memory
// figures (INFO leaves those fields out).

func unameString() string { return runtime.GOOS }

func cpuTimes() (sys, user, sysChildren, userChildren string, ok bool) { return "", "", "", "", false }

func systemMemory() uint64 { return 0 }

const multiplexingAPI = "kqueue"
