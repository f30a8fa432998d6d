//go:build !calaf_offline

package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/render"
)

func newListCommand() *cobra.Command {
	var kube kubeFlags
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List Services",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, namespace, err := kube.client()
			if err != nil {
				return err
			}
			var opts []client.ListOption
			if !all {
				opts = append(opts, client.InNamespace(namespace))
			}
			services, err := listServices(ctx, c, opts...)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAMESPACE\tNAME\tKEPT AS\tREADY\tSTATE\tREVISION\tAGE\tMESSAGE")
			for _, s := range services {
				svc := s.service
				ready, message := "Unknown", ""
				if c := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady); c != nil {
					ready, message = string(c.Status), c.Message
				}
				age := time.Since(svc.CreationTimestamp.Time).Round(time.Second)
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", svc.Namespace, svc.Name, s.keptAs, ready, orDash(string(svc.Status.InstantiationState)),
					text.Truncate(svc.Status.LastAppliedRevision, 24), age, text.Truncate(message, 80))
			}
			return w.Flush()
		},
	}
	kube.register(cmd)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the Services of every namespace")
	return cmd
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listedService is a Service and the form it is kept in (Service or ConfigMap).
type listedService struct {
	service v1alpha1.Service
	keptAs  string
}

// listServices lists the Services kept as custom resources (none when the cluster has no
// CRD) and those kept as ConfigMaps.
func listServices(ctx context.Context, c client.WithWatch, opts ...client.ListOption) ([]listedService, error) {
	var out []listedService
	var crs v1alpha1.ServiceList
	if err := c.List(ctx, &crs, opts...); err != nil && !apimeta.IsNoMatchError(err) {
		return nil, err
	}
	for _, svc := range crs.Items {
		out = append(out, listedService{service: svc, keptAs: "Service"})
	}
	cm, err := configMapClient(c)
	if err != nil {
		return nil, err
	}
	var cms v1alpha1.ServiceList
	if err := cm.List(ctx, &cms, opts...); err != nil {
		return nil, err
	}
	for _, svc := range cms.Items {
		out = append(out, listedService{service: svc, keptAs: "ConfigMap"})
	}
	return out, nil
}

func newDeleteCommand() *cobra.Command {
	return serviceCommand{
		use:         "delete",
		short:       "Delete a Service (its objects go as its deletion policy says)",
		waitHelp:    "wait until the Service and its objects are gone",
		waitTimeout: 5 * time.Minute,
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			key := client.ObjectKeyFromObject(svc)
			if err := c.Delete(ctx, svc); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s deleting (policy %s)\n", key.Namespace, key.Name, svc.Spec.DeletionPolicy)
			if !wait.wait {
				return nil
			}
			return waitForDeletion(ctx, cmd, c, key, wait.timeout)
		},
	}.command()
}

// waitForDeletion waits until the Service is gone, printing where its deletion stands
// (which node's objects are going, which teardown operation runs) as it moves.
func waitForDeletion(ctx context.Context, cmd *cobra.Command, c client.Client, key client.ObjectKey, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		svc := &v1alpha1.Service{}
		err := c.Get(ctx, key, svc)
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s deleted\n", key.Namespace, key.Name)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("timeout: the Service is still being deleted; last: %s", last)
		}
		if ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady); err == nil && ready != nil &&
			ready.Reason == v1alpha1.ReasonDeleting && ready.Message != last {
			last = ready.Message
			fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func newDiffCommand() *cobra.Command {
	var kube kubeFlags
	var flags packageFlags
	cmd := &cobra.Command{
		Use:   "diff NAME SOURCE",
		Short: "Show what deploying SOURCE to Service NAME would change (server-side dry-run)",
		Long: "Show what deploying SOURCE to Service NAME would change, as a server-side dry-run.\n" +
			"Exit code 0: no differences; 1: differences; 3 (2 for a wrong command line): an error.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			changes, err := runDiff(cmd, &kube, &flags, args[0], args[1])
			switch {
			case err != nil:
				return diffFailed{err}
			case changes > 0:
				return differencesFound{changes}
			}
			return nil
		},
	}
	kube.register(cmd)
	flags.inputs.register(cmd)
	flags.etsi.register(cmd)
	flags.isolation.register(cmd)
	flags.policy.register(cmd)
	return cmd
}

// runDiff compiles and renders SOURCE for Service NAME and prints what deploying it would
// change; it returns how many objects would change.
func runDiff(cmd *cobra.Command, kube *kubeFlags, flags *packageFlags, name, src string) (int, error) {
	ctx, cancel := commandContext(cmd)
	defer cancel()
	c, namespace, err := kube.client()
	if err != nil {
		return 0, err
	}
	flags.service, flags.namespace = name, namespace
	defer flags.isolation.close()
	compiled, err := flags.compile(ctx, src)
	if err != nil {
		return 0, err
	}
	defer compiled.pkg.Close()
	result, err := flags.render(ctx, compiled, cmd.ErrOrStderr())
	if err != nil {
		return 0, err
	}
	svc := &v1alpha1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, svc); err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	return writeDiff(ctx, cmd, c, svc, result)
}

// writeDiff prints, per object, what a server-side apply would change, and the objects the
// Service would prune; it returns how many objects would change.
func writeDiff(ctx context.Context, cmd *cobra.Command, c client.Client, svc *v1alpha1.Service, result *render.Result) (int, error) {
	manager := ssa.NewResourceManager(c, nil, ssa.Owner{Field: "calaf", Group: "calaf.io"})
	out := cmd.OutOrStdout()
	changes := 0
	desired := map[string]bool{}
	for _, obj := range result.Objects {
		desired[render.ObjectID(obj)] = true
		entry, live, dryRun, err := manager.Diff(ctx, obj.DeepCopy(), ssa.DefaultDiffOptions())
		if err != nil {
			return 0, err
		}
		switch entry.Action {
		case ssa.CreatedAction:
			changes++
			fmt.Fprintf(out, "+ %s (new)\n", entry.Subject)
		case ssa.ConfiguredAction:
			changes++
			fmt.Fprintf(out, "~ %s\n%s", entry.Subject, unifiedDiff(clean(live), clean(dryRun)))
		}
	}
	for _, entry := range svc.Status.Inventory {
		if !desired[entry.ID] {
			changes++
			parts := strings.Split(entry.ID, "_")
			if len(parts) == 4 {
				fmt.Fprintf(out, "- %s/%s (pruned)\n", parts[3], parts[1])
			}
		}
	}
	if changes == 0 {
		fmt.Fprintln(out, "no changes")
	}
	return changes, nil
}

// clean drops what the server maintains from an object before diffing.
func clean(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	obj = obj.DeepCopy()
	unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(obj.Object, "metadata", "generation")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "metadata", "uid")
	unstructured.RemoveNestedField(obj.Object, "status")
	data, _ := yaml.Marshal(obj.Object)
	return string(data)
}
