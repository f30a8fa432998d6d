package etsi_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"calaf.io/calaf/etsi"
	"calaf.io/calaf/etsi/helmchart"
	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// packagesDir holds the project's own SOL001 test packages and their instantiate requests.
const packagesDir = "../test/etsi"

// The Service every package is rendered for.
const (
	goldenService   = "vnf"
	goldenNamespace = "telco"
)

// renderVNF compiles a test package with an instantiate request file (none when empty)
// and renders it; strict refuses tolerated idioms.
func renderVNF(t *testing.T, pkgName, requestFile string, strict bool) (*render.Result, error) {
	t.Helper()
	pkg, err := tosca.Open(filepath.Join(packagesDir, pkgName), tosca.DefaultLimits())
	if err != nil {
		t.Fatalf("open %s: %v", pkgName, err)
	}
	t.Cleanup(func() { pkg.Close() })
	if _, err := pkg.VerifyIntegrity(tosca.IntegrityOptions{}); err != nil {
		return nil, err
	}
	var req *etsi.Request
	if requestFile != "" {
		data, err := os.ReadFile(filepath.Join(packagesDir, requestFile))
		if err != nil {
			t.Fatal(err)
		}
		if req, err = etsi.ParseRequest(requestFile, data); err != nil {
			return nil, err
		}
	}
	opts := tosca.CompileOptions{Strict: strict}
	if req != nil {
		opts.Flavour = req.FlavourID
	}
	ctx := context.Background()
	compiled, err := tosca.NewCompiler(1).CompileWith(ctx, pkg, nil, opts)
	if err != nil {
		return nil, err
	}
	renderer := render.NewRenderer(1)
	renderer.Charts = helmchart.Engine{}
	return renderer.Render(ctx, compiled, render.Options{Service: goldenService, Namespace: goldenNamespace, Instantiate: req})
}

// goldenCase is a package rendered with a request, and what must hold of the render
// whatever the golden file says.
type goldenCase struct {
	name, pkg, request string
	// replicas are the desired replicas of each VDU node.
	replicas map[string]int64
	// workloads are the workload of each VDU node.
	workloads map[string]string
	level     string
	// aspects are the scale levels of the flavour's aspects.
	aspects map[string]int64
	// warnings are substrings of the warnings, each expected.
	warnings []string
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "cnf-manifests-simple", pkg: "cnf-manifests", request: "cnf-manifests.simple.json",
			replicas: map[string]int64{"front": 1, "store": 1}, workloads: map[string]string{"front": "ReplicaSet/front", "store": "StatefulSet/store"},
			level: "instantiation_level_1", aspects: map[string]int64{"front_aspect": 0},
			warnings: []string{
				`Files/kubernetes/front.yaml:21: Service "front": its namespace "default" is replaced by the Service's namespace "telco"`,
				`Files/kubernetes/access-check.yaml:1: SubjectAccessReview "can-list-pods" skipped`,
				"extVirtualLinks (1) are ignored",
				`additionalParams.namespace "default" is not used`,
				`Definitions/hello_df_simple.yaml:32: topology_template.node_templates["front"].capabilities["virtual_binding"]: 0 relationships, fewer than the minimum 1`,
			}},
		{name: "cnf-manifests-simple-level2", pkg: "cnf-manifests", request: "cnf-manifests.simple-level2.json",
			replicas: map[string]int64{"front": 2, "store": 2}, level: "instantiation_level_2", aspects: map[string]int64{"front_aspect": 1}},
		{name: "cnf-manifests-complex", pkg: "cnf-manifests", request: "cnf-manifests.complex.yaml",
			replicas: map[string]int64{"front": 1, "store": 1, "worker": 2}, level: "large",
			workloads: map[string]string{"worker": "Deployment/worker"}},
		{name: "cnf-oscontainer", pkg: "cnf-oscontainer",
			replicas: map[string]int64{"catalog": 1, "orders": 1}, level: "basic", aspects: map[string]int64{"catalog_aspect": 0},
			workloads: map[string]string{"catalog": "Deployment/catalog", "orders": "StatefulSet/orders"}},
		{name: "cnf-oscontainer-busy", pkg: "cnf-oscontainer", request: "cnf-oscontainer.busy.yaml",
			replicas: map[string]int64{"catalog": 2, "orders": 1}, level: "busy", aspects: map[string]int64{"catalog_aspect": 1}},
		{name: "cnf-helm-simple", pkg: "cnf-helm", request: "cnf-helm.simple.json",
			replicas: map[string]int64{"VDU1": 2, "VDU2": 3}, level: "instantiation_level_2",
			workloads: map[string]string{"VDU1": "Deployment/vdu1-vnf", "VDU2": "Deployment/vdu2-vnf"},
			aspects:   map[string]int64{"vdu1_aspect": 1, "vdu2_aspect": 2}},
		{name: "cnf-helm-mciop", pkg: "cnf-helm", request: "cnf-helm.mciop.yaml",
			replicas: map[string]int64{"VDU1": 2, "VDU2": 1}, workloads: map[string]string{"VDU1": "Deployment/vdu1-vnf"}},
		{name: "cnf-idioms", pkg: "cnf-idioms", request: "cnf-idioms.simple.json",
			replicas: map[string]int64{"VDU1": 1},
			warnings: []string{
				`TOSCA-Metadata/TOSCA.meta:2: "Created-by" is spelled "Created-By"`,
				`Definitions/idioms_types.yaml:6:3: import "https://forge.etsi.org/rep/nfv/SOL001/raw/v4.5.1/etsi_nfv_sol001_common_types.yaml" by URL: the package's copy Definitions/etsi_nfv_sol001_common_types.yaml is used instead`,
				"requirements: is empty (null)",
				"operation written as []",
				"requirement mapping written as []",
				`artifact file read as extension "./Scripts/sample_script.py"`,
				`Files/kubernetes/vdu1.yaml:1: Deployment "vdu1": its namespace "vendor-ns" is replaced`,
			}},
		{name: "cnf-tacker-all-kinds", pkg: "cnf-tacker", request: "cnf-tacker.all-kinds.json",
			replicas: map[string]int64{"VDU1": 2, "VDU2": 1}, level: "instantiation_level_2", aspects: map[string]int64{"vdu1_aspect": 1},
			workloads: map[string]string{"VDU1": "Deployment/vdu1", "VDU2": "Deployment/vdu2"},
			warnings: []string{
				`Definitions/tacker_df_simple.yaml:45:5: topology_template.node_templates["VDU1"].capabilities["virtual_compute"].properties["virtual_memory"]: left unassigned`,
				`Definitions/tacker_df_simple.yaml:43:17: artifact file "Scripts/tacker_mgmt.py" is not next to Definitions/tacker_df_simple.yaml: Scripts/tacker_mgmt.py at the package's root is read`,
				`Definitions/tacker_df_simple.yaml:31:5: topology_template.node_templates["VNF"].requirements{0}: requirement "virtual_link_external" left unsatisfied`,
				`Files/kubernetes/reviews.yaml:1: SubjectAccessReview skipped`,
				`Files/kubernetes/reviews.yaml:25: TokenReview skipped`,
				`Files/kubernetes/namespace.yaml:1: Namespace "tacker-cnf" skipped`,
				`Files/kubernetes/cluster-rbac.yaml:16: ClusterRoleBinding "tacker-node-reader": its subject ServiceAccount "tacker-reader" follows the package's account from namespace "default" to the Service's namespace "telco"`,
				`Definitions/tacker_df_simple.yaml:31: Vnflcm.instantiate_end of VNF is implemented by Scripts/tacker_mgmt.py, a Python script (Tacker's management driver): Calaf runs no Python, the hook is not run`,
			}},
		{name: "cnf-tacker-one-file", pkg: "cnf-tacker", request: "cnf-tacker.one-file.json",
			replicas: map[string]int64{"VDU2": 1}, workloads: map[string]string{"VDU2": "Deployment/vdu2"},
			warnings: []string{`Definitions/tacker_df_simple.yaml:45: VDU VDU1 is not instantiated: no workload named "vdu1" (its properties.name) in the manifests the request lists (Files/kubernetes/vdu2.yaml)`}},
		{name: "cnf-tacker-vdumap", pkg: "cnf-tacker", request: "cnf-tacker.vdumap.json",
			replicas: map[string]int64{"VDU1": 2}, workloads: map[string]string{"VDU1": "Deployment/vdumap-a"},
			warnings: []string{`Definitions/tacker_df_vdumap.yaml:26:7: topology_template.substitution_mappings.properties["flavour_id"]: flavour_id "vdumap" is not among the valid_values`}},
		{name: "cnf-tacker-helm-v1", pkg: "cnf-tacker", request: "cnf-tacker.helm-v1.json",
			replicas: map[string]int64{"VDU1": 2, "VDU2": 3}, level: "instantiation_level_2", aspects: map[string]int64{"vdu1_aspect": 1, "vdu2_aspect": 2},
			workloads: map[string]string{"VDU1": "Deployment/vdu1-localchart", "VDU2": "Deployment/vdu2-localchart"}},
		{name: "cnf-tacker-helm-v1-one", pkg: "cnf-tacker", request: "cnf-tacker.helm-v1-one.json",
			replicas: map[string]int64{"VDU1": 1}, workloads: map[string]string{"VDU1": "Deployment/vdu1-localchart"},
			warnings: []string{`Definitions/tacker_df_helmchart.yaml:45: VDU VDU2 is not instantiated: no workload named "VDU2" (its properties.name) in the charts the request installs (releases vdu1)`}},
	}
}

// TestGolden renders every test package with its request and compares the objects, the
// VNF and the warnings with the golden files (rewritten with -update); what each case
// states about replicas, workloads, levels and warnings is checked whatever they say.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			result, err := renderVNF(t, c.pkg, c.request, false)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			checkCase(t, c, result)
			compareGolden(t, filepath.Join("testdata", c.name+".golden.yaml"), goldenYAML(t, result))
		})
	}
}

func checkCase(t *testing.T, c goldenCase, result *render.Result) {
	t.Helper()
	if result.VNF == nil {
		t.Fatal("the result describes no VNF")
	}
	if c.level != "" && result.VNF.Level != c.level {
		t.Errorf("level %q, want %q", result.VNF.Level, c.level)
	}
	vdus := map[string]etsi.VDU{}
	for _, vdu := range result.VNF.VDUs {
		vdus[vdu.Node] = vdu
	}
	for node, want := range c.replicas {
		vdu, ok := vdus[node]
		if !ok {
			t.Errorf("VDU %s is not mapped (VDUs: %v)", node, result.VNF.VDUs)
			continue
		}
		if vdu.Replicas != want {
			t.Errorf("VDU %s has %d replicas, want %d", node, vdu.Replicas, want)
		}
		if obj := findObject(result, vdu.Workload); obj == nil {
			t.Errorf("VDU %s: its workload %s is not rendered", node, vdu.Workload)
		} else if replicas, found := nestedInt(obj.Object, "spec", "replicas"); found && replicas != want {
			t.Errorf("VDU %s: %s has spec.replicas %d, want %d", node, vdu.Workload, replicas, want)
		}
		if result.Node(node) == nil || !ownsObject(result.Node(node), vdu.Workload) {
			t.Errorf("VDU %s does not own its workload %s", node, vdu.Workload)
		}
	}
	for node, want := range c.workloads {
		if vdus[node].Workload != want {
			t.Errorf("VDU %s maps to %q, want %q", node, vdus[node].Workload, want)
		}
	}
	aspects := map[string]int64{}
	for _, a := range result.VNF.Aspects {
		aspects[a.ID] = a.ScaleLevel
	}
	for id, want := range c.aspects {
		if got, ok := aspects[id]; !ok || got != want {
			t.Errorf("aspect %s at scale level %d (present %v), want %d", id, got, ok, want)
		}
	}
	text := warningsText(result)
	for _, want := range c.warnings {
		if !strings.Contains(text, want) {
			t.Errorf("no warning %q in:\n%s", want, text)
		}
	}
	for _, node := range result.Nodes {
		for _, op := range node.Operations {
			if _, artifact, ok := node.Artifact(op.Implementation); ok && strings.HasSuffix(artifact.File, ".py") && render.IsHook(op) {
				t.Errorf("node %s keeps hook %s, implemented by the Python script %s", node.Name, op.QualifiedName(), artifact.File)
			}
		}
	}
	for _, obj := range result.Objects {
		_ = obj.DeepCopy() // panics on values that are not JSON data (map[string]string, ...)
		if obj.GetNamespace() != goldenNamespace && !render.IsClusterScoped(obj.GetKind()) {
			t.Errorf("%s/%s is in namespace %q", obj.GetKind(), obj.GetName(), obj.GetNamespace())
		}
	}
}

func findObject(result *render.Result, ref string) *unstructuredObject {
	for _, obj := range result.Objects {
		if obj.GetKind()+"/"+obj.GetName() == ref {
			return &unstructuredObject{Object: obj.Object}
		}
	}
	return nil
}

type unstructuredObject struct{ Object map[string]any }

func ownsObject(node *render.Node, ref string) bool {
	for _, obj := range node.Objects {
		if obj.GetKind()+"/"+obj.GetName() == ref {
			return true
		}
	}
	return false
}

func nestedInt(obj map[string]any, path ...string) (int64, bool) {
	var v any = obj
	for _, key := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false
		}
		v = m[key]
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	}
	return 0, false
}

func warningsText(result *render.Result) string {
	var lines []string
	for _, w := range result.Warnings {
		lines = append(lines, w.String())
	}
	return strings.Join(lines, "\n")
}

// goldenYAML pins the objects by node, the VNF and the warnings.
func goldenYAML(t *testing.T, result *render.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# flavour %s, level %q\n", result.VNF.Flavour, result.VNF.Level)
	for _, vdu := range result.VNF.VDUs {
		fmt.Fprintf(&b, "# vdu %s (%s): %s, %d replicas\n", vdu.Node, vdu.Name, vdu.Workload, vdu.Replicas)
	}
	for _, a := range result.VNF.Aspects {
		fmt.Fprintf(&b, "# aspect %s: %d of %d\n", a.ID, a.ScaleLevel, a.MaxScaleLevel)
	}
	for _, w := range result.Warnings {
		fmt.Fprintf(&b, "# warning: %s\n", w)
	}
	for _, node := range result.Nodes {
		for _, obj := range node.Objects {
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "---\n# node: %s (%s)\n%s", node.Name, node.Type, data)
		}
	}
	return b.Bytes()
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the render (run with -update to accept):\n%s", path, firstDifference(string(want), string(got)))
	}
}

func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
	return ""
}
