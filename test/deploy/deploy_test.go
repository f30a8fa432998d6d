// Package deploy_test checks the manifests in deploy/: every kustomization builds with
// kubectl and a real kube-apiserver accepts all it contains.
package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"calaf.io/calaf/internal/cli"
)

var (
	apiClient client.Client
	testEnv   *envtest.Environment
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run `make test-unit` (it builds kube-apiserver, etcd and kubectl and sets it)")
		return 1
	}
	testEnv = &envtest.Environment{CRDDirectoryPaths: []string{"../../deploy/crd"}}
	config, err := testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer testEnv.Stop()
	if apiClient, err = client.New(config, client.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// The overlays users apply build, and the API server accepts every object in them (CRDs
// and namespaces created, the rest by server-side dry-run: schemas, RBAC references,
// Deployment validation).
func TestOverlaysAreAccepted(t *testing.T) {
	for _, overlay := range []string{"default", "namespaced", "lockdown", "test-ground", "sharding", webhookOverlay(t), componentOverlay(t, "verify")} {
		t.Run(filepath.Base(overlay), func(t *testing.T) {
			g := NewWithT(t)
			objects := kustomize(t, overlay)
			g.Expect(kinds(objects)).To(ContainElements("CustomResourceDefinition", "Deployment", "ServiceAccount"))
			slices.SortStableFunc(objects, func(a, b *unstructured.Unstructured) int { return order(a) - order(b) })
			for _, obj := range objects {
				opts := []client.PatchOption{client.FieldOwner("calaf-deploy-test"), client.ForceOwnership}
				if order(obj) > 1 {
					opts = append(opts, client.DryRunAll)
				}
				g.Expect(apiClient.Patch(context.Background(), obj, client.Apply, opts...)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
			}
		})
	}
}

// The webhook component turns the push webhook and the Alertmanager receiver on, each with
// its own token from a mounted Secret, over TLS with a mounted certificate, and exposes it
// through a Service whose target port the container declares.
func TestWebhookComponent(t *testing.T) {
	g := NewWithT(t)
	var deployment appsv1.Deployment
	var service corev1.Service
	for _, obj := range kustomize(t, webhookOverlay(t)) {
		switch obj.GetKind() {
		case "Deployment":
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deployment)).To(Succeed())
		case "Service":
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &service)).To(Succeed())
		}
	}
	container := deployment.Spec.Template.Spec.Containers[0]
	g.Expect(container.Args).To(ContainElements("--webhook-bind-address=:9292", "--webhook-token-file=/etc/calaf/webhook/token"))
	g.Expect(container.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "webhook-token", MountPath: "/etc/calaf/webhook", ReadOnly: true}))
	g.Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.Secret.SecretName", "calaf-webhook-token")))
	g.Expect(container.Args).To(ContainElements("--alert-token-file=/etc/calaf/alerts/token",
		"--webhook-tls-cert-file=/etc/calaf/tls/tls.crt", "--webhook-tls-key-file=/etc/calaf/tls/tls.key"))
	g.Expect(container.Args).NotTo(ContainElement("--webhook-insecure-http"))
	g.Expect(container.VolumeMounts).To(ContainElements(corev1.VolumeMount{Name: "alert-token", MountPath: "/etc/calaf/alerts", ReadOnly: true},
		corev1.VolumeMount{Name: "webhook-tls", MountPath: "/etc/calaf/tls", ReadOnly: true}))
	g.Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElements(HaveField("VolumeSource.Secret.SecretName", "calaf-alert-token"),
		HaveField("VolumeSource.Secret.SecretName", "calaf-webhook-tls")))
	g.Expect(container.Ports).To(ContainElement(corev1.ContainerPort{Name: "webhook", ContainerPort: 9292}))
	operator, _, err := cli.NewRootCommand(cli.Streams{In: &bytes.Buffer{}, Out: io.Discard, Err: io.Discard}).Find([]string{"operator"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(operator.ParseFlags(container.Args)).To(Succeed(), "the component passes flags the operator knows")
	g.Expect(service.Spec.Ports).To(HaveLen(1))
	g.Expect(service.Spec.Ports[0].TargetPort.String()).To(Equal("webhook"))
	g.Expect(service.Spec.Selector).To(Equal(deployment.Spec.Selector.MatchLabels))
}

// The verify component requires signed packages of every Service: the operator gets
// --verify-mode and --verify-anchors (flags it knows) with the anchors ConfigMap mounted
// where the flag says.
func TestVerifyComponent(t *testing.T) {
	g := NewWithT(t)
	var deployment appsv1.Deployment
	for _, obj := range kustomize(t, componentOverlay(t, "verify")) {
		if obj.GetKind() == "Deployment" {
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deployment)).To(Succeed())
		}
	}
	container := deployment.Spec.Template.Spec.Containers[0]
	g.Expect(container.Args).To(ContainElements("--verify-mode=Enforce", "--verify-anchors=/etc/calaf/trust-anchors/ca.crt"))
	g.Expect(container.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "trust-anchors", MountPath: "/etc/calaf/trust-anchors", ReadOnly: true}))
	g.Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.ConfigMap.Name", "calaf-trust-anchors")))
	operator, _, err := cli.NewRootCommand(cli.Streams{In: &bytes.Buffer{}, Out: io.Discard, Err: io.Discard}).Find([]string{"operator"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(operator.ParseFlags(container.Args)).To(Succeed())
	g.Expect(operator.Flags().Lookup("verify-mode").Value.String()).To(Equal("Enforce"))
}

// webhookOverlay writes an overlay of deploy/default with the webhook component, as the
// component's comment tells users to.
func webhookOverlay(t *testing.T) string {
	return componentOverlay(t, "webhook")
}

// componentOverlay writes an overlay of deploy/default with a component of deploy/.
func componentOverlay(t *testing.T, component string) string {
	t.Helper()
	deploy, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "with-"+component)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	relative := func(name string) string { // kustomize wants relative paths
		rel, err := filepath.Rel(dir, filepath.Join(deploy, name))
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- %s\ncomponents:\n- %s\n",
		relative("default"), relative(component))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kustomize builds an overlay (a directory of deploy/, or a path) with kubectl.
func kustomize(t *testing.T, overlay string) []*unstructured.Unstructured {
	t.Helper()
	if !filepath.IsAbs(overlay) {
		overlay = filepath.Join("..", "..", "deploy", overlay)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), "kustomize", overlay)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl kustomize %s: %v: %s", overlay, err, stderr.String())
	}
	var objects []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objects
		}
		if err != nil {
			t.Fatalf("decoding the output of kubectl kustomize %s: %v", overlay, err)
		}
		if len(obj.Object) > 0 {
			objects = append(objects, obj)
		}
	}
}

// order puts the objects others need first: CRDs, then namespaces, then the rest.
func order(obj *unstructured.Unstructured) int {
	switch obj.GetKind() {
	case "CustomResourceDefinition":
		return 0
	case "Namespace":
		return 1
	}
	return 2
}

func kinds(objects []*unstructured.Unstructured) []string {
	var out []string
	for _, obj := range objects {
		out = append(out, obj.GetKind())
	}
	return out
}

// On the test ground the operator uses the host network, so its ports are the node's: it
// must be replaced with Recreate, or a restart (make demo does one) never finishes.
func TestTestGroundOperatorIsRecreated(t *testing.T) {
	g := NewWithT(t)
	for _, obj := range kustomize(t, "test-ground") {
		if obj.GetKind() != "Deployment" {
			continue
		}
		var deployment appsv1.Deployment
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deployment)).To(Succeed())
		g.Expect(deployment.Spec.Template.Spec.HostNetwork).To(BeTrue())
		g.Expect(deployment.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		return
	}
	t.Fatal("no Deployment in deploy/test-ground")
}

// The sharding overlay runs the main operator on the Services without a shard label and a
// shard on those labelled for it: two selectors that never select the same Service, and
// Deployments whose pod selectors do not overlap.
func TestShardingOverlay(t *testing.T) {
	g := NewWithT(t)
	selectors := map[string]string{}
	podSelectors := map[string]string{}
	for _, obj := range kustomize(t, "sharding") {
		if obj.GetKind() != "Deployment" {
			continue
		}
		var args []string
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		if len(containers) > 0 {
			args, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		}
		for _, arg := range args {
			if value, ok := strings.CutPrefix(arg, "--watch-label-selector="); ok {
				selectors[obj.GetName()] = value
			}
		}
		name, _, _ := unstructured.NestedString(obj.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/name")
		podSelectors[obj.GetName()] = name
	}
	g.Expect(selectors).To(Equal(map[string]string{
		"calaf-operator":         "!sharding.calaf.io/key",
		"calaf-operator-shard-1": "sharding.calaf.io/key=shard-1",
	}))
	g.Expect(podSelectors["calaf-operator"]).NotTo(Equal(podSelectors["calaf-operator-shard-1"]))
}

// In lockdown mode the operator's cluster-wide rules cover only its own resources and
// Events: no Secrets, ConfigMaps, pods or workloads anywhere, impersonation bounded by
// name; Secrets only in its own namespace (its state); the flags that turn it on.
func TestLockdownRBAC(t *testing.T) {
	g := NewWithT(t)
	var args []string
	for _, obj := range kustomize(t, "lockdown") {
		switch obj.GetKind() {
		case "ClusterRole":
			var role rbacv1.ClusterRole
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role)).To(Succeed())
			for _, rule := range role.Rules {
				if slices.Contains(rule.Verbs, "impersonate") {
					g.Expect(rule.Resources).To(Equal([]string{"serviceaccounts"}), role.Name)
					g.Expect(rule.ResourceNames).To(Equal([]string{"calaf-tenant"}), role.Name)
					continue
				}
				if slices.Equal(rule.Verbs, []string{"list"}) && (slices.Equal(rule.Resources, []string{"nodes"}) || slices.Equal(rule.Resources, []string{"servicecidrs"})) {
					continue // the cluster's networks, which the outbound policy refuses
				}
				g.Expect(rule.APIGroups).To(Or(Equal([]string{"calaf.io"}), Equal([]string{"events.k8s.io"})), "%s: %+v", role.Name, rule)
			}
		case "Role":
			g.Expect(obj.GetNamespace()).To(Equal("calaf-system"))
		case "Deployment":
			var deployment appsv1.Deployment
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &deployment)).To(Succeed())
			args = deployment.Spec.Template.Spec.Containers[0].Args
		}
	}
	g.Expect(args).To(ContainElements("--default-service-account=calaf-tenant", "--state-namespace=calaf-system"))
}
