package worker

import "fmt"

// Confinement is what a worker process may reach once it has started, enforced by the
// kernel on the process itself (Landlock, which an unprivileged container may use, and
// no_new_privs): it reads the files under Read and, once handed a package, that
// package's files alone; it writes, creates, removes and executes nothing, connects and
// binds no TCP port, and signals and reaches by abstract socket no process outside its
// own confinement. What it opened before (its stdin and stdout, its binary) it keeps.
type Confinement struct {
	// Read are the directories (or files) a worker may read before it is handed a
	// package: where packages are stored. A package's files must be under one of them.
	Read []string
	// Required refuses workers that cannot confine themselves: the kernel has no Landlock
	// (before Linux 5.13, or not enabled at boot). Otherwise such a worker runs with
	// no_new_privs, its limits and an empty environment only, and says so.
	Required bool
	// MaxABI uses at most this Landlock ABI (0: the kernel's); negative: none, as on a
	// kernel without Landlock (tests simulate one with it).
	MaxABI int
}

// Confined says what a process confined itself with.
type Confined struct {
	// Landlock is the Landlock ABI it is confined with; 0: none.
	Landlock int
	// NoNewPrivs: it can gain no privilege by executing anything (setuid, file
	// capabilities).
	NoNewPrivs bool
	// Unconfined says why Landlock is not used, when it is not.
	Unconfined string
}

// String says it for a log line.
func (c Confined) String() string {
	if c.Landlock == 0 {
		return "not confined by Landlock (" + c.Unconfined + ")"
	}
	return fmt.Sprintf("confined by Landlock ABI %d", c.Landlock)
}
