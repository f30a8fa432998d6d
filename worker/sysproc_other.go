//go:build !linux

package worker

import "syscall"

// sysProcAttr puts a worker in a process group of its own; it ends when its stdin closes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
