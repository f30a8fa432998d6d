//go:build !calaf_offline

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/internal/jsonvalue"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
)

func isConflict(err error) bool { return apierrors.IsConflict(err) }

// upgradeFlags are the flags of calaf upgrade.
type upgradeFlags struct {
	inputs         inputFlags
	gitRef         string
	rollback       string
	skipValidation bool
	// isolation and policy are those of the validation of a local package, as in deploy.
	isolation isolation
	policy    renderPolicy
}

func newUpgradeCommand() *cobra.Command {
	var flags upgradeFlags
	return serviceCommand{
		use:   "upgrade",
		short: "Change a Service's package (CHANGE_PACKAGE): node by node in dependency order, each health-gated",
		extra: "[PACKAGE]", maxExtra: 1,
		waitHelp: "follow the occurrence until it ends", waitShort: "w", waitTimeout: lifecycleTimeout,
		flags: func(cmd *cobra.Command) {
			flags.inputs.register(cmd)
			flags.isolation.register(cmd)
			flags.policy.register(cmd)
			cmd.Flags().StringVar(&flags.gitRef, "git-ref", "", "move a git Service to this branch, tag or commit (PACKAGE: another repository URL, or none)")
			cmd.Flags().StringVar(&flags.rollback, "rollback", "", "Auto: roll back by itself if the change fails; Manual: wait in FAILED_TEMP (default: the Service's)")
			cmd.Flags().BoolVar(&flags.skipValidation, "skip-validation", false, "do not validate a local package before uploading it")
			cmd.PreRunE = func(*cobra.Command, []string) error {
				switch strings.ToLower(flags.rollback) {
				case "", "auto", "manual":
					return nil
				}
				return usageError{fmt.Errorf("--rollback %q: Auto or Manual", flags.rollback)}
			}
		},
		run: func(ctx context.Context, cmd *cobra.Command, c client.WithWatch, svc *v1alpha1.Service, wait waitFlags) error {
			args := cmd.Flags().Args()
			if len(args) < 2 && flags.gitRef == "" {
				return usageError{errors.New("give a PACKAGE, or --git-ref for a Service deployed from git")}
			}
			req, err := changeRequest(ctx, cmd, c, svc, flags, args[1:])
			if err != nil {
				return err
			}
			spec := v1alpha1.OperationSpec{Type: v1alpha1.OperationChangePackage, ChangePackage: req}
			if flags.rollback != "" {
				spec.Rollback = v1alpha1.RollbackManual
				if strings.EqualFold(flags.rollback, "auto") {
					spec.Rollback = v1alpha1.RollbackAuto
				}
			}
			return startOccurrence(ctx, cmd.OutOrStdout(), c, svc, spec, wait)
		},
	}.command()
}

// changeRequest builds the CHANGE_PACKAGE request: the new source (a local package is
// validated with the Service's inputs and uploaded to a ConfigMap of its own, so that the
// one it replaces stays for a rollback), and the inputs when -i gives some.
func changeRequest(ctx context.Context, cmd *cobra.Command, c client.Client, svc *v1alpha1.Service, flags upgradeFlags, pkg []string) (*v1alpha1.ChangePackageRequest, error) {
	given, err := flags.inputs.parse()
	if err != nil {
		return nil, err
	}
	inputs := map[string]any{}
	for name, raw := range svc.Spec.Inputs {
		inputs[name] = jsonvalue.Decode(raw)
	}
	maps.Copy(inputs, given)
	req := &v1alpha1.ChangePackageRequest{}
	if len(given) > 0 {
		req.Inputs = inputsJSON(inputs)
	}
	switch {
	case len(pkg) == 0:
		if svc.Spec.Source.Git == nil {
			return nil, usageError{fmt.Errorf("Service %s is not deployed from git: give a PACKAGE", svc.Name)}
		}
		req.Source = v1alpha1.Source{Git: svc.Spec.Source.Git.DeepCopy()}
		req.Source.Git.Ref = gitRef(flags.gitRef)
	case strings.HasPrefix(pkg[0], "https://") || strings.HasPrefix(pkg[0], "http://"):
		req.Source = v1alpha1.Source{URL: pkg[0]}
		if flags.gitRef != "" {
			req.Source = v1alpha1.Source{Git: &v1alpha1.GitSource{URL: pkg[0], Ref: gitRef(flags.gitRef)}}
		}
	case strings.HasPrefix(pkg[0], "oci://"):
		req.Source = v1alpha1.Source{OCI: ociSource(pkg[0])}
	default:
		source, err := uploadRevision(ctx, cmd, c, svc, pkg[0], inputs, flags)
		if err != nil {
			return nil, err
		}
		req.Source = source
	}
	return req, nil
}

// uploadRevision validates a local package and uploads it to a ConfigMap named by its
// digest, owned by the Service.
func uploadRevision(ctx context.Context, cmd *cobra.Command, c client.Client, svc *v1alpha1.Service, path string, inputs map[string]any, flags upgradeFlags) (v1alpha1.Source, error) {
	check := validation{inputs: inputs, skip: flags.skipValidation, warnings: cmd.ErrOrStderr(), retype: flags.inputs.retype,
		isolation: &flags.isolation, policy: &flags.policy}
	defer flags.isolation.close()
	if svc.Spec.Instantiate != nil {
		request, err := specToRequest(svc.Spec.Instantiate)
		if err != nil {
			return v1alpha1.Source{}, err
		}
		check.request, check.options = request, tosca.CompileOptions{Flavour: request.FlavourID}
	}
	archive, err := packLocal(ctx, path, svc.Name, svc.Namespace, check)
	if err != nil {
		return v1alpha1.Source{}, err
	}
	sum := source.SHA256(archive)
	name := fmt.Sprintf("%s-%s", uploadName(svc.Name), sum[:12])
	if err := storeUpload(ctx, c, svc.Namespace, name, archive); err != nil {
		return v1alpha1.Source{}, err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: svc.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		return controllerutil.SetOwnerReference(svc, cm, operator.NewScheme())
	}); err != nil {
		return v1alpha1.Source{}, err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "package uploaded to ConfigMap %s (sha256:%s)\n", name, sum)
	return v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: name, SHA256: sum}}, nil
}

func newOpsCommand() *cobra.Command {
	var kube kubeFlags
	var hooks bool
	cmd := &cobra.Command{
		Use:   "ops [SERVICE]",
		Short: "List operation occurrences (of a Service): type, state, age, reason",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext(cmd)
			defer cancel()
			c, namespace, err := kube.client()
			if err != nil {
				return err
			}
			list := &v1alpha1.OperationList{}
			if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
				return err
			}
			service := ""
			if len(args) == 1 {
				service = args[0]
			}
			return printOccurrences(cmd, list.Items, service, hooks)
		},
	}
	kube.register(cmd)
	cmd.Flags().BoolVar(&hooks, "hooks", false, "also list the hook runs of occurrences")
	return cmd
}

// printOccurrences writes a table of occurrences, oldest first.
func printOccurrences(cmd *cobra.Command, ops []v1alpha1.Operation, service string, hooks bool) error {
	sort.Slice(ops, func(i, j int) bool {
		if !ops[i].CreationTimestamp.Equal(&ops[j].CreationTimestamp) {
			return ops[i].CreationTimestamp.Before(&ops[j].CreationTimestamp)
		}
		return ops[i].Name < ops[j].Name
	})
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSERVICE\tTYPE\tSTATE\tAGE\tREASON")
	for _, op := range ops {
		if service != "" && op.Spec.ServiceName != service || !hooks && op.Labels[v1alpha1.LabelOccurrence] != "" {
			continue
		}
		kind := string(op.Spec.Type)
		if op.Spec.Type == v1alpha1.OperationCustom || kind == "" {
			kind = "CUSTOM " + op.Spec.Node + " " + op.Spec.Operation
		}
		state := string(op.Status.OperationState)
		if state == "" {
			state = "(new)"
		}
		age := time.Since(op.CreationTimestamp.Time).Round(time.Second)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", op.Name, op.Spec.ServiceName, kind, state, age, text.Truncate(reasonOf(&op), 90))
	}
	return w.Flush()
}

// reasonOf is what an occurrence says of where it stands: its trigger, a cancel not
// carried out yet, its message, and the pods it affected.
func reasonOf(op *v1alpha1.Operation) string {
	reason := op.Status.Message
	if op.Spec.Cancel != "" && !op.Status.OperationState.Final() && !apimeta.IsStatusConditionTrue(op.Status.Conditions, v1alpha1.ConditionCancelled) {
		reason = "cancel " + string(op.Spec.Cancel) + " asked: " + reason
	}
	if by := op.Spec.TriggeredBy; by != nil {
		reason = "alert " + by.AlertName + ": " + reason
	}
	if pods := affectedSummary(op.Status.AffectedPods); pods != "" {
		reason = pods + "; " + reason
	}
	return reason
}

// affectedSummary counts the pods an occurrence affected: "pods +2 -1 ~0".
func affectedSummary(pods []v1alpha1.AffectedPod) string {
	if len(pods) == 0 {
		return ""
	}
	count := map[v1alpha1.ChangeType]int{}
	for _, p := range pods {
		count[p.ChangeType]++
	}
	return fmt.Sprintf("pods +%d -%d ~%d", count[v1alpha1.ChangeAdded], count[v1alpha1.ChangeRemoved], count[v1alpha1.ChangeModified])
}

// specToRequest reads a Service's spec.instantiate as a parsed request.
func specToRequest(spec *v1alpha1.InstantiateRequest) (*etsi.Request, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	return etsi.FromMap("spec.instantiate", raw)
}
