package framework

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOperatorEndsWithItsStarter: an operator whose test (or bench) ends without stopping
// it — interrupted, crashed — is killed too, not left running against the next cluster.
// The starter is this test binary run again (STARTER_SCRIPT), which starts a stand-in
// operator, prints its pid, and exits.
func TestOperatorEndsWithItsStarter(t *testing.T) {
	if script := os.Getenv("STARTER_SCRIPT"); script != "" {
		o := &Operator{Binary: script, LogPath: filepath.Join(filepath.Dir(script), "operator.log")}
		if err := o.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(o.cmd.Process.Pid)
		os.Exit(0) // without Stop, as an interrupted bench ends
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "calaf")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 300\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	starter := exec.Command(os.Args[0], "-test.run=^TestOperatorEndsWithItsStarter$")
	starter.Env = append(os.Environ(), "STARTER_SCRIPT="+script)
	out, err := starter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := starter.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	_ = starter.Wait()
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the starter said %q", line)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in operator %d still runs 10 s after the process that started it ended", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// running tells whether process pid exists and is not a zombie (killed, not yet reaped
// by the process that adopted it).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}
