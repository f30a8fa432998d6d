// Package architecture checks the shape of Calaf's import graph: the pipeline reads one
// way (source → tosca → render → controller), the controller drives orchestration and
// never the reverse, and the in-pod runner stands alone.
package architecture

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "calaf.io/calaf/"

// pkg is what `go list -json` says of a package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// list runs `go list -json` with args from the repository root.
func list(t *testing.T, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// The runner's binary is streamed into every pod that runs an operation: it must not pull
// in Puccini, Kubernetes client code or any of the operator's packages.
func TestRunnerStandsAlone(t *testing.T) {
	runner := list(t, "-deps=false", "./cmd/calaf-runner")
	deps := list(t, "-deps", "./cmd/calaf-runner")
	if len(runner) != 1 || len(deps) < 2 {
		t.Fatalf("go list found %d packages, %d deps", len(runner), len(deps))
	}
	forbidden := []string{"github.com/tliron/puccini", "k8s.io/", "sigs.k8s.io/", "helm.sh/"}
	allowed := []string{module + "cmd/calaf-runner", module + "artifacts/runner", module + "artifacts/protocol"}
	for _, dep := range deps {
		for _, prefix := range forbidden {
			if strings.HasPrefix(dep.ImportPath, prefix) {
				t.Errorf("calaf-runner depends on %s", dep.ImportPath)
			}
		}
		if strings.HasPrefix(dep.ImportPath, module) && !slices.Contains(allowed, dep.ImportPath) {
			t.Errorf("calaf-runner depends on %s; it may use only %v", dep.ImportPath, allowed)
		}
	}
}

// Helm (its chartutil compiles five JSON Schema meta-schemas at start, and pulls in
// client-go's scheme) is linked only by package etsi/helmchart: the stages that map and
// render packages, and the worker, are given a chart engine by the wiring, so that a
// binary that renders no chart does not pay for Helm's initialization.
func TestOnlyHelmchartLinksHelm(t *testing.T) {
	for _, pkg := range []string{"./tosca", "./etsi", "./etsi/chart", "./render", "./policy", "./worker"} {
		deps := list(t, "-deps", pkg)
		if len(deps) < 2 {
			t.Fatalf("go list found %d deps of %s", len(deps), pkg)
		}
		for _, dep := range deps {
			if strings.HasPrefix(dep.ImportPath, "helm.sh/") && dep.ImportPath != "helm.sh/helm/v3/pkg/strvals" {
				t.Errorf("%s links %s", pkg, dep.ImportPath)
			}
		}
	}
	linked := false
	for _, dep := range list(t, "-deps", "./etsi/helmchart") {
		linked = linked || dep.ImportPath == "helm.sh/helm/v3/pkg/engine"
	}
	if !linked {
		t.Error("etsi/helmchart does not link Helm's engine: the test checks nothing")
	}
}

// calaf, the front every command line starts, must start in a few milliseconds: it links
// the standard library and two leaves of the module, nothing else. calaf-offline (the
// calaf_offline build of calaf-full), which runs the offline package commands, links
// neither the operator nor Helm nor controller-runtime's clients.
func TestFrontAndOfflineStayLean(t *testing.T) {
	allowed := []string{module + "cmd/calaf", module + "internal/front", module + "internal/text", module + "worker/crash"}
	deps := list(t, "-deps", "./cmd/calaf")
	if len(deps) < 10 {
		t.Fatalf("go list found %d deps of ./cmd/calaf", len(deps))
	}
	for _, dep := range deps {
		if !dep.Standard && !slices.Contains(allowed, dep.ImportPath) {
			t.Errorf("calaf (the front) links %s", dep.ImportPath)
		}
	}
	forbidden := []string{"helm.sh/helm/v3/pkg/engine", "helm.sh/helm/v3/pkg/chartutil", "sigs.k8s.io/controller-runtime/pkg/client",
		"k8s.io/client-go/kubernetes/typed", module + "internal/operator", module + "controller", module + "etsi/helmchart", module + "source"}
	offline := list(t, "-deps", "-tags", "calaf_offline", "./cmd/calaf-full")
	if len(offline) < 100 {
		t.Fatalf("go list found %d deps of calaf-offline", len(offline))
	}
	for _, dep := range offline {
		for _, prefix := range forbidden {
			if strings.HasPrefix(dep.ImportPath, prefix) {
				t.Errorf("calaf-offline links %s", dep.ImportPath)
			}
		}
	}
	full := list(t, "-deps", "./cmd/calaf-full")
	if !slices.ContainsFunc(full, func(p pkg) bool { return p.ImportPath == module+"internal/operator" }) {
		t.Error("calaf-full does not link the operator: the test checks nothing")
	}
}

// mayImport lists, for each package of the module, the module's packages it may import
// (internal/lru, internal/text, internal/jsonvalue and internal/redact are leaves anyone
// may use).
var mayImport = map[string][]string{
	"api/v1alpha1":       {},
	"artifacts/protocol": {},
	"artifacts/runner":   {"artifacts/protocol"},
	"profiles":           {},
	// profilekit is the vendor's kit: it reads profiles, compiles and renders test cases.
	"profilekit":   {"profiles", "tosca", "render"},
	"tosca":        {"profiles"},
	"tosca/sol004": {"tosca"},
	// locked resolves imports by reference from a package's lock: no network of its own.
	"tosca/locked": {"tosca", "tosca/sol004"},
	"etsi":         {"tosca", "etsi/chart"},
	"etsi/chart":   {},
	// helmchart is the only package that links Helm: the wiring hands it to the stages.
	"etsi/helmchart": {"etsi/chart"},
	"render":         {"tosca", "etsi", "etsi/chart", "api/v1alpha1"},
	"source":         {"tosca", "tosca/sol004", "tosca/locked", "api/v1alpha1"},
	"source/webhook": {"source", "api/v1alpha1"},
	"orchestration":  {"api/v1alpha1", "artifacts/protocol", "render"},
	// policy judges renders by the admin's rules: after render, before the controller.
	"policy":     {"tosca", "render"},
	"controller": {"api/v1alpha1", "tosca", "etsi", "render", "source", "orchestration", "policy", "internal/clusters", "internal/kubeconfig"},
	// kubeconfig reads the kubeconfigs tenants hand in (hostile input) and makes them of a
	// SOL003 vimConnectionInfo; clusters keeps the connections to target clusters, under
	// the admin's outbound policy.
	"internal/kubeconfig": {},
	"internal/clusters":   {"internal/kubeconfig", "internal/outbound"},
	// lifecycle acts on Services and Operations through the API only (it never calls the
	// reconciler or the orchestrator); render gives it the node label of pods.
	"lifecycle": {"api/v1alpha1", "render", "internal/outbound", "nfvo"},
	// outbound is the one client of requests made on a user's behalf, under the
	// admin's outbound policy: it knows nothing of Calaf's resources.
	"internal/outbound": {},
	// onboarding onboards VnfPackages: their content fetched by source, their VNFD read
	// by the reader it is given (a worker's), never parsed in its own process.
	"onboarding": {"api/v1alpha1", "source", "tosca"},
	// worker runs tosca and render in child processes; only the wiring (and the CLI)
	// choose to use it, so the stages stay unaware of where they run.
	"worker":       {"tosca", "etsi/chart", "render", "worker/crash"},
	"worker/crash": {},
	// front is calaf's front process: it starts calaf-offline and calaf-full, and links
	// none of Calaf's stages.
	"internal/front":    {"worker/crash"},
	"internal/operator": {"api/v1alpha1", "nfvo", "tosca", "etsi/helmchart", "render", "source", "source/webhook", "orchestration", "controller", "lifecycle", "onboarding", "worker", "policy", "internal/outbound", "cmmode", "internal/clusters"},
	// cmmode keeps Services and Operations as ConfigMaps under the reconcilers' client and
	// cache: it knows the API and the CRDs (deploy/crd), and none of the stages, which
	// know nothing of it.
	"cmmode":     {"api/v1alpha1", "deploy/crd"},
	"deploy/crd": {},
	// nfvapi is a front like the CLI: it acts on the API's resources only, as its callers.
	"nfvapi":        {"api/v1alpha1", "render", "nfvapi/sol013", "internal/outbound", "nfvapi/content", "internal/kubeconfig"},
	"nfvapi/sol013": {},
	// nfvapi/content keeps and reads back the content of packages uploaded through the
	// NFV API: in ConfigMaps as the caller, or in the admin's registry as source pushes.
	"nfvapi/content":  {"api/v1alpha1", "source", "tosca", "tosca/sol004"},
	"nfvapi/contract": {"nfvapi"},
	// nfvo is the VNFM's client of an external NFVO (grants, its packages).
	"nfvo":             {"internal/outbound"},
	"nfvo/nfvostub":    {"nfvo"},
	"cmd/calaf":        {"internal/front"},
	"cmd/calaf-full":   {"internal/cli"},
	"cmd/calaf-runner": {"artifacts/runner"},
}

// Each package imports only the stages before it: in particular orchestration never
// imports the controller (the controller hands it an Input and records its Result), and
// api/ imports nothing of Calaf's.
func TestImportsGoOneWay(t *testing.T) {
	leaves := []string{"internal/lru", "internal/text", "internal/jsonvalue", "internal/redact"}
	checked := 0
	for _, p := range list(t, "./...") {
		name := strings.TrimPrefix(p.ImportPath, module)
		allowed, ok := mayImport[name]
		if !ok {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			if !slices.Contains(allowed, dep) && !slices.Contains(leaves, dep) {
				t.Errorf("%s imports %s; it may import only %v (and %v)", name, dep, allowed, leaves)
			}
		}
	}
	if checked != len(mayImport) {
		t.Errorf("checked %d packages, the table names %d: a package moved or was renamed", checked, len(mayImport))
	}
}
