//go:build !calaf_offline

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/lifecycle"
)

// The lifecycle commands create operation occurrences (Operations) of a Service and follow
// them: scale, heal, upgrade create one; retry, rollback and fail decide on one in
// FAILED_TEMP; ops lists them. With --wait they print each state the occurrence enters
// and each step it takes, and exit 0 once COMPLETED, 1 when it ends FAILED_TEMP, FAILED
// or ROLLED_BACK.

// errOccurrenceFailed is returned by --wait when an occurrence does not complete.
var errOccurrenceFailed = errors.New("the operation did not complete")

// lifecycleTimeout is how long --wait waits by default.
const lifecycleTimeout = 15 * time.Minute

func newScaleCommand() *cobra.Command {
	var aspect, level string
	var steps int32
	var in bool
	return serviceCommand{
		use:      "scale",
		short:    "Scale a Service: an aspect by steps (SCALE), or to an instantiation level (SCALE_TO_LEVEL)",
		waitHelp: "follow the occurrence until it ends", waitShort: "w", waitTimeout: lifecycleTimeout,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&aspect, "aspect", "", "the scaling aspect (calaf status lists them)")
			cmd.Flags().Int32Var(&steps, "steps", 1, "how many steps")
			cmd.Flags().BoolVar(&in, "in", false, "scale in (default: out)")
			cmd.Flags().StringVar(&level, "level", "", "the instantiation level to scale to (ETSI packages)")
			cmd.PreRunE = func(*cobra.Command, []string) error {
				if (aspect == "") == (level == "") {
					return usageError{errors.New("give --aspect A [--steps N] [--in], or --level L")}
				}
				if steps < 1 {
					return usageError{fmt.Errorf("--steps %d: at least 1", steps)}
				}
				return nil
			}
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			spec := v1alpha1.OperationSpec{Type: v1alpha1.OperationScaleToLevel, ScaleToLevel: &v1alpha1.ScaleToLevelRequest{InstantiationLevelID: level}}
			if aspect != "" {
				direction := v1alpha1.ScaleOut
				if in {
					direction = v1alpha1.ScaleIn
				}
				spec = v1alpha1.OperationSpec{Type: v1alpha1.OperationScale, Scale: &v1alpha1.ScaleRequest{AspectID: aspect, Type: direction, NumberOfSteps: steps}}
			}
			return startOccurrence(ctx, cmd.OutOrStdout(), c, svc, spec, wait)
		},
	}.command()
}

func newHealCommand() *cobra.Command {
	var nodes, pods []string
	var cause string
	return serviceCommand{
		use:      "heal",
		short:    "Heal a Service: recreate pods (--pod), the pods of node templates (--node), or all of them",
		waitHelp: "follow the occurrence until it ends", waitShort: "w", waitTimeout: lifecycleTimeout,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringArrayVar(&nodes, "node", nil, "a node template (VDU) whose pods are recreated; repeatable")
			cmd.Flags().StringArrayVar(&pods, "pod", nil, "a pod (VNFC) to recreate; repeatable")
			cmd.Flags().StringVar(&cause, "cause", "", "why, for the record and the hooks")
			cmd.PreRunE = func(*cobra.Command, []string) error {
				if len(nodes) > 0 && len(pods) > 0 {
					return usageError{errors.New("give --node or --pod, not both")}
				}
				return nil
			}
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			spec := v1alpha1.OperationSpec{Type: v1alpha1.OperationHeal, Heal: &v1alpha1.HealRequest{Nodes: nodes, Pods: pods, Cause: cause}}
			return startOccurrence(ctx, cmd.OutOrStdout(), c, svc, spec, wait)
		},
	}.command()
}

// startOccurrence creates an occurrence of a Service and, with --wait, follows it.
func startOccurrence(ctx context.Context, out io.Writer, c client.WithWatch, svc *v1alpha1.Service, spec v1alpha1.OperationSpec, wait waitFlags) error {
	spec.ServiceName = svc.Name
	op := &v1alpha1.Operation{
		ObjectMeta: metav1.ObjectMeta{GenerateName: operationPrefix(svc.Name, strings.ToLower(string(spec.Type)), ""), Namespace: svc.Namespace},
		Spec:       spec,
	}
	if err := c.Create(ctx, op); err != nil {
		return err
	}
	fmt.Fprintf(out, "operation.calaf.io/%s created (%s of Service %s)\n", op.Name, spec.Type, svc.Name)
	if !wait.wait {
		return nil
	}
	return followOccurrence(ctx, out, c, client.ObjectKeyFromObject(op), 0, autoRollback(op, svc), wait.timeout)
}

// autoRollback tells whether a failed occurrence rolls back by itself.
func autoRollback(op *v1alpha1.Operation, svc *v1alpha1.Service) bool {
	switch op.Spec.Type {
	case v1alpha1.OperationInstantiate, v1alpha1.OperationScale, v1alpha1.OperationScaleToLevel, v1alpha1.OperationChangeFlavour,
		v1alpha1.OperationChangePackage, v1alpha1.OperationModify, v1alpha1.OperationOperate:
	default:
		return false
	}
	if op.Spec.Rollback != "" {
		return op.Spec.Rollback == v1alpha1.RollbackAuto
	}
	return svc != nil && svc.Spec.Rollback == v1alpha1.RollbackAuto
}

// followOccurrence prints the states an occurrence enters after its first seen ones, and
// its progress, until it ends (or, unless it rolls back by itself, is FAILED_TEMP): nil
// when COMPLETED, errOccurrenceFailed otherwise.
//
// After a decision (seen > 0), the FAILED_TEMP the occurrence was in does not count: only
// one it enters again after a new transition does.
func followOccurrence(ctx context.Context, out io.Writer, c client.Client, key client.ObjectKey, seen int64, auto bool, timeout time.Duration) error {
	decided := seen
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(300 * time.Millisecond)
	defer ticker.Stop()
	progress := ""
	for {
		op := &v1alpha1.Operation{}
		if err := c.Get(ctx, key, op); err != nil {
			return err
		}
		for k, tr := range op.Status.Transitions {
			if seq := lifecycle.Sequence(op, k); seq > seen {
				fmt.Fprintf(out, "%s %s: %s\n", tr.Time.Format("15:04:05"), tr.State, tr.Message)
				seen, progress = seq, ""
			}
		}
		state := op.Status.OperationState
		if !state.Final() && state != v1alpha1.StateFailedTemp && op.Status.Message != progress && op.Status.Message != lastMessage(op) {
			progress = op.Status.Message
			fmt.Fprintf(out, "  %s\n", progress)
		}
		switch {
		case state == v1alpha1.StateCompleted:
			return nil
		case state.Final():
			return fmt.Errorf("%w: %s %s: %s", errOccurrenceFailed, op.Name, state, op.Status.Message)
		case state == v1alpha1.StateFailedTemp && !auto && lastSequence(op) > decided:
			return fmt.Errorf("%w: %s is FAILED_TEMP: %s; decide with calaf retry|rollback|fail %s", errOccurrenceFailed, op.Name, op.Status.Message, op.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timeout: %s is %s after %s: %s", op.Name, orUnknown(string(state)), timeout, op.Status.Message)
		case <-ticker.C:
		}
	}
}

// lastSequence is the sequence number of the occurrence's last transition (0: none), which
// goes on when the oldest are dropped.
func lastSequence(op *v1alpha1.Operation) int64 {
	if n := len(op.Status.Transitions); n > 0 {
		return lifecycle.Sequence(op, n-1)
	}
	return 0
}

// lastMessage is the message of the occurrence's last transition.
func lastMessage(op *v1alpha1.Operation) string {
	if n := len(op.Status.Transitions); n > 0 {
		return op.Status.Transitions[n-1].Message
	}
	return ""
}

// newDecisionCommand is retry, rollback or fail: a decision on an occurrence in
// FAILED_TEMP.
func newDecisionCommand(use, short string, decide func(op *v1alpha1.Operation)) *cobra.Command {
	var kube kubeFlags
	var wait waitFlags
	cmd := &cobra.Command{
		Use:   use + " OCCURRENCE",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, namespace, err := kube.client()
			if err != nil {
				return err
			}
			key := client.ObjectKey{Namespace: namespace, Name: args[0]}
			op, seen, err := decideOn(ctx, c, key, decide)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "operation.calaf.io/%s: %s asked\n", op.Name, use)
			if !wait.wait {
				return nil
			}
			svc := &v1alpha1.Service{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: op.Spec.ServiceName}, svc); err != nil {
				svc = nil
			}
			return followOccurrence(ctx, cmd.OutOrStdout(), c, key, seen, use == "retry" && autoRollback(op, svc), wait.timeout)
		},
	}
	kube.register(cmd)
	cmd.Flags().BoolVarP(&wait.wait, "wait", "w", false, "follow the occurrence until it ends")
	cmd.Flags().DurationVar(&wait.timeout, "timeout", lifecycleTimeout, "how long --wait waits")
	return cmd
}

// decideOn records a decision on an occurrence in FAILED_TEMP (retrying on conflicts) and
// returns it with the number of transitions it had.
func decideOn(ctx context.Context, c client.Client, key client.ObjectKey, decide func(op *v1alpha1.Operation)) (*v1alpha1.Operation, int64, error) {
	for {
		op := &v1alpha1.Operation{}
		if err := c.Get(ctx, key, op); err != nil {
			return nil, 0, err
		}
		if op.Status.OperationState != v1alpha1.StateFailedTemp {
			return nil, 0, fmt.Errorf("%s is %s: retry, rollback and fail apply only to an occurrence in FAILED_TEMP", op.Name, orUnknown(string(op.Status.OperationState)))
		}
		seen := lastSequence(op)
		decide(op)
		err := c.Update(ctx, op)
		if err == nil {
			return op, seen, nil
		}
		if !isConflict(err) {
			return nil, 0, err
		}
	}
}

func newRetryCommand() *cobra.Command {
	return newDecisionCommand("retry", "Retry an occurrence in FAILED_TEMP: the steps that did not succeed run again",
		func(op *v1alpha1.Operation) { op.Spec.Retries++ })
}

func newRollbackCommand() *cobra.Command {
	return newDecisionCommand("rollback", "Roll back an occurrence in FAILED_TEMP: the Service runs what it ran before it",
		func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionRollback })
}

func newFailCommand() *cobra.Command {
	return newDecisionCommand("fail", "Fail an occurrence in FAILED_TEMP for good, leaving the Service as it is",
		func(op *v1alpha1.Operation) { op.Spec.Resolution = v1alpha1.ResolutionFail })
}

// inputsJSON encodes inputs for a spec.
func inputsJSON(inputs map[string]any) map[string]apiextensionsv1.JSON {
	if len(inputs) == 0 {
		return nil
	}
	out := make(map[string]apiextensionsv1.JSON, len(inputs))
	for name, value := range inputs {
		out[name] = apiextensionsv1.JSON{Raw: mustJSON(value)}
	}
	return out
}

// describeLifecycle writes the scaling aspects of a Service (those of a VNF are in its
// own section) and its alert rules.
func describeLifecycle(b *strings.Builder, svc *v1alpha1.Service) {
	lc := svc.Status.Lifecycle
	if lc == nil {
		return
	}
	if svc.Status.VNF == nil && len(lc.Aspects) > 0 {
		b.WriteString("\nScaling aspects:\n")
		for _, a := range lc.Aspects {
			fmt.Fprintf(b, "  %s: level %d (max %d), scales %s\n", a.AspectID, a.ScaleLevel, a.MaxScaleLevel, strings.Join(a.Nodes, ", "))
		}
	}
	if len(lc.AlertRules) > 0 {
		b.WriteString("\nAlert rules:\n")
		for _, r := range lc.AlertRules {
			fmt.Fprintf(b, "  %s: alert %s → %s (cooldown %ds, at most %d an hour)\n", r.Name, r.AlertName, r.Operation, r.CooldownSeconds, r.MaxPerHour)
		}
	}
}
