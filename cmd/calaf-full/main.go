// Command calaf-full is the whole of Calaf in one binary: it validates, compiles and renders
// TOSCA service packages offline, runs the Calaf operator, and drives it. The calaf front
// (cmd/calaf) starts it for every command but the offline package ones; built with the
// calaf_offline tag, it is calaf-offline, the front's lean child for those.
package main

import (
	"os"

	"calaf.io/calaf/internal/cli"
)

func main() {
	os.Exit(cli.Execute())
}
