package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	// Fields 14 to 17 (utime, stime, cutime, cstime) of a real line's shape, after a name
	// that holds spaces and parentheses.
	line := "4242 (kube-apiserver) S 1 4242 4242 0 -1 4194560 1 0 0 0 150 50 25 5 20 0 12 0 1 2 3"
	for _, tc := range []struct {
		stat, comm string
		seconds    float64
		ok         bool
	}{
		{stat: line, comm: "kube-apiserver", seconds: 2.3, ok: true},
		{stat: strings.Replace(line, "(kube-apiserver)", "(a (b) c)", 1), comm: "a (b) c", seconds: 2.3, ok: true},
		{stat: "4242 (cut) S 1 2 3"},
		{stat: "4242 kube-apiserver S 1 4242 4242 0 -1 4194560 1 0 0 0 150 50 25 5 20"},
		{stat: strings.Replace(line, " 150 ", " x ", 1)},
	} {
		comm, seconds, ok := parseCPU(tc.stat)
		if ok != tc.ok || comm != tc.comm || (ok && (seconds < tc.seconds-1e-9 || seconds > tc.seconds+1e-9)) {
			t.Errorf("parseCPU(%q) = %q, %g, %t; want %q, %g, %t", tc.stat, comm, seconds, ok, tc.comm, tc.seconds, tc.ok)
		}
	}
}

func TestCPUGroups(t *testing.T) {
	for comm, want := range map[string]string{
		"kube-apiserver": "API server", "etcd": "etcd", "kube-controller": "controller-manager",
		"kube-scheduler": "scheduler, kubelet", "kubelet": "scheduler, kubelet", "calaf": "operator", "calaf-full": "operator", "containerd": "other",
	} {
		if got := cpuGroup(comm, false); got != want {
			t.Errorf("cpuGroup(%q) = %q, want %q", comm, got, want)
		}
	}
	if got := cpuGroup("calaf", true); got != "bench" {
		t.Errorf("the bench's own process is in %q", got)
	}
}

// The CPU this process burns between two samples is the bench's.
func TestSampleCPUCountsThisProcess(t *testing.T) {
	before := sampleCPU()
	var used map[string]time.Duration
	// Burn CPU until the kernel has counted some (a tick is 10 ms), for at most 10 s of a
	// busy machine.
	for limit := time.Now().Add(10 * time.Second); time.Now().Before(limit); {
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
		}
		if used = sampleCPU().since(before); used["bench"] > 0 {
			break
		}
	}
	if used["bench"] <= 0 {
		t.Fatalf("no CPU counted for the bench after burning some: %v", used)
	}
	for group := range used {
		if !strings.Contains(strings.Join(cpuGroups, "|"), group) {
			t.Errorf("group %q is not one of the report's", group)
		}
	}
}
