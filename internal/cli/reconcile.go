package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// newReconcileCommand asks the operator for an immediate reconcile of a Service (fetch,
// compile, apply, repair drift), as `flux reconcile` does.
func newReconcileCommand() *cobra.Command {
	var kube kubeFlags
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "reconcile NAME",
		Short: "Reconcile a Service now: fetch its package again, apply, repair drift",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, svc, err := kube.service(ctx, args[0])
			if err != nil {
				return err
			}
			namespace := svc.Namespace
			if svc.Spec.Suspend {
				return fmt.Errorf("service %s/%s is suspended: `calaf resume %s` first", namespace, args[0], args[0])
			}
			requestedAt := time.Now().UTC().Format(time.RFC3339Nano)
			patch := client.MergeFrom(svc.DeepCopy())
			if svc.Annotations == nil {
				svc.Annotations = map[string]string{}
			}
			svc.Annotations[v1alpha1.ReconcileRequestAnnotation] = requestedAt
			if err := c.Patch(ctx, svc, patch); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s: reconcile requested at %s\n", namespace, args[0], requestedAt)
			if !wait {
				return nil
			}
			return waitForReconcile(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(svc), svc.Generation, requestedAt, timeout)
		},
	}
	kube.register(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the operator handled the request and the Service is Ready")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// newSuspendCommand and newResumeCommand set spec.suspend: a suspended Service is not
// reconciled (nothing applied, pruned or repaired) until it is resumed.
func newSuspendCommand() *cobra.Command { return suspendCommand(true) }
func newResumeCommand() *cobra.Command  { return suspendCommand(false) }

func suspendCommand(suspend bool) *cobra.Command {
	var kube kubeFlags
	var wait bool
	var timeout time.Duration
	use, short, done := "resume NAME", "Resume reconciling a suspended Service", "resumed"
	if suspend {
		use, short, done = "suspend NAME", "Suspend reconciling a Service: its objects stay as they are", "suspended"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, svc, err := kube.service(ctx, args[0])
			if err != nil {
				return err
			}
			namespace := svc.Namespace
			patch := client.MergeFrom(svc.DeepCopy())
			svc.Spec.Suspend = suspend
			if err := c.Patch(ctx, svc, patch); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s %s\n", namespace, args[0], done)
			if suspend || !wait {
				return nil
			}
			return waitForService(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(svc), svc.Generation, timeout)
		},
	}
	kube.register(cmd)
	if !suspend {
		cmd.Flags().BoolVar(&wait, "wait", false, "wait until the Service is Ready again")
		cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	}
	return cmd
}
