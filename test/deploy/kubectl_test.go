package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The kind is named Service, like the built-in one; kubectl reaches Calaf's by its short
// name: `kubectl get csvc`, `kubectl explain csvc.spec` (what README and calaf's help show).
func TestKubectlReachesCalafServicesByShortName(t *testing.T) {
	g := NewWithT(t)
	user, err := testEnv.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	kubectl := func(args ...string) string {
		cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), append([]string{"--kubeconfig", path}, args...)...)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "kubectl %v:\n%s", args, out)
		return string(out)
	}
	resources := kubectl("api-resources", "--api-group=calaf.io")
	g.Expect(resources).To(MatchRegexp(`services\s+csvc\s+calaf.io/v1alpha1\s+true\s+Service`))
	explained := kubectl("explain", "csvc.spec.source")
	for _, field := range []string{"git", "oci", "upload", "url"} {
		g.Expect(explained).To(ContainSubstring(field), "kubectl explain csvc.spec.source")
	}
	g.Expect(kubectl("get", "csvc", "-A")).To(ContainSubstring("No resources found"))
	g.Expect(strings.ToLower(kubectl("explain", "csvc"))).To(ContainSubstring("kind:       service"))
}
