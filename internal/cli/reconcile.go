//go:build !calaf_offline

package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// newReconcileCommand asks the operator for an immediate reconcile of a Service (fetch,
// compile, apply, repair drift), as `flux reconcile` does.
func newReconcileCommand() *cobra.Command {
	return serviceCommand{
		use:         "reconcile",
		short:       "Reconcile a Service now: fetch its package again, apply, repair drift",
		waitHelp:    "wait until the operator handled the request and the Service is Ready",
		waitTimeout: 5 * time.Minute,
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			if svc.Spec.Suspend {
				return fmt.Errorf("service %s/%s is suspended: `calaf resume %s` first", svc.Namespace, svc.Name, svc.Name)
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
			fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s: reconcile requested at %s\n", svc.Namespace, svc.Name, requestedAt)
			if !wait.wait {
				return nil
			}
			return waitForReconcile(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(svc), svc.Generation, requestedAt, wait.timeout)
		},
	}.command()
}

// newSuspendCommand and newResumeCommand set spec.suspend: a suspended Service is not
// reconciled (nothing applied, pruned or repaired) until it is resumed.
func newSuspendCommand() *cobra.Command {
	return serviceCommand{
		use:   "suspend",
		short: "Suspend reconciling a Service: its objects stay as they are",
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, _ waitFlags) error {
			return setSuspend(ctx, cmd, c, svc, true)
		},
	}.command()
}

func newResumeCommand() *cobra.Command {
	return serviceCommand{
		use:         "resume",
		short:       "Resume reconciling a suspended Service",
		waitHelp:    "wait until the Service is Ready again",
		waitTimeout: 5 * time.Minute,
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			if err := setSuspend(ctx, cmd, c, svc, false); err != nil || !wait.wait {
				return err
			}
			return waitForService(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(svc), svc.Generation, wait.timeout)
		},
	}.command()
}

// setSuspend sets spec.suspend and says so.
func setSuspend(ctx context.Context, cmd *cobra.Command, c client.Client, svc *v1alpha1.Service, suspend bool) error {
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Spec.Suspend = suspend
	if err := c.Patch(ctx, svc, patch); err != nil {
		return err
	}
	done := "resumed"
	if suspend {
		done = "suspended"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s %s\n", svc.Namespace, svc.Name, done)
	return nil
}
