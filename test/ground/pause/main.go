// Command pause is the sandbox ("pause") container of the test ground's cluster: it holds a
// pod's namespaces open, reaps the zombies of the pod's shared PID namespace, and exits 0 on
// SIGTERM or SIGINT. Built static (CGO_ENABLED=0) into the image calaf.local/pause.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
