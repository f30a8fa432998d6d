package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of the CPU times in /proc/PID/stat (USER_HZ: 100 on Linux).
const clockTicks = 100

// cpuGroups are the process groups whose CPU a run's window is split into, in the
// report's order; a process whose name is none of theirs counts as "other".
var cpuGroups = []string{"API server", "etcd", "controller-manager", "scheduler, kubelet", "operator", "bench", "other"}

// cpuGroup returns the group of a process: its name (comm, at most 15 characters) and
// whether it is the bench itself.
func cpuGroup(comm string, self bool) string {
	switch {
	case self:
		return "bench"
	case comm == "kube-apiserver":
		return "API server"
	case comm == "etcd":
		return "etcd"
	case strings.HasPrefix(comm, "kube-controller"):
		return "controller-manager"
	case comm == "kube-scheduler" || comm == "kubelet":
		return "scheduler, kubelet"
	case comm == "calaf" || comm == "calaf-full":
		return "operator"
	}
	return "other"
}

// cpuTimes are CPU seconds by group: the user and system time of every process, with
// that of its children it waited for (an operator's replaced workers), so that the
// difference of two samples is what the groups used in between.
type cpuTimes map[string]float64

// sampleCPU reads the CPU times of every process from /proc.
func sampleCPU() cpuTimes {
	out := cpuTimes{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // ended since the directory was read
		}
		if comm, seconds, ok := parseCPU(string(stat)); ok {
			out[cpuGroup(comm, pid == self)] += seconds
		}
	}
	return out
}

// parseCPU returns the name of a process and its CPU seconds (utime, stime, cutime and
// cstime, fields 14 to 17) from its /proc/PID/stat; the name, in parentheses, may hold
// spaces and parentheses of its own.
func parseCPU(stat string) (comm string, seconds float64, ok bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	fields := strings.Fields(stat[end+1:]) // from field 3, the state
	if len(fields) < 15 {
		return "", 0, false
	}
	var ticks int64
	for _, f := range fields[11:15] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return "", 0, false
		}
		ticks += v
	}
	return stat[open+1 : end], float64(ticks) / clockTicks, true
}

// since returns what each group used from before to t (a group's processes that ended
// unwaited in between make its difference smaller, never negative).
func (t cpuTimes) since(before cpuTimes) map[string]time.Duration {
	out := map[string]time.Duration{}
	for group, seconds := range t {
		if d := seconds - before[group]; d > 0 {
			out[group] = time.Duration(d * float64(time.Second))
		}
	}
	return out
}

// cpuTotal is the CPU of all groups.
func cpuTotal(cpu map[string]time.Duration) time.Duration {
	var total time.Duration
	for _, d := range cpu {
		total += d
	}
	return total
}

// writeCPU writes the CPU each process group used in each run's window to all applied.
func writeCPU(b *strings.Builder, runs []result, base result) {
	b.WriteString("CPU used until all were applied, by process, in seconds (user + system, from /proc; the operator's workers included; *bench*: the bench process, which creates the Services, proxies the measured client's requests to count them and watches the Services):\n\n")
	b.WriteString("| run | " + strings.Join(cpuGroups, " | ") + " | all | ÷ 4 workers | wall |\n|---|" + strings.Repeat("---:|", len(cpuGroups)+3) + "\n")
	for _, r := range runs {
		fmt.Fprintf(b, "| %s |", r.name)
		for _, group := range cpuGroups {
			fmt.Fprintf(b, " %.1f |", r.cpu[group].Seconds())
		}
		fmt.Fprintf(b, " %.1f | %.2f× | %.1f s |\n", cpuTotal(r.cpu).Seconds(), ratio(cpuTotal(r.cpu), cpuTotal(base.cpu)), r.applied.Seconds())
	}
	b.WriteString("\n")
}

// ratio is a ÷ b, 0 when b is.
func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return a.Seconds() / b.Seconds()
}
