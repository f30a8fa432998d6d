//go:build !calaf_offline

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"calaf.io/calaf/api/v1alpha1"
)

// calaf packages lists a namespace's packages, one a line with their states and identity,
// a refused one with why on its line; and shows one with what onboarding found.
func TestPackagesTable(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	onboarded := v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "telco", Name: "hello", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec: v1alpha1.VnfPackageSpec{OperationalState: v1alpha1.PackageEnabled},
		Status: v1alpha1.VnfPackageStatus{OnboardingState: v1alpha1.OnboardingOnboarded, UsageState: v1alpha1.PackageInUse,
			VnfdID: "6f1d3c2a", VnfProvider: "Calaf Test Vendor", VnfProductName: "Hello CNF", VnfSoftwareVersion: "1.0", VnfdVersion: "1.0",
			Flavours: []string{"complex", "simple"}, Revision: "sha256:abc", Checksum: &v1alpha1.PackageChecksum{Algorithm: "SHA-256", Hash: "abc"}, Size: 1234,
			AdditionalArtifacts: []v1alpha1.PackageArtifact{{ArtifactPath: "Files/kubernetes/front.yaml"}}}}
	refused := v1alpha1.VnfPackage{ObjectMeta: metav1.ObjectMeta{Namespace: "telco", Name: "bad", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec:   v1alpha1.VnfPackageSpec{OperationalState: v1alpha1.PackageEnabled},
		Status: v1alpha1.VnfPackageStatus{OnboardingState: v1alpha1.OnboardingError, OnboardingFailure: "revision sha256:x: package integrity:\nFiles/a.yaml: digest mismatch"}}
	var out bytes.Buffer
	if err := writePackages(&out, []v1alpha1.VnfPackage{onboarded, refused}, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	for _, want := range []string{"hello", "6f1d3c2a", "ONBOARDED", "ENABLED", "IN_USE", "Calaf Test Vendor", "Hello CNF", "1m0s"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("the line of hello lacks %q: %s", want, lines[1])
		}
	}
	for _, want := range []string{"bad", "ERROR", "digest mismatch"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("the line of bad lacks %q: %s", want, lines[2])
		}
	}
	described := describePackage(&onboarded)
	for _, want := range []string{"Package:       telco/hello\n", "VNFD:          6f1d3c2a\n", "Product:       Hello CNF 1.0\n", "Flavours:      complex, simple\n",
		"Checksum:      SHA-256 abc (1234 bytes)\n", "Artifacts:     1, the first Files/kubernetes/front.yaml\n"} {
		if !strings.Contains(described, want) {
			t.Errorf("the description lacks %q:\n%s", want, described)
		}
	}
}
