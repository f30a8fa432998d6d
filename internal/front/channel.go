// Package front is calaf's front: the small process a user starts. It runs the offline
// package commands (validate, compile, render, graph) in calaf-offline, a lean build of
// Calaf that links neither the operator nor Helm, as a child under the worker limits, and
// hands every other command to calaf-full, the whole of Calaf. It links nothing but the
// standard library and two leaves of this module, so that it starts in a few milliseconds.
//
// The child tells the front, on a pipe of its own (Channel), its limits and each piece of
// package work it starts: the front words a crash of the child as the worker pool words a
// crash of a worker, and stops a piece of work that outlives its deadline.
package front

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// channelEnv names the file descriptor of the child's channel to the front, set by the
// front in the child's environment.
const channelEnv = "CALAF_FRONT_FD"

// channelFD is the descriptor the front gives the channel: the first of exec.Cmd's
// ExtraFiles.
const channelFD = 3

// Channel is the child's end of the pipe to the front; nil when the process was not
// started by the front. Its methods do nothing on a nil Channel.
type Channel struct {
	w *os.File
}

// Child returns the channel to the front when the front started this process, else nil.
func Child() *Channel {
	if os.Getenv(channelEnv) != strconv.Itoa(channelFD) {
		return nil
	}
	f := os.NewFile(channelFD, "calaf-front")
	if f == nil {
		return nil
	}
	return &Channel{w: f}
}

// Limits tells the front the limits this process set on itself (bytes; zero: none).
func (c *Channel) Limits(memory, stack int64) {
	c.send(fmt.Sprintf("limits %d %d", memory, stack))
}

// Work tells the front that this process starts op ("compile", "render", "evaluate") on
// the package whose entry is entry, and that the front is to stop it after deadline.
func (c *Channel) Work(op, entry string, deadline time.Duration) {
	c.send(fmt.Sprintf("work %s %d %s", op, deadline, strconv.Quote(entry)))
}

// NeedsCharts tells the front that the package deploys a Helm chart, which this process
// cannot render: the front runs the command again in calaf-full.
func (c *Channel) NeedsCharts() {
	c.send("charts")
}

func (c *Channel) send(line string) {
	if c == nil {
		return
	}
	_, _ = c.w.WriteString(line + "\n")
}

// announcements is what the front heard from its child.
type announcements struct {
	memory, stack int64
	op, entry     string
	charts        bool
}

// hear reads one line of the child's channel into a, and returns the deadline of the work
// it starts (zero for a line that starts none). Lines it does not know are ignored.
func (a *announcements) hear(line string) time.Duration {
	var op, entry string
	var deadline time.Duration
	switch {
	case line == "charts":
		a.charts = true
	case sscan(line, "limits %d %d", &a.memory, &a.stack):
	case sscan(line, "work %s %d %s", &op, &deadline, &entry):
		if unquoted, err := strconv.Unquote(entryOf(line)); err == nil {
			a.op, a.entry = op, unquoted
			return deadline
		}
	}
	return 0
}

// entryOf returns the quoted entry of a work line: everything after its third space.
func entryOf(line string) string {
	spaces := 0
	for i, r := range line {
		if r == ' ' {
			if spaces++; spaces == 3 {
				return line[i+1:]
			}
		}
	}
	return ""
}

func sscan(line, format string, args ...any) bool {
	n, err := fmt.Sscanf(line, format, args...)
	return err == nil && n == len(args)
}
