package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// memory follows the resident memory of operator processes and of their children (the
// workers that compile and render), sampled from /proc.
type memory struct {
	pids []int
	// peaks are each operator process's peak (VmHWM), splits its anonymous and file-backed
	// parts when the peak was read.
	peaks  []int64
	splits []string
	// workers are the peaks of the children seen, by pid.
	workers map[int]int64
	// total is the largest sum of the resident memory (VmRSS) of all, at one sample.
	total int64
}

func newMemory(pids []int) *memory {
	return &memory{pids: pids, peaks: make([]int64, len(pids)), splits: make([]string, len(pids)), workers: map[int]int64{}}
}

// sample reads the memory of the operator processes and of their children.
func (m *memory) sample() {
	var total int64
	for i, pid := range m.pids {
		if rss := peakRSS(pid); rss > m.peaks[i] {
			m.peaks[i], m.splits[i] = rss, rssSplit(pid)
		}
		total += statusBytes(pid, "VmRSS:")
	}
	for _, pid := range children(m.pids) {
		m.workers[pid] = max(m.workers[pid], peakRSS(pid))
		total += statusBytes(pid, "VmRSS:")
	}
	m.total = max(m.total, total)
}

// result returns r with the memory seen: peakRSS is the largest operator process's.
func (m *memory) result(r result) result {
	r.processRSS = slices.Clone(m.peaks)
	r.peakRSS = slices.Max(m.peaks)
	r.rssSplit = m.splits[slices.Index(m.peaks, r.peakRSS)]
	for _, peak := range m.workers {
		r.workerRSS = max(r.workerRSS, peak)
	}
	r.totalRSS = m.total
	return r
}

// children returns the processes whose parent is one of parents.
func children(parents []int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && slices.Contains(parents, parentOf(string(stat))) {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf returns the parent's pid from a /proc/PID/stat line (0 when unreadable); the
// command name before it, in parentheses, may hold spaces and parentheses.
func parentOf(stat string) int {
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// peakRSS reads a process's peak resident set size (VmHWM) from /proc.
func peakRSS(pid int) int64 { return statusBytes(pid, "VmHWM:") }

// statusBytes reads a size in kB from a process's /proc status (0 when unreadable).
func statusBytes(pid int, key string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, key) {
			fields := strings.Fields(line)
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// mib formats sizes in MiB ("120 + 118 MiB").
func mib(sizes ...int64) string {
	parts := make([]string, len(sizes))
	for i, size := range sizes {
		parts[i] = fmt.Sprintf("%.0f", float64(size)/(1<<20))
	}
	return strings.Join(parts, " + ") + " MiB"
}

func rss(bytes int64) string {
	if bytes == 0 {
		return ""
	}
	return fmt.Sprintf("peak RSS %.0f MiB", float64(bytes)/(1<<20))
}

// rssSplit reads how a process's resident memory splits into anonymous memory (heap,
// stacks) and file pages (the binary's code and data).
func rssSplit(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	var parts []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "RssAnon:") || strings.HasPrefix(line, "RssFile:") {
			parts = append(parts, strings.Join(strings.Fields(line), " "))
		}
	}
	return strings.Join(parts, ", ")
}
