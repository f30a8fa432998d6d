package onboarding_test

import (
	"archive/zip"
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/cli"
	"calaf.io/calaf/source"
	"calaf.io/calaf/test/vnfpackages"
	"calaf.io/calaf/tosca/sol004/sol004test"
)

// onboard uploads a CSAR into a ConfigMap and creates a VnfPackage of it.
func onboard(t *testing.T, ns, name string, archive []byte, verify *v1alpha1.VerifySpec) client.ObjectKey {
	t.Helper()
	g := NewWithT(t)
	src, err := vnfpackages.Upload(context.Background(), env.client, ns, name, archive)
	g.Expect(err).NotTo(HaveOccurred())
	pkg, err := vnfpackages.Create(context.Background(), env.client, ns, name, src, verify)
	g.Expect(err).NotTo(HaveOccurred())
	return client.ObjectKeyFromObject(pkg)
}

func sha256Hex(data []byte) string { return source.SHA256(data) }

func csar(t *testing.T, name string, opts vnfpackages.Options) []byte {
	t.Helper()
	archive, err := vnfpackages.CSAR(name, opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return archive
}

// A package onboards: PROCESSING, then ONBOARDED with what its VNFD and manifest say —
// the VNFD id, provider, product and versions, flavours, the artifacts with their digests
// —, the content's checksum, size and revision, and the label that finds it by VNFD id.
func TestOnboarding(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	states := watchStates(t, ns)
	archive := csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	key := onboard(t, ns, "hello", archive, nil)
	pkg := waitOnboarding(t, key, v1alpha1.OnboardingOnboarded)

	st := pkg.Status
	g.Expect(st.VnfdID).To(Equal(vnfpackages.HelloVnfdID))
	g.Expect([]string{st.VnfProvider, st.VnfProductName, st.VnfSoftwareVersion, st.VnfdVersion}).To(Equal([]string{"Calaf Test Vendor", "Hello CNF", "1.0", "1.0"}))
	g.Expect(st.Flavours).To(Equal([]string{"complex", "simple"}))
	g.Expect(st.Checksum).To(Equal(&v1alpha1.PackageChecksum{Algorithm: "SHA-256", Hash: source.SHA256(archive)}))
	g.Expect(st.Size).To(BeEquivalentTo(len(archive)))
	g.Expect(st.Revision).To(Equal("sha256:" + source.SHA256(archive)))
	g.Expect(st.UsageState).To(Equal(v1alpha1.PackageNotInUse))
	g.Expect(st.OnboardingFailure).To(BeEmpty())
	var artifacts []string
	for _, a := range st.AdditionalArtifacts {
		artifacts = append(artifacts, a.ArtifactPath)
		g.Expect(a.Checksum).NotTo(BeNil())
		g.Expect(a.Checksum.Algorithm).To(Equal("SHA-256"))
	}
	g.Expect(artifacts).To(Equal([]string{"Files/kubernetes/access-check.yaml", "Files/kubernetes/front.yaml", "Files/kubernetes/store.yaml", "Files/kubernetes/worker.yaml"}))
	g.Expect(pkg.Labels).To(HaveKeyWithValue(v1alpha1.LabelVnfdID, vnfpackages.HelloVnfdID))
	ready := apimeta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(ready.Message).To(ContainSubstring("VNFD " + vnfpackages.HelloVnfdID))
	g.Eventually(states, 10*time.Second).Should(ContainElements(v1alpha1.OnboardingProcessing, v1alpha1.OnboardingOnboarded))
	seen := states()
	g.Expect(seen[len(seen)-1]).To(Equal(v1alpha1.OnboardingOnboarded), "PROCESSING, then ONBOARDED: %v", seen)

	// Disabling it, or changing the user's data, onboards nothing again.
	patch := client.MergeFrom(pkg.DeepCopy())
	pkg.Spec.OperationalState, pkg.Spec.UserDefinedData = v1alpha1.PackageDisabled, map[string]string{"owner": "core team"}
	g.Expect(env.client.Patch(context.Background(), pkg, patch)).To(Succeed())
	disabled := waitOnboarding(t, key, v1alpha1.OnboardingOnboarded)
	g.Expect(disabled.Generation).To(BeNumerically(">", pkg.Status.ObservedGeneration))
	g.Expect(states()).To(Equal(seen), "no PROCESSING since")
	g.Expect(disabled.Status.Revision).To(Equal(st.Revision))

	// calaf packages lists it, and shows it.
	var out, errOut bytes.Buffer
	code := cli.Run([]string{"packages", "--kubeconfig", env.kubeconfig, "-n", ns}, cli.Streams{Out: &out, Err: &errOut})
	g.Expect(code).To(BeZero(), "%s", errOut.String())
	g.Expect(out.String()).To(MatchRegexp(`hello\s+` + vnfpackages.HelloVnfdID + `\s+ONBOARDED\s+DISABLED\s+NOT_IN_USE\s+Calaf Test Vendor\s+Hello CNF\s+1.0`))
	out.Reset()
	code = cli.Run([]string{"packages", "hello", "--kubeconfig", env.kubeconfig, "-n", ns}, cli.Streams{Out: &out, Err: &errOut})
	g.Expect(code).To(BeZero(), "%s", errOut.String())
	g.Expect(out.String()).To(ContainSubstring("Flavours:      complex, simple\n"))
}

// watchStates watches the VnfPackages of a namespace and returns the onboarding states
// their versions had, in order (without repeats).
func watchStates(t *testing.T, ns string) func() []v1alpha1.OnboardingState {
	t.Helper()
	w, err := env.client.Watch(context.Background(), &v1alpha1.VnfPackageList{}, client.InNamespace(ns))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)
	var states []v1alpha1.OnboardingState
	return func() []v1alpha1.OnboardingState {
		for {
			select {
			case e := <-w.ResultChan():
				if pkg, ok := e.Object.(*v1alpha1.VnfPackage); ok && e.Type != watch.Deleted {
					if s := pkg.Status.OnboardingState; s != "" && (len(states) == 0 || states[len(states)-1] != s) {
						states = append(states, s)
					}
				}
			default:
				return states
			}
		}
	}
}

// A package whose content is refused is ERROR, onboardingFailure saying why in one line
// (and its Ready condition the reason), and it holds no VNFD id: a file that does not
// match the manifest, a signature that does not chain to the package's anchors under
// Enforce, a package that is no VNF package.
func TestOnboardingRefuses(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	trusted, err := sol004test.New("trusted")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	stranger, err := sol004test.New("stranger")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(env.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "anchors"},
		Data: map[string]string{"ca.crt": string(trusted.RootPEM())}})).To(Succeed())
	enforce := &v1alpha1.VerifySpec{Mode: v1alpha1.VerifyEnforce, Anchors: &v1alpha1.AnchorsReference{Kind: "ConfigMap", Name: "anchors"}}
	cases := []struct {
		name    string
		archive []byte
		verify  *v1alpha1.VerifySpec
		reason  string
		failure string
	}{
		{"bad-digest", csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf", Replace: map[string]string{"Files/kubernetes/front.yaml": "tampered: true\n"}}),
			nil, v1alpha1.ReasonIntegrityFailed, "Files/kubernetes/front.yaml"},
		{"bad-signature", csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf", Signer: stranger.Signer}),
			enforce, v1alpha1.ReasonIntegrityFailed, "package signature"},
		{"unsigned", csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"}),
			enforce, v1alpha1.ReasonIntegrityFailed, "package signature"},
		{"not-a-vnf", csar(t, "cnf-manifests", vnfpackages.Options{Files: map[string]string{"Definitions/hello_top.vnfd.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\n"}}),
			nil, v1alpha1.ReasonInvalidPackage, "VNFD: Definitions/hello_top.vnfd.yaml: not an ETSI SOL001 VNF package"},
		{"alias-bomb", csar(t, "cnf-manifests", vnfpackages.Options{Files: map[string]string{"Definitions/hello_top.vnfd.yaml": aliasBomb}}),
			nil, v1alpha1.ReasonInvalidPackage, "an alias bomb?"},
		{"zip-bomb", zipBomb(t), nil, v1alpha1.ReasonInvalidPackage, "decompresses to more than"},
		{"not-an-archive", []byte("tosca_definitions_version: tosca_simple_yaml_1_3\n"), nil, v1alpha1.ReasonInvalidPackage, "neither a zip (CSAR) nor a tar archive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			pkg := waitOnboarding(t, onboard(t, ns, c.name, c.archive, c.verify), v1alpha1.OnboardingError)
			g.Expect(pkg.Status.OnboardingFailure).To(ContainSubstring(c.failure))
			g.Expect(pkg.Status.OnboardingFailure).NotTo(ContainSubstring("\n"))
			g.Expect(pkg.Status.VnfdID).To(BeEmpty())
			g.Expect(pkg.Labels).NotTo(HaveKey(v1alpha1.LabelVnfdID))
			ready := apimeta.FindStatusCondition(pkg.Status.Conditions, v1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(c.reason))
		})
	}
	t.Run("signed-by-trusted", func(t *testing.T) {
		archive := csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf", Signer: trusted.Signer})
		pkg := waitOnboarding(t, onboard(t, ns, "signed", archive, enforce), v1alpha1.OnboardingOnboarded)
		g := NewWithT(t)
		g.Expect(pkg.Status.PackageSecurityOption).To(Equal("OPTION_1"))
		g.Expect(pkg.Status.Signer).NotTo(BeNil())
		g.Expect(pkg.Status.Signer.Subject).To(ContainSubstring("trusted Signer"))
		g.Expect(pkg.Status.Verification.Verified).To(BeTrue())
	})
}

// A second package of a namespace with a VNFD id another package holds is ERROR, naming
// the first; the first stays ONBOARDED. Another namespace may hold the same id.
func TestDuplicateVnfdID(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	first := waitOnboarding(t, onboard(t, ns, "first", csar(t, "cnf-manifests", vnfpackages.Options{}), nil), v1alpha1.OnboardingOnboarded)
	other := csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"})
	second := waitOnboarding(t, onboard(t, ns, "second", other, nil), v1alpha1.OnboardingError)
	g.Expect(second.Status.OnboardingFailure).To(Equal("VNFD " + vnfpackages.HelloVnfdID + " is already onboarded by VnfPackage first: a namespace holds one package of a VNFD id"))
	g.Expect(apimeta.FindStatusCondition(second.Status.Conditions, v1alpha1.ConditionReady).Reason).To(Equal(v1alpha1.ReasonDuplicateVnfdID))
	g.Expect(getPackage(g, client.ObjectKeyFromObject(first)).Status.OnboardingState).To(Equal(v1alpha1.OnboardingOnboarded))

	elsewhere := newNamespace(t)
	waitOnboarding(t, onboard(t, elsewhere, "second", other, nil), v1alpha1.OnboardingOnboarded)
}

// Two packages of one VNFD id created at once: exactly one is ONBOARDED.
func TestDuplicateVnfdIDAtOnce(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	a := onboard(t, ns, "a", csar(t, "cnf-manifests", vnfpackages.Options{}), nil)
	b := onboard(t, ns, "b", csar(t, "cnf-manifests", vnfpackages.Options{Manifest: "hello.mf"}), nil)
	var states []v1alpha1.OnboardingState
	g.Eventually(func(g Gomega) {
		states = nil
		for _, key := range []client.ObjectKey{a, b} {
			pkg := getPackage(g, key)
			g.Expect(pkg.Status.ObservedGeneration).To(Equal(pkg.Generation))
			states = append(states, pkg.Status.OnboardingState)
		}
		g.Expect(states).To(ConsistOf(v1alpha1.OnboardingOnboarded, v1alpha1.OnboardingError))
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())
}

// A package without content is CREATED; once its source is set it is onboarded.
func TestCreatedThenUploaded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	pkg := &v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "empty"}}
	g.Expect(env.client.Create(ctx, pkg)).To(Succeed())
	key := client.ObjectKeyFromObject(pkg)
	created := waitOnboarding(t, key, v1alpha1.OnboardingCreated)
	g.Expect(created.Spec.OperationalState).To(Equal(v1alpha1.PackageEnabled), "the CRD's default")
	src, err := vnfpackages.Upload(ctx, env.client, ns, "empty", csar(t, "cnf-manifests", vnfpackages.Options{}))
	g.Expect(err).NotTo(HaveOccurred())
	patch := client.MergeFrom(created.DeepCopy())
	created.Spec.Source = &src
	g.Expect(env.client.Patch(ctx, created, patch)).To(Succeed())
	onboarded := waitOnboarding(t, key, v1alpha1.OnboardingOnboarded)
	g.Expect(strings.HasPrefix(onboarded.Status.Revision, "sha256:")).To(BeTrue())
}

// aliasBomb is a YAML document whose aliases expand it to billions of nodes.
const aliasBomb = `tosca_definitions_version: tosca_simple_yaml_1_2
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

// zipBomb is a CSAR holding a file that decompresses beyond the package limits.
func zipBomb(t *testing.T) []byte {
	t.Helper()
	var buffer bytes.Buffer
	zw := zip.NewWriter(&buffer)
	for name, data := range map[string][]byte{"TOSCA-Metadata/TOSCA.meta": []byte("TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: x\nEntry-Definitions: a.yaml\n"),
		"a.yaml": bytes.Repeat([]byte("0"), 40<<20)} {
		w, err := zw.Create(name)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		_, err = w.Write(data)
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
	}
	NewWithT(t).Expect(zw.Close()).To(Succeed())
	return buffer.Bytes()
}
