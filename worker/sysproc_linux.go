package worker

import "syscall"

// sysProcAttr puts a worker in a process group of its own (a terminal's Ctrl-C reaches the
// CLI, which stops it) and has the kernel kill it when the process that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
