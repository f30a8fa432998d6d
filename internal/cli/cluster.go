//go:build !calaf_offline

package cli

import (
	"github.com/spf13/cobra"

	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/etsi/helmchart"
)

// clusterCommands are the commands that drive the operator or run it: all but the offline
// ones. A binary built with the calaf_offline tag has none (offline_build.go).
func clusterCommands() []*cobra.Command {
	return []*cobra.Command{
		newDeployCommand(),
		newStatusCommand(),
		newListCommand(),
		newDeleteCommand(),
		newReconcileCommand(),
		newSuspendCommand(),
		newResumeCommand(),
		newDiffCommand(),
		newRunCommand(),
		newInstantiateCommand(),
		newTerminateCommand(),
		newChangeFlavourCommand(),
		newCancelCommand(),
		newScaleCommand(),
		newHealCommand(),
		newUpgradeCommand(),
		newRetryCommand(),
		newRollbackCommand(),
		newFailCommand(),
		newOpsCommand(),
		newOperatorCommand(),
		newPackageCommand(),
		newPackagesCommand(),
		newNFVAPICommand(),
		newConvertCommand(),
	}
}

// chartEngine renders the Helm charts of ETSI packages, in this process and in its workers.
func chartEngine() chart.Engine { return helmchart.Engine{} }
