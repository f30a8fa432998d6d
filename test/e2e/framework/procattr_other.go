//go:build !linux

package framework

import "syscall"

// operatorProcAttr puts the operator in a process group of its own.
func operatorProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
