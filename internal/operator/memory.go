package operator

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// SetMemoryLimit sets the Go runtime's soft memory limit, so the garbage collector works
// harder as the process nears it instead of letting garbage pile up. limit 0 means: 90% of
// the container's memory limit (cgroup v2 or v1) when there is one, else none. $GOMEMLIMIT,
// when set, wins. It returns the limit in force (0 for none).
func SetMemoryLimit(limit int64) int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1)
	}
	if limit <= 0 {
		if cgroup := cgroupMemoryLimit(); cgroup > 0 {
			limit = cgroup / 10 * 9
		}
	}
	if limit <= 0 {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// DefaultGCPercent is the operator's garbage collection target (Go's GOGC): the heap may
// grow by half its live size between collections instead of doubling. The operator's live
// heap is mostly its caches, and its reconciles mostly wait on the API server, so it spends
// the CPU of more frequent collections to keep its peak memory down.
const DefaultGCPercent = 50

// SetGCPercent sets the Go runtime's garbage collection target to percent (Go's GOGC;
// negative turns the collector off). $GOGC, when set, wins. It returns the target in force.
func SetGCPercent(percent int) int {
	if os.Getenv("GOGC") != "" {
		current := debug.SetGCPercent(100)
		debug.SetGCPercent(current)
		return current
	}
	debug.SetGCPercent(percent)
	return percent
}

// cgroupMemoryLimit reads the memory limit of the process's cgroup; 0 when unlimited.
func cgroupMemoryLimit() int64 {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		value := strings.TrimSpace(string(data))
		if value == "max" {
			return 0
		}
		limit, err := strconv.ParseInt(value, 10, 64)
		if err != nil || limit <= 0 || limit >= 1<<50 {
			return 0
		}
		return limit
	}
	return 0
}
