//go:build !calaf_offline

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
)

// The commands of a VNF instance's life as SOL003 has it: instantiate a NOT_INSTANTIATED
// Service, terminate one (keeping it NOT_INSTANTIATED, or deleting it), change its
// flavour, cancel an occurrence.

func newInstantiateCommand() *cobra.Command {
	var file, flavour, level string
	return serviceCommand{
		use:      "instantiate",
		short:    "Instantiate a NOT_INSTANTIATED Service (INSTANTIATE): it deploys its package",
		waitHelp: "follow the occurrence until it ends", waitShort: "w", waitTimeout: lifecycleTimeout,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&file, "instantiate", "", "an ETSI SOL003 InstantiateVnfRequest (JSON or YAML: flavourId, instantiationLevelId, additionalParams)")
			cmd.Flags().StringVar(&flavour, "flavour", "", "the deployment flavour (overrides the request's flavourId)")
			cmd.Flags().StringVar(&level, "level", "", "the instantiation level (overrides the request's instantiationLevelId)")
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			request, err := instantiateRequestOf(file, flavour, level)
			if err != nil {
				return err
			}
			if err := targetVIM(ctx, c, svc, file); err != nil {
				return err
			}
			spec := v1alpha1.OperationSpec{Type: v1alpha1.OperationInstantiate, Instantiate: request}
			return startOccurrence(ctx, cmd.OutOrStdout(), c, svc, spec, wait)
		},
	}.command()
}

// instantiateRequestOf reads an instantiate request from a file (none: nil) and sets the
// flavour and level given over it.
func instantiateRequestOf(file, flavour, level string) (*v1alpha1.InstantiateRequest, error) {
	var request *v1alpha1.InstantiateRequest
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, usageError{fmt.Errorf("instantiate request: %w", err)}
		}
		parsed, err := etsi.ParseRequest(file, data)
		if err != nil {
			return nil, err
		}
		if request, err = specRequest(parsed); err != nil {
			return nil, err
		}
	}
	if flavour == "" && level == "" {
		return request, nil
	}
	if request == nil {
		request = &v1alpha1.InstantiateRequest{}
	}
	if flavour != "" {
		request.FlavourID = flavour
	}
	if level != "" {
		request.InstantiationLevelID = level
	}
	return request, nil
}

func newTerminateCommand() *cobra.Command {
	var keep, forceful bool
	var graceful time.Duration
	return serviceCommand{
		use:      "terminate",
		short:    "Terminate a Service (TERMINATE): everything it runs goes; with --keep it stays, NOT_INSTANTIATED, else it is deleted",
		waitHelp: "follow the occurrence until it ends", waitShort: "w", waitTimeout: lifecycleTimeout,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().BoolVar(&keep, "keep", false, "keep the Service, NOT_INSTANTIATED (SOL003: the instance stays until deleted)")
			cmd.Flags().BoolVar(&forceful, "forceful", false, "skip the terminate_start hooks and the nodes' stop and delete operations")
			cmd.Flags().DurationVar(&graceful, "graceful-timeout", 0, "how long the graceful part may take (default 5m): then the stop and delete operations are skipped")
			cmd.PreRunE = func(*cobra.Command, []string) error {
				switch {
				case forceful && graceful != 0:
					return usageError{errors.New("--graceful-timeout applies to a graceful termination, not with --forceful")}
				case graceful < 0 || graceful != 0 && (graceful < time.Second || graceful > 24*time.Hour):
					return usageError{fmt.Errorf("--graceful-timeout %v: between 1s and 24h", graceful)}
				}
				return nil
			}
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			req := &v1alpha1.TerminateRequest{KeepInstance: keep, TerminationType: v1alpha1.TerminationGraceful, GracefulTerminationTimeout: int32(graceful / time.Second)}
			if forceful {
				req.TerminationType = v1alpha1.TerminationForceful
			}
			return startOccurrence(ctx, cmd.OutOrStdout(), c, svc, v1alpha1.OperationSpec{Type: v1alpha1.OperationTerminate, Terminate: req}, wait)
		},
	}.command()
}

func newChangeFlavourCommand() *cobra.Command {
	var flavour, level string
	return serviceCommand{
		use:      "change-flavour",
		short:    "Move an ETSI VNF's Service to another deployment flavour (CHANGE_FLAVOUR)",
		waitHelp: "follow the occurrence until it ends", waitShort: "w", waitTimeout: lifecycleTimeout,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&flavour, "flavour", "", "the deployment flavour to move to (calaf status lists them)")
			cmd.Flags().StringVar(&level, "level", "", "its instantiation level (default: the flavour's default level)")
			cmd.PreRunE = func(*cobra.Command, []string) error {
				if flavour == "" {
					return usageError{errors.New("give --flavour F")}
				}
				return nil
			}
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			spec := v1alpha1.OperationSpec{Type: v1alpha1.OperationChangeFlavour,
				ChangeFlavour: &v1alpha1.ChangeFlavourRequest{NewFlavourID: flavour, InstantiationLevelID: level}}
			return startOccurrence(ctx, cmd.OutOrStdout(), c, svc, spec, wait)
		},
	}.command()
}

func newCancelCommand() *cobra.Command {
	var kube kubeFlags
	var wait waitFlags
	var forceful bool
	cmd := &cobra.Command{
		Use:   "cancel OCCURRENCE",
		Short: "Cancel an occurrence: one STARTING ends ROLLED_BACK; one running goes FAILED_TEMP after its running step (--forceful: at once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, namespace, err := kube.client()
			if err != nil {
				return err
			}
			mode := v1alpha1.CancelGraceful
			if forceful {
				mode = v1alpha1.CancelForceful
			}
			key := client.ObjectKey{Namespace: namespace, Name: args[0]}
			op, seen, err := askCancel(ctx, c, key, mode)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "operation.calaf.io/%s: cancel %s asked\n", op.Name, mode)
			if !wait.wait {
				return nil
			}
			return followCancel(ctx, cmd, c, key, seen, wait.timeout)
		},
	}
	kube.register(cmd)
	cmd.Flags().BoolVar(&forceful, "forceful", false, "stop at once, leaving the running step where it is (default: after it)")
	cmd.Flags().BoolVarP(&wait.wait, "wait", "w", false, "follow the occurrence until the cancel took effect")
	cmd.Flags().DurationVar(&wait.timeout, "timeout", lifecycleTimeout, "how long --wait waits")
	return cmd
}

// askCancel sets an occurrence's cancel (retrying on conflicts) and returns it with the
// sequence number of its last transition.
func askCancel(ctx context.Context, c client.Client, key client.ObjectKey, mode v1alpha1.CancelMode) (*v1alpha1.Operation, int64, error) {
	for {
		op := &v1alpha1.Operation{}
		if err := c.Get(ctx, key, op); err != nil {
			return nil, 0, err
		}
		switch state := op.Status.OperationState; {
		case op.Spec.Cancel != "":
			return nil, 0, fmt.Errorf("%s was asked to cancel already (%s)", op.Name, op.Spec.Cancel)
		case state != "" && state != v1alpha1.StateStarting && state != v1alpha1.StateProcessing && state != v1alpha1.StateRollingBack:
			return nil, 0, fmt.Errorf("%s is %s: cancel applies only to an occurrence STARTING, PROCESSING or ROLLING_BACK", op.Name, state)
		}
		seen := lastSequence(op)
		op.Spec.Cancel = mode
		err := c.Update(ctx, op)
		if err == nil {
			return op, seen, nil
		}
		if !isConflict(err) {
			return nil, 0, err
		}
	}
}

// followCancel follows a cancelled occurrence until it stops: nil once the cancel took
// effect (ROLLED_BACK or FAILED_TEMP, cancelled), an error when it ended otherwise first.
func followCancel(ctx context.Context, cmd *cobra.Command, c client.Client, key client.ObjectKey, seen int64, timeout time.Duration) error {
	err := followOccurrence(ctx, cmd.OutOrStdout(), c, key, seen, false, timeout)
	if err != nil && !errors.Is(err, errOccurrenceFailed) {
		return err
	}
	op := &v1alpha1.Operation{}
	if getErr := c.Get(ctx, key, op); getErr != nil {
		return getErr
	}
	if ready := apimeta.FindStatusCondition(op.Status.Conditions, v1alpha1.ConditionReady); ready != nil && ready.Reason == v1alpha1.OccurrenceCancelled {
		fmt.Fprintf(cmd.OutOrStdout(), "operation.calaf.io/%s cancelled: %s\n", op.Name, op.Status.OperationState)
		return nil
	}
	return fmt.Errorf("%w: %s went %s before the cancel took effect: %s", errOccurrenceFailed, op.Name, op.Status.OperationState, op.Status.Message)
}
