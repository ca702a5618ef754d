//go:build !linux

package main

import "syscall"

// childProcAttr: outside Linux, dev nodes share the terminal's signals.
func childProcAttr() *syscall.SysProcAttr { return nil }
