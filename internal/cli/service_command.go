//go:build !calaf_offline

package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// serviceCommand is the skeleton of the commands that act on one named Service (status,
// delete, reconcile, suspend, resume): the cluster flags, the Service read from the
// cluster, and --wait/--timeout when the command can wait.
type serviceCommand struct {
	use, short string
	// waitHelp, when set, adds --wait (shorthand waitShort) with this help, and --timeout.
	waitHelp, waitShort string
	waitTimeout         time.Duration
	// flags adds the command's own flags.
	flags func(cmd *cobra.Command)
	// extra, when set, is the usage of the arguments after NAME (up to maxExtra of them;
	// run reads them from cmd.Flags().Args()).
	extra    string
	maxExtra int
	// run acts on the Service.
	run func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error
}

// waitFlags are --wait and --timeout.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

// command builds the cobra command.
func (sc serviceCommand) command() *cobra.Command {
	var kube kubeFlags
	var wait waitFlags
	cmd := &cobra.Command{
		Use:   strings.TrimSpace(sc.use + " NAME " + sc.extra),
		Short: sc.short,
		Args:  cobra.RangeArgs(1, 1+sc.maxExtra),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, svc, err := kube.service(ctx, args[0])
			if err != nil {
				return err
			}
			return sc.run(ctx, cmd, c, svc, wait)
		},
	}
	kube.register(cmd)
	if sc.waitHelp != "" {
		cmd.Flags().BoolVarP(&wait.wait, "wait", sc.waitShort, false, sc.waitHelp)
		cmd.Flags().DurationVar(&wait.timeout, "timeout", sc.waitTimeout, "how long --wait waits")
	}
	if sc.flags != nil {
		sc.flags(cmd)
	}
	return cmd
}
