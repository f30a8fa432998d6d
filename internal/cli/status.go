//go:build !calaf_offline

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
)

func newStatusCommand() *cobra.Command {
	var output string
	return serviceCommand{
		use:         "status",
		short:       "Show where a Service and each of its node templates stand",
		waitHelp:    "follow the progress until the Service is Ready or fails",
		waitShort:   "w",
		waitTimeout: 10 * time.Minute,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text|yaml|json (the status)")
			cmd.PreRunE = func(*cobra.Command, []string) error { return checkOutput(output, "text", "yaml", "json") }
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			if wait.wait {
				return waitForService(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(svc), svc.Generation, wait.timeout)
			}
			if err := printServiceStatus(cmd.OutOrStdout(), svc, output); err != nil || output != "text" {
				return err
			}
			return printChildren(ctx, cmd.OutOrStdout(), c, svc, 1)
		},
	}.command()
}

// maxTreeDepth bounds how deep calaf status follows the Services of substituted nodes.
const maxTreeDepth = 5

// printChildren writes the status of the Services a Service's substituted nodes are
// deployed as (status.nodes[].service), indented under it, and theirs in turn.
func printChildren(ctx context.Context, out io.Writer, c client.Client, svc *v1alpha1.Service, depth int) error {
	if depth > maxTreeDepth {
		return nil
	}
	indent := strings.Repeat("    ", depth)
	for _, node := range svc.Status.Nodes {
		if node.Service == "" {
			continue
		}
		child := &v1alpha1.Service{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: svc.Namespace, Name: node.Service}, child); err != nil {
			fmt.Fprintf(out, "\n%snode %s: Service %s: %v\n", indent, node.Name, node.Service, err)
			continue
		}
		fmt.Fprintf(out, "\n%snode %s is Service %s:\n", indent, node.Name, node.Service)
		for _, line := range strings.Split(strings.TrimRight(describe(child), "\n"), "\n") {
			fmt.Fprintf(out, "%s%s\n", indent, line)
		}
		if err := printChildren(ctx, out, c, child, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// printServiceStatus writes a Service's status in the output format.
func printServiceStatus(out io.Writer, svc *v1alpha1.Service, output string) error {
	switch output {
	case "yaml":
		data, err := yaml.Marshal(svc.Status)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	case "json":
		data, err := json.MarshalIndent(svc.Status, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	}
	_, err := io.WriteString(out, describe(svc))
	return err
}

// packageLine names a package: its template's name and version when the template
// compiled and says them, its entry, its revision.
func packageLine(p *v1alpha1.PackageStatus) string {
	var parts []string
	if name := strings.TrimSpace(p.TemplateName + " " + p.TemplateVersion); name != "" {
		parts = append(parts, name)
	}
	if p.Entry != "" {
		parts = append(parts, p.Entry)
	}
	return strings.Join(append(parts, "revision "+p.Revision), ", ")
}

// describe renders a Service's status for the terminal.
func describe(svc *v1alpha1.Service) string {
	var b strings.Builder
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	state := "Unknown"
	if ready != nil {
		state = string(ready.Status)
		if ready.Status != metav1.ConditionTrue {
			state += " (" + ready.Reason + ")"
		}
	}
	fmt.Fprintf(&b, "Service %s/%s: Ready=%s, generation %d (observed %d)\n", svc.Namespace, svc.Name, state, svc.Generation, svc.Status.ObservedGeneration)
	if state := instantiationLine(svc); state != "" {
		fmt.Fprintf(&b, "Instantiation: %s\n", state)
	}
	if p := svc.Status.Package; p != nil {
		fmt.Fprintf(&b, "Package: %s\n", packageLine(p))
	}
	if kc := svc.Spec.KubeConfig; kc != nil {
		fmt.Fprintf(&b, "Cluster: %s (kubeconfig Secret %s)\n", clusterOrPending(svc.Status.Cluster), kc.SecretRef.Name)
	}
	if ready != nil && ready.Message != "" && ready.Status != metav1.ConditionTrue {
		fmt.Fprintf(&b, "Message: %s\n", ready.Message)
	}
	if len(svc.Status.Nodes) > 0 {
		b.WriteString("\n")
		w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NODE\tTYPE\tPHASE\tDETAILS")
		for _, node := range svc.Status.Nodes {
			details := node.Message
			if node.WaitingFor != "" && node.Phase != v1alpha1.NodeReady {
				details = "waiting for " + node.WaitingFor
			}
			if node.Service != "" {
				details = "Service " + node.Service + ": " + details
			}
			for _, op := range node.Operations {
				details += fmt.Sprintf(" [%s: %s]", op.Name, op.Phase)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", node.Name, node.Type, node.Phase, text.Truncate(details, 100))
		}
		w.Flush()
	}
	describeVNF(&b, svc.Status.VNF, svc.Status.Warnings)
	describeLifecycle(&b, svc)
	if len(svc.Status.Outputs) > 0 || len(svc.Status.PendingOutputs) > 0 {
		b.WriteString("\nOutputs:\n")
		names := map[string]bool{}
		for name := range svc.Status.Outputs {
			names[name] = true
		}
		for name := range svc.Status.PendingOutputs {
			names[name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			if value, ok := svc.Status.Outputs[name]; ok {
				fmt.Fprintf(&b, "  %s: %s\n", name, value.Raw)
			} else {
				fmt.Fprintf(&b, "  %s: (pending: %s)\n", name, text.Truncate(svc.Status.PendingOutputs[name], 100))
			}
		}
	}
	return b.String()
}

// instantiationLine says a Service's instantiation state, and the one it goes to.
func instantiationLine(svc *v1alpha1.Service) string {
	is, wanted := svc.Status.InstantiationState, svc.Spec.InstantiationState
	switch {
	case wanted == v1alpha1.NotInstantiated && is != v1alpha1.NotInstantiated:
		return "NOT_INSTANTIATED asked: tearing down what runs"
	case wanted != v1alpha1.NotInstantiated && is == v1alpha1.NotInstantiated:
		return "INSTANTIATED asked: deploying"
	case is == v1alpha1.NotInstantiated:
		return "NOT_INSTANTIATED (nothing deployed)"
	}
	return string(is)
}

// errServiceFailed is returned by waitForService when the Service stalls or fails.
var errServiceFailed = errors.New("the Service failed")

// waitForService follows a Service until it is Ready for generation (nil), stalls (an
// error), or the timeout passes. Each change of its status is shown; on a terminal the
// view is redrawn in place.
func waitForService(ctx context.Context, out io.Writer, c client.WithWatch, key client.ObjectKey, generation int64, timeout time.Duration) error {
	return waitForReconcile(ctx, out, c, key, generation, "", timeout)
}

// waitForReconcile is waitForService that also waits until the operator handled the
// reconcile request requestedAt (when not empty).
func waitForReconcile(ctx context.Context, out io.Writer, c client.WithWatch, key client.ObjectKey, generation int64, requestedAt string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tty := isTerminal(out)
	last, lines := "", 0
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		svc := &v1alpha1.Service{}
		if err := c.Get(ctx, key, svc); err != nil {
			return err
		}
		view := describe(svc)
		if view != last {
			if tty && lines > 0 {
				fmt.Fprintf(out, "\033[%dA\033[J", lines)
			} else if last != "" {
				fmt.Fprintln(out, "---")
			}
			fmt.Fprint(out, view)
			last, lines = view, strings.Count(view, "\n")
		}
		handled := requestedAt == "" || svc.Status.LastHandledReconcileAt == requestedAt
		if done, err := finished(svc, generation); done && handled {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timeout: the Service is not Ready after %s", timeout)
		case <-ticker.C:
		}
	}
}

// finished tells whether a Service reached a final state for generation.
func finished(svc *v1alpha1.Service, generation int64) (bool, error) {
	ready := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionTrue && svc.Status.ObservedGeneration >= generation && ready.ObservedGeneration >= generation {
		return true, nil
	}
	stalled := apimeta.FindStatusCondition(svc.Status.Conditions, v1alpha1.ConditionStalled)
	if stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.ObservedGeneration >= generation {
		return true, fmt.Errorf("%w: %s: %s", errServiceFailed, stalled.Reason, stalled.Message)
	}
	return false, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

func mustJSON(value any) []byte {
	data, err := json.Marshal(value)
	if err != nil {
		data, _ = json.Marshal(fmt.Sprint(value))
	}
	return data
}

// clusterOrPending is the API server a Service's objects are in, once known.
func clusterOrPending(server string) string {
	if server == "" {
		return "not reached yet"
	}
	return server
}
