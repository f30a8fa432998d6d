//go:build !calaf_offline

package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/etsi"
	"calaf.io/calaf/internal/operator"
	"calaf.io/calaf/render"
	"calaf.io/calaf/source"
	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/sol004"
)

// maxUploadBytes is the largest package `calaf deploy` stores in a ConfigMap.
const maxUploadBytes = 900 << 10

type deployFlags struct {
	kube           kubeFlags
	inputs         inputFlags
	etsi           etsiFlags
	sha256         string
	gitURL         string
	gitRef         string
	gitPath        string
	secret         string
	insecure       bool
	interval       time.Duration
	timeout        time.Duration
	deletionPolicy string
	serviceAccount string
	// kubeconfigSecret names the Secret of the cluster to deploy into (spec.kubeConfig);
	// delegate hands the Service to that cluster's own operator.
	kubeconfigSecret string
	delegate         bool
	skipValidation   bool
	// notInstantiated creates the Service NOT_INSTANTIATED.
	notInstantiated bool
	// isolation and policy are those of the validation of a local package.
	isolation   isolation
	policy      renderPolicy
	wait        bool
	waitTimeout time.Duration
}

func newDeployCommand() *cobra.Command {
	var flags deployFlags
	cmd := &cobra.Command{
		Use:   "deploy NAME [SOURCE]",
		Short: "Create or update a Service from a package (local files are uploaded)",
		Long: "Create or update the Calaf Service NAME. SOURCE is a local package (directory, CSAR or YAML\n" +
			"file, validated here first, then uploaded to the cluster), an https:// URL of a CSAR, or an\n" +
			"oci:// reference; --git deploys from a git repository instead.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && flags.gitURL == "" {
				return usageError{fmt.Errorf("give a SOURCE or --git URL")}
			}
			if len(args) == 2 && flags.gitURL != "" {
				return usageError{fmt.Errorf("give either a SOURCE or --git, not both")}
			}
			ctx, cancel := commandContext(cmd)
			defer cancel()
			return runDeploy(ctx, cmd, flags, args)
		},
	}
	flags.kube.register(cmd)
	flags.inputs.register(cmd)
	flags.etsi.register(cmd)
	cmd.Flags().StringVar(&flags.sha256, "sha256", "", "expected SHA-256 of a package downloaded from a URL")
	cmd.Flags().StringVar(&flags.gitURL, "git", "", "URL of a git repository holding the package")
	cmd.Flags().StringVar(&flags.gitRef, "ref", "", "git branch, tag, or 40-hex commit (default: branch main)")
	cmd.Flags().StringVar(&flags.gitPath, "path", "", "path of the package in the git repository")
	cmd.Flags().StringVar(&flags.secret, "secret", "", "Secret with credentials for the source")
	cmd.Flags().BoolVar(&flags.insecure, "insecure", false, "allow a plain-HTTP OCI registry")
	cmd.Flags().DurationVar(&flags.interval, "interval", 10*time.Minute, "reconcile interval")
	cmd.Flags().DurationVar(&flags.timeout, "timeout", 5*time.Minute, "time for a new revision to become healthy")
	cmd.Flags().StringVar(&flags.deletionPolicy, "deletion-policy", "Delete", "Delete or Orphan the objects when the Service is deleted")
	cmd.Flags().StringVar(&flags.serviceAccount, "service-account", "", "service account the operator impersonates to apply")
	cmd.Flags().StringVar(&flags.kubeconfigSecret, "kubeconfig-secret", "", "deploy into the cluster of the kubeconfig in this Secret (key value or value.yaml) instead of this one; an --instantiate request's Kubernetes VIM (vimConnectionInfo) does the same")
	cmd.Flags().BoolVar(&flags.delegate, "delegate", false, "with --kubeconfig-secret: hand the Service to the Calaf operator serving that cluster, which deploys it (and keeps it running when this cluster cannot reach it)")
	cmd.Flags().BoolVar(&flags.skipValidation, "skip-validation", false, "do not validate a local package before uploading it")
	cmd.Flags().BoolVar(&flags.notInstantiated, "not-instantiated", false, "create the Service NOT_INSTANTIATED: nothing is deployed until `calaf instantiate`")
	flags.isolation.register(cmd)
	flags.policy.register(cmd)
	cmd.Flags().BoolVar(&flags.wait, "wait", false, "wait until the Service is Ready (or fails), showing progress")
	cmd.Flags().DurationVar(&flags.waitTimeout, "wait-timeout", 10*time.Minute, "how long --wait waits")
	return cmd
}

func runDeploy(ctx context.Context, cmd *cobra.Command, flags deployFlags, args []string) error {
	name := args[0]
	inputs, err := flags.inputs.parse()
	if err != nil {
		return err
	}
	request, err := flags.etsi.request()
	if err != nil {
		return err
	}
	instantiate, err := specRequest(request)
	if err != nil {
		return err
	}
	vim, err := requestVIM(flags.etsi.instantiate)
	if err != nil {
		return err
	}
	kubeConfig, err := kubeConfigOf(flags.kubeconfigSecret, vim, name)
	if err != nil {
		return err
	}
	if flags.delegate {
		if kubeConfig == nil {
			return usageError{fmt.Errorf("--delegate needs the cluster to delegate to: --kubeconfig-secret, or a VIM in the instantiate request")}
		}
		kubeConfig.Delegate = true
	}
	c, namespace, err := flags.kube.client()
	if err != nil {
		return err
	}
	svc := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	exists := true
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		exists = false
	}
	if exists && flags.notInstantiated && svc.Spec.InstantiationState != v1alpha1.NotInstantiated {
		return fmt.Errorf("Service %s/%s exists and is instantiated: terminate it with `calaf terminate %s --keep` to make it NOT_INSTANTIATED", namespace, name, name)
	}
	check := validation{inputs: inputs, retype: flags.inputs.retype, request: request, options: flags.etsi.options(request), skip: flags.skipValidation, warnings: cmd.ErrOrStderr(),
		isolation: &flags.isolation, policy: &flags.policy}
	defer flags.isolation.close()
	uploaded, err := setSource(ctx, c, svc, flags, args[1], check)
	if err != nil {
		return err
	}
	src := svc.Spec.Source
	setSpec := func(svc *v1alpha1.Service) {
		svc.Spec.Source = src
		svc.Spec.Inputs = map[string]apiextensionsv1.JSON{}
		for key, value := range inputs {
			svc.Spec.Inputs[key] = apiextensionsv1.JSON{Raw: mustJSON(value)}
		}
		svc.Spec.Instantiate = instantiate
		svc.Spec.Interval = &metav1.Duration{Duration: flags.interval}
		svc.Spec.Timeout = &metav1.Duration{Duration: flags.timeout}
		svc.Spec.DeletionPolicy = v1alpha1.DeletionPolicy(flags.deletionPolicy)
		svc.Spec.ServiceAccountName = flags.serviceAccount
		svc.Spec.KubeConfig = kubeConfig
		if flags.notInstantiated {
			svc.Spec.InstantiationState = v1alpha1.NotInstantiated
		}
	}
	if vim != nil {
		if err := storeVIMSecret(ctx, c, svc, vim); err != nil {
			return err
		}
	}
	if err := writeService(ctx, cmd, c, svc, exists, uploaded, setSpec); err != nil {
		return err
	}
	if vim != nil && !exists {
		if err := storeVIMSecret(ctx, c, svc, vim); err != nil { // now owned by the Service
			return err
		}
	}
	if !flags.wait {
		return nil
	}
	return waitForService(ctx, cmd.OutOrStdout(), c, client.ObjectKeyFromObject(svc), svc.Generation, flags.waitTimeout)
}

// setSource points the Service at its package: a git repository, an HTTP(S) URL, an OCI
// reference, or a local package, validated and uploaded to a ConfigMap (uploaded true).
func setSource(ctx context.Context, c client.Client, svc *v1alpha1.Service, flags deployFlags, src string, check validation) (uploaded bool, err error) {
	var secret *v1alpha1.LocalObjectReference
	if flags.secret != "" {
		secret = &v1alpha1.LocalObjectReference{Name: flags.secret}
	}
	switch {
	case flags.gitURL != "":
		svc.Spec.Source = v1alpha1.Source{Git: &v1alpha1.GitSource{URL: flags.gitURL, Path: flags.gitPath, Ref: gitRef(flags.gitRef), SecretRef: secret}}
	case strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://"):
		svc.Spec.Source = v1alpha1.Source{URL: src, SHA256: flags.sha256, SecretRef: secret}
	case strings.HasPrefix(src, "oci://"):
		svc.Spec.Source = v1alpha1.Source{OCI: ociSource(src)}
		svc.Spec.Source.OCI.Insecure = flags.insecure
		svc.Spec.Source.OCI.SecretRef = secret
	default:
		archive, err := packLocal(ctx, src, svc.Name, svc.Namespace, check)
		if err != nil {
			return false, err
		}
		svc.Spec.Source = v1alpha1.Source{Upload: &v1alpha1.UploadSource{ConfigMapName: uploadName(svc.Name), SHA256: source.SHA256(archive)}}
		return true, storeUpload(ctx, c, svc.Namespace, uploadName(svc.Name), archive)
	}
	return false, nil
}

// writeService creates or updates the Service with the spec setSpec gives it, ties an
// uploaded package to it, and says so. An update that conflicts with a change made since
// the Service was read (the operator's, a lifecycle occurrence's) is made again on the
// Service as it is now, so that only the fields deploy sets change.
func writeService(ctx context.Context, cmd *cobra.Command, c client.Client, svc *v1alpha1.Service, exists, uploaded bool, setSpec func(*v1alpha1.Service)) error {
	var err error
	setSpec(svc)
	if exists {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			err := c.Update(ctx, svc)
			if apierrors.IsConflict(err) {
				if getErr := c.Get(ctx, client.ObjectKeyFromObject(svc), svc); getErr != nil {
					return getErr
				}
				setSpec(svc)
			}
			return err
		})
	} else {
		// The operator would add its finalizer on the first reconcile; doing it here
		// saves that write.
		svc.Finalizers = []string{v1alpha1.ServiceFinalizer}
		err = c.Create(ctx, svc)
	}
	if err != nil {
		return err
	}
	if uploaded {
		if err := ownUpload(ctx, c, svc); err != nil {
			return err
		}
	}
	verb := "created"
	if exists {
		verb = "updated"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "service %s/%s %s (generation %d)\n", svc.Namespace, svc.Name, verb, svc.Generation)
	return nil
}

// validation says how deploy validates a local package before uploading it.
type validation struct {
	inputs map[string]any
	// retype gives the inputs the package declares as text the text they were given.
	retype   func(inputs map[string]any, pkg *tosca.Package) error
	request  *etsi.Request
	options  tosca.CompileOptions
	skip     bool
	warnings io.Writer
	// isolation runs the compile and render in a worker; policy is what the render must pass.
	isolation *isolation
	policy    *renderPolicy
}

// packLocal validates a local package (unless told not to) and packs it for upload.
// A signed CSAR (SOL004 option 2) is uploaded as it is, so the operator verifies its
// signature.
func packLocal(ctx context.Context, path, service, namespace string, check validation) ([]byte, error) {
	pkg, envelope, err := sol004.Open(path, tosca.DefaultLimits())
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	if check.retype != nil {
		if err := check.retype(check.inputs, pkg); err != nil {
			return nil, err
		}
	}
	if !check.skip {
		resolved, err := resolveCached(ctx, pkg, sol004.Policy{})
		if err != nil {
			return nil, err
		}
		if err := check.run(ctx, resolved, service, namespace); err != nil {
			return nil, err
		}
	}
	var archive []byte
	if envelope != nil {
		archive, err = os.ReadFile(path)
	} else {
		archive, err = source.Pack(pkg)
	}
	if err != nil {
		return nil, err
	}
	if len(archive) > maxUploadBytes {
		return nil, fmt.Errorf("the package is %d bytes compressed, more than a ConfigMap holds (%d): publish it over HTTP, git or OCI instead", len(archive), maxUploadBytes)
	}
	return archive, nil
}

func uploadName(service string) string {
	return service + ".calaf-package"
}

// storeUpload creates or replaces the ConfigMap holding an uploaded package.
func storeUpload(ctx context.Context, c client.Client, namespace, name string, archive []byte) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["app.kubernetes.io/managed-by"] = "calaf-cli"
		cm.BinaryData = map[string][]byte{source.UploadKey: archive}
		cm.Data = nil
		return nil
	})
	return err
}

// ownUpload makes the Service own its package ConfigMap, so they are deleted together.
func ownUpload(ctx context.Context, c client.Client, svc *v1alpha1.Service) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: uploadName(svc.Name), Namespace: svc.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
		return controllerutil.SetOwnerReference(svc, cm, operator.NewScheme())
	})
	return err
}

func gitRef(ref string) *v1alpha1.GitRef {
	switch {
	case ref == "":
		return nil
	case len(ref) == 40 && strings.Trim(ref, "0123456789abcdef") == "":
		return &v1alpha1.GitRef{Commit: ref}
	case strings.HasPrefix(ref, "refs/tags/"):
		return &v1alpha1.GitRef{Tag: strings.TrimPrefix(ref, "refs/tags/")}
	case strings.HasPrefix(ref, "tag:"):
		return &v1alpha1.GitRef{Tag: strings.TrimPrefix(ref, "tag:")}
	}
	return &v1alpha1.GitRef{Branch: strings.TrimPrefix(ref, "refs/heads/")}
}

// ociSource parses oci://host/repo[:tag][@sha256:digest].
func ociSource(ref string) *v1alpha1.OCISource {
	rest := strings.TrimPrefix(ref, "oci://")
	src := &v1alpha1.OCISource{}
	if at := strings.Index(rest, "@"); at >= 0 {
		src.Digest, rest = rest[at+1:], rest[:at]
	}
	if colon := strings.LastIndex(rest, ":"); colon > strings.LastIndex(rest, "/") {
		src.Tag, rest = rest[colon+1:], rest[:colon]
	}
	if u, err := url.Parse("oci://" + rest); err == nil {
		src.URL = u.String()
	} else {
		src.URL = "oci://" + rest
	}
	return src
}

// run validates a local package before deploy uploads it, as validate does: compiled and
// rendered in a worker, the render checked against the policy, warnings written.
func (check validation) run(ctx context.Context, pkg *tosca.Package, service, namespace string) error {
	compiler, err := check.isolation.compiler()
	if err != nil {
		return err
	}
	compiled, err := compiler.CompileWith(ctx, pkg, check.inputs, check.options)
	if err != nil {
		return err
	}
	renderer, err := check.isolation.renderer()
	if err != nil {
		return err
	}
	result, err := renderer.Render(ctx, compiled, render.Options{Service: service, Namespace: namespace, Instantiate: check.request})
	if err != nil {
		return err
	}
	if err := check.policy.check(compiled, namespace, nil, result); err != nil {
		return err
	}
	writeWarnings(check.warnings, result.Warnings)
	return nil
}
