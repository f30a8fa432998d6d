//go:build !calaf_offline

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"calaf.io/calaf/api/v1alpha1"
)

// errOperationFailed is returned by `calaf run --wait` when the operation failed.
var errOperationFailed = fmt.Errorf("the operation failed")

func newRunCommand() *cobra.Command {
	var kube kubeFlags
	var inputs inputFlags
	var wait bool
	var timeout time.Duration
	var output string
	cmd := &cobra.Command{
		Use:   "run NAME NODE INTERFACE.OPERATION",
		Short: "Run an operation of a Service's node template once, on demand (Day-2)",
		Long: "Run an operation of node template NODE of the Service NAME once, in the node's pods, by\n" +
			"creating an Operation resource; -i adds or overrides inputs of the operation. With --wait,\n" +
			"follow it and print the result of each pod (exit code 1 if it failed).",
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "text", "yaml", "json"); err != nil {
				return err
			}
			if !regexp.MustCompile(`^[^.]+\.[^.]+$`).MatchString(args[2]) {
				return usageError{fmt.Errorf("the operation %q is not INTERFACE.OPERATION (e.g. Standard.configure)", args[2])}
			}
			values, err := inputs.parse()
			if err != nil {
				return err
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, namespace, err := kube.client()
			if err != nil {
				return err
			}
			op, err := createOperation(ctx, c, namespace, args[0], args[1], args[2], values)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "operation.calaf.io/%s created\n", op.Name)
			if !wait {
				return nil
			}
			if op, err = waitForOperation(ctx, c, client.ObjectKeyFromObject(op), timeout); err != nil {
				return err
			}
			if err := printOperation(out, op, output); err != nil {
				return err
			}
			if op.Status.Phase == v1alpha1.OperationFailed {
				return fmt.Errorf("%w: %s", errOperationFailed, op.Status.Message)
			}
			return nil
		},
	}
	kube.register(cmd)
	inputs.register(cmd)
	cmd.Flags().BoolVarP(&wait, "wait", "w", false, "wait for the result and print it")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format of the result: text|yaml|json (the status)")
	return cmd
}

// createOperation creates an Operation with a generated name.
func createOperation(ctx context.Context, c client.Client, namespace, service, node, operation string, inputs map[string]any) (*v1alpha1.Operation, error) {
	op := &v1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{GenerateName: operationPrefix(service, node, operation), Namespace: namespace},
		Spec:       v1alpha1.OperationSpec{ServiceName: service, Node: node, Operation: operation},
	}
	if len(inputs) > 0 {
		op.Spec.Inputs = map[string]apiextensionsv1.JSON{}
		for name, value := range inputs {
			op.Spec.Inputs[name] = apiextensionsv1.JSON{Raw: mustJSON(value)}
		}
	}
	if err := c.Create(ctx, op); err != nil {
		return nil, err
	}
	return op, nil
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// operationPrefix makes "<service>-<node>-<operation>-" a valid generateName.
func operationPrefix(service, node, operation string) string {
	prefix := nameUnsafe.ReplaceAllString(strings.ToLower(service+"-"+node+"-"+operation), "-")
	prefix = strings.Trim(prefix, "-")
	if len(prefix) > 50 {
		prefix = strings.TrimRight(prefix[:50], "-")
	}
	return prefix + "-"
}

// waitForOperation polls an Operation until it succeeded or failed.
func waitForOperation(ctx context.Context, c client.Client, key client.ObjectKey, timeout time.Duration) (*v1alpha1.Operation, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	for {
		op := &v1alpha1.Operation{}
		if err := c.Get(ctx, key, op); err != nil {
			return nil, err
		}
		if op.Status.Phase == v1alpha1.OperationSucceeded || op.Status.Phase == v1alpha1.OperationFailed {
			return op, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("timeout: operation %s is %s after %s: %s", key.Name, orUnknown(string(op.Status.Phase)), timeout, op.Status.Message)
		case <-ticker.C:
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "not accepted yet"
	}
	return s
}

// printOperation prints the result of an Operation, per pod.
func printOperation(out io.Writer, op *v1alpha1.Operation, output string) error {
	switch output {
	case "yaml", "json":
		return printStatus(out, op.Status, output)
	}
	fmt.Fprintf(out, "%s %s on %s/%s: %s", op.Spec.Operation, op.Name, op.Spec.ServiceName, op.Spec.Node, op.Status.Phase)
	if op.Status.Message != "" {
		fmt.Fprintf(out, " — %s", op.Status.Message)
	}
	fmt.Fprintln(out)
	for _, r := range op.Status.Results {
		mark := "ok"
		if !r.Succeeded {
			mark = "FAILED"
		}
		fmt.Fprintf(out, "  pod %s: %s (%dms)", r.Pod, mark, r.DurationMillis)
		if r.Message != "" {
			fmt.Fprintf(out, ": %s", r.Message)
		}
		fmt.Fprintln(out)
		printValues(out, "attribute", r.Attributes)
		printValues(out, "output", r.Outputs)
		if r.Stderr != "" && !r.Succeeded {
			fmt.Fprintf(out, "    stderr: %s\n", strings.ReplaceAll(strings.TrimSpace(r.Stderr), "\n", "\n            "))
		}
	}
	return nil
}

func printValues(out io.Writer, kind string, values map[string]apiextensionsv1.JSON) {
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(out, "    %s %s = %s\n", kind, name, values[name].Raw)
	}
}

func printStatus(out io.Writer, status v1alpha1.OperationStatus, output string) error {
	if output == "json" {
		data, err := json.MarshalIndent(status, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", data)
		return err
	}
	data, err := yaml.Marshal(status)
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}
