// Command calaf-runner runs one Calaf operation inside a pod's container. The operator
// streams it into the container and runs it over pods/exec; it is not meant to be run by
// hand (see docs/orchestration.md). Build it static: CGO_ENABLED=0.
package main

import (
	"os"

	"calaf.io/calaf/artifacts/runner"
)

func main() {
	os.Exit(runner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
