// Command calaf is Calaf's command line: a front of a few milliseconds' start that runs
// the offline package commands (validate, compile, render, graph) in calaf-offline under
// the worker limits, and every other command in calaf-full (package front). The three are
// installed side by side (make build).
package main

import (
	"os"

	"calaf.io/calaf/internal/front"
)

func main() {
	os.Exit(front.Main(os.Args))
}
