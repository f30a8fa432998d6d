//go:build calaf_offline

package cli

import (
	"github.com/spf13/cobra"

	"calaf.io/calaf/etsi/chart"
)

// A binary built with the calaf_offline tag has only the offline commands (validate,
// compile, render, graph) and links neither the operator, nor client-go's clients, nor
// Helm: it starts in a fraction of the time (docs/benchmarks.md, Whole process).

// clusterCommands: none in an offline build.
func clusterCommands() []*cobra.Command { return nil }

// chartEngine: none in an offline build; a package that deploys a Helm chart is refused
// with chart.ErrNoEngine.
func chartEngine() chart.Engine { return nil }
