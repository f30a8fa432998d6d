package worker

import (
	"fmt"
	"time"

	"calaf.io/calaf/worker/crash"
)

// Ending says how a worker ended while it worked on a request (package crash).
type Ending = crash.Ending

// deadlineEnding and cpuEnding say why the pool stopped a worker.
func deadlineEnding(limit time.Duration) Ending {
	return Ending{Kind: "deadline", Text: fmt.Sprintf("did not finish within %s", limit)}
}

func cpuEnding(limit time.Duration) Ending {
	return crash.CPUEnding(limit)
}
