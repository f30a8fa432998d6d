// Command calaf validates, compiles and renders TOSCA service packages offline, runs the
// Calaf operator, and drives it.
package main

import (
	"os"

	"calaf.io/calaf/internal/cli"
)

func main() {
	os.Exit(cli.Execute())
}
