package framework

import "syscall"

// operatorProcAttr puts the operator in a process group of its own (a test's signals are
// its own), killed when the process that started it ends however it ends: an operator
// outliving an interrupted test or bench would keep running against the next cluster,
// holding the test ground's lock that it inherited (test/ground/with-cluster.sh).
func operatorProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
