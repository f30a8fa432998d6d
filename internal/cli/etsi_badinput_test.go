package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// etsiPackages holds the project's own SOL001 test packages.
const etsiPackages = "../../test/etsi"

// etsiCase is a SOL001 package, changed from one of the test packages, that calaf validate
// must refuse with the diagnostics of want.
type etsiCase struct {
	name string
	pkg  string
	// edits replace, in a file of the package, the first old text by new ("" appends).
	edits []edit
	// files are written into the package (or removed when empty).
	files map[string]string
	// request is the instantiate request (JSON or YAML); none when empty.
	request string
	// keepHashes leaves the digests of TOSCA.meta as they are; otherwise they are
	// recomputed after the edits.
	keepHashes bool
	strict     bool
	want       []string
}

type edit struct{ file, old, new string }

// forgeURL is where the idioms package imports the ETSI type files from.
const forgeURL = "https://forge.etsi.org/rep/nfv/SOL001/raw/v4.5.1/"

// localImports makes the idioms package import its copies of the ETSI type files by path.
var localImports = []edit{
	{"Definitions/idioms_top.vnfd.yaml", forgeURL, ""}, {"Definitions/idioms_top.vnfd.yaml", forgeURL, ""},
	{idiomsTops, forgeURL, ""}, {idiomsTops, forgeURL, ""}, {idiomsDF, forgeURL, ""}, {idiomsDF, forgeURL, ""},
}

// withEdits joins lists of edits.
func withEdits(lists ...[]edit) []edit {
	var all []edit
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

// copyPackage copies a test package into dir/pkg and returns that directory.
func copyPackage(t *testing.T, name, dir string) string {
	t.Helper()
	src := filepath.Join(etsiPackages, name)
	dst := filepath.Join(dir, "pkg")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func (c etsiCase) build(t *testing.T, dir string) []string {
	pkg := copyPackage(t, c.pkg, dir)
	for _, e := range c.edits {
		path := filepath.Join(pkg, e.file)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if e.old == "" {
			text += e.new
		} else if !strings.Contains(text, e.old) {
			t.Fatalf("%s does not hold %q", e.file, e.old)
		} else {
			text = strings.Replace(text, e.old, e.new, 1)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range c.files {
		path := filepath.Join(pkg, name)
		if content == "" {
			os.Remove(path)
			continue
		}
		writeFiles(t, pkg, map[string]string{name: content})
	}
	if !c.keepHashes {
		rehashMeta(t, pkg)
	}
	args := []string{pkg}
	if c.request != "" {
		args = append(args, "--instantiate", writeFile(t, dir, "request.yaml", []byte(c.request)))
	}
	if c.strict {
		args = append(args, "--strict")
	}
	return args
}

// rehashMeta recomputes the Hash of every TOSCA.meta block whose file exists.
func rehashMeta(t *testing.T, pkg string) {
	path := filepath.Join(pkg, "TOSCA-Metadata/TOSCA.meta")
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(string(data), "\n")
	name := ""
	for i, line := range lines {
		if v, ok := strings.CutPrefix(line, "Name: "); ok {
			name = v
		}
		if strings.HasPrefix(line, "Hash: ") && name != "" {
			if content, err := os.ReadFile(filepath.Join(pkg, name)); err == nil {
				lines[i] = "Hash: " + sha256Hex(string(content))
			}
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sha256Hex(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

const (
	simpleDF   = "Definitions/hello_df_simple.yaml"
	idiomsDF   = "Definitions/idioms_df_simple.yaml"
	idiomsTops = "Definitions/idioms_types.yaml"
	simpleReq  = "flavourId: simple\nadditionalParams:\n  lcm-kubernetes-def-files: [ Files/kubernetes/front.yaml, Files/kubernetes/store.yaml ]\n"
	idiomsReq  = "flavourId: simple\nadditionalParams:\n  lcm-kubernetes-def-files: [ Files/kubernetes/vdu1.yaml ]\n"
)

func etsiCases() []etsiCase {
	return []etsiCase{
		{name: "wrong flavourId lists the flavours", pkg: "cnf-manifests", request: "flavourId: huge\n",
			want: []string{`Definitions/hello_top.vnfd.yaml: flavourId "huge" is not a deployment flavour of this package; its flavours: complex (Definitions/hello_df_complex.yaml), simple (Definitions/hello_df_simple.yaml)`}},
		{name: "no flavourId with two flavours", pkg: "cnf-manifests",
			want: []string{"the package has 2 deployment flavours: choose one with the instantiate request's flavourId; its flavours: complex"}},
		{name: "a flavour defined twice", pkg: "cnf-manifests", request: simpleReq,
			edits: []edit{{"Definitions/hello_df_complex.yaml", "flavour_id: complex", "flavour_id: simple"}},
			want:  []string{`deployment flavour "simple" is defined twice`}},
		{name: "unknown instantiation level lists the levels", pkg: "cnf-manifests", request: simpleReq + "instantiationLevelId: giant\n",
			want: []string{`instantiationLevelId "giant" is not an instantiation level of the deployment flavour; its levels: instantiation_level_1, instantiation_level_2`}},
		{name: "a VDU without its workload names both", pkg: "cnf-manifests", request: "flavourId: simple\n",
			edits: []edit{{"Files/kubernetes/store.yaml", "kind: StatefulSet\nmetadata:\n  name: store", "kind: StatefulSet\nmetadata:\n  name: storage"}},
			want:  []string{simpleDF + `:41: VDU store: no Deployment, StatefulSet, ReplicaSet, DaemonSet or Pod named "store" (its properties.name) in Files/kubernetes/front.yaml, Files/kubernetes/store.yaml, Files/kubernetes/worker.yaml`}},
		{name: "a level out of the vdu_profile", pkg: "cnf-manifests", request: simpleReq + "instantiationLevelId: instantiation_level_2\n",
			edits: []edit{{simpleDF, "instantiation_level_2: { number_of_instances: 2 }", "instantiation_level_2: { number_of_instances: 7 }"}},
			want:  []string{simpleDF + ":41: VDU store would have 7 instances at instantiation level instantiation_level_2, outside its vdu_profile [1, 2]"}},
		{name: "a listed manifest missing", pkg: "cnf-manifests",
			request: "flavourId: simple\nadditionalParams:\n  lcm-kubernetes-def-files: [ Files/kubernetes/front.yaml, Files/kubernetes/nowhere.yaml, Files/kubernetes/store.yaml ]\n",
			want:    []string{`Files/kubernetes/nowhere.yaml: additionalParams.lcm-kubernetes-def-files: file "Files/kubernetes/nowhere.yaml" not found in package`}},
		{name: "a listed manifest outside the package", pkg: "cnf-manifests",
			request: "flavourId: simple\nadditionalParams:\n  lcm-kubernetes-def-files: [ ../../../../etc/passwd ]\n",
			want:    []string{`path "../../../../etc/passwd" leaves the package`}},
		{name: "a manifest of invalid YAML", pkg: "cnf-manifests", request: simpleReq,
			files: map[string]string{"Files/kubernetes/store.yaml": "apiVersion: v1\nkind: [ Service\n"},
			want:  []string{"Files/kubernetes/store.yaml:1: invalid YAML"}},
		{name: "a manifest document that is no object", pkg: "cnf-manifests", request: simpleReq,
			edits: []edit{{"Files/kubernetes/store.yaml", "", "---\nkind: ConfigMap\ndata: {}\n"}},
			want:  []string{"Files/kubernetes/store.yaml:28: not a Kubernetes object: it needs apiVersion, kind and metadata.name"}},
		{name: "a TOSCA.meta digest that does not match", pkg: "cnf-manifests", request: simpleReq, keepHashes: true,
			edits: []edit{{"Files/kubernetes/front.yaml", "", "# changed\n"}},
			want:  []string{"integrity: TOSCA-Metadata/TOSCA.meta:11: Files/kubernetes/front.yaml: SHA-256 mismatch"}},
		{name: "a TOSCA.meta entry naming a missing file", pkg: "cnf-manifests", request: simpleReq,
			edits: []edit{{"TOSCA-Metadata/TOSCA.meta", "", "\nName: Files/kubernetes/gone.yaml\nAlgorithm: SHA-256\nHash: " + sha256Hex("x") + "\n"}},
			want:  []string{"Files/kubernetes/gone.yaml: named in TOSCA-Metadata/TOSCA.meta but missing from the package"}},
		{name: "an ETSI type file by URL with no copy", pkg: "cnf-idioms", request: idiomsReq,
			files: map[string]string{"Definitions/etsi_nfv_sol001_common_types.yaml": ""},
			want:  []string{idiomsTops + `:6:3: import "https://forge.etsi.org/rep/nfv/SOL001/raw/v4.5.1/etsi_nfv_sol001_common_types.yaml": Calaf downloads nothing`}},
		{name: "strict: an ETSI type file by URL", pkg: "cnf-idioms", request: idiomsReq, strict: true,
			want: []string{idiomsTops + `:6:3: import "https://forge.etsi.org/rep/nfv/SOL001/raw/v4.5.1/etsi_nfv_sol001_common_types.yaml" by URL`, "refused with --strict"}},
		{name: "strict: Created-by", pkg: "cnf-idioms", request: idiomsReq, strict: true, edits: localImports,
			want: []string{`TOSCA-Metadata/TOSCA.meta:2: "Created-by" is spelled "Created-By" in TOSCA-Meta 1.1 (refused with --strict`}},
		{name: "strict: requirements null, operations [], requirement mappings []", pkg: "cnf-idioms", request: idiomsReq, strict: true,
			edits: withEdits(localImports, []edit{{"TOSCA-Metadata/TOSCA.meta", "Created-by", "Created-By"}}),
			want: []string{idiomsDF + `:20:7: topology_template.substitution_mappings.requirements["virtual_link_external"]: list does not have 2 elements`,
				idiomsDF + `:27:7: topology_template.node_templates["VNF"].requirements: "null" instead of "list"`,
				idiomsDF + `:30:11: topology_template.node_templates["VNF"].interfaces["Vnflcm"].instantiate: "list" instead of "map" or "string"`}},
		{name: "strict: an extension read from the first dot, capability occurrences", pkg: "cnf-idioms", request: idiomsReq, strict: true,
			edits: withEdits(localImports, []edit{{"TOSCA-Metadata/TOSCA.meta", "Created-by", "Created-By"},
				{idiomsDF, "    requirements:\n      virtual_link_external: []\n", ""}, {idiomsDF, "      requirements:\n", ""},
				{idiomsDF, "          instantiate: []\n", ""}, {idiomsDF, "          terminate: []\n", ""}}),
			want: []string{idiomsDF + `:33:11: topology_template.node_templates["VNF"].artifacts["sample-script"].file: extension "./Scripts/sample_script.py" is not "py"`}},
		{name: "strict: capability occurrences", pkg: "cnf-idioms", request: idiomsReq, strict: true,
			edits: withEdits(localImports, []edit{{"TOSCA-Metadata/TOSCA.meta", "Created-by", "Created-By"},
				{idiomsDF, "    requirements:\n      virtual_link_external: []\n", ""}, {idiomsDF, "      requirements:\n", ""},
				{idiomsDF, "          instantiate: []\n", ""}, {idiomsDF, "          terminate: []\n", ""},
				{idiomsDF, "../Scripts/sample_script.py", "script.py"}}),
			files: map[string]string{"Definitions/script.py": "print(1)\n"},
			want:  []string{idiomsDF + `:35:5: topology_template.node_templates["VDU1"].capabilities["virtual_binding"]: not enough relationships: 0 < 1`}},
		{name: "an instantiate request that is not JSON", pkg: "cnf-manifests", request: "{ \"flavourId\": \"simple\",\n  \"additionalParams\": [ }\n",
			want: []string{"request.yaml:2: the instantiate request is not valid JSON"}},
		{name: "additionalParams that are no map", pkg: "cnf-manifests", request: "flavourId: simple\nadditionalParams: [ a ]\n",
			want: []string{"request.yaml: additionalParams: is a list, not a map"}},
		{name: "lcm-kubernetes-def-files that are no list", pkg: "cnf-manifests", request: "flavourId: simple\nadditionalParams:\n  lcm-kubernetes-def-files: Files/kubernetes/front.yaml\n",
			want: []string{"additionalParams.lcm-kubernetes-def-files is text, not a list of package paths"}},
		{name: "a Helm chart that is not in the package", pkg: "cnf-helm", request: "flavourId: simple\nadditionalParams: { helm_chart_path: Files/kubernetes/nowhere.tgz }\n",
			want: []string{"Files/kubernetes/nowhere.tgz: Helm chart: Files/kubernetes/nowhere.tgz is neither a chart archive nor a chart directory of the package"}},
		{name: "a Helm template that fails", pkg: "cnf-helm", request: "flavourId: simple\nadditionalParams: { helm_chart_path: Files/kubernetes/hello-chart }\n",
			files: map[string]string{"Files/kubernetes/hello-chart/templates/broken.yaml": "kind: {{ required \"a name is required\" .Values.name }}\n"},
			want:  []string{"Files/kubernetes/hello-chart: Helm chart hello-chart:", "a name is required"}},
		{name: "helm_value_names naming no VDU", pkg: "cnf-helm", request: "flavourId: simple\nadditionalParams:\n  helm_chart_path: Files/kubernetes/hello-chart\n  helm_value_names: { VDU9: { replica: replicas } }\n",
			want: []string{"helm_value_names names VDU9, which is not a VDU of the flavour"}},
		{name: "a flavour that maps nothing", pkg: "cnf-manifests", request: "flavourId: complex\n",
			files: map[string]string{"Definitions/hello_df_complex.yaml": strings.Join([]string{"tosca_definitions_version: tosca_simple_yaml_1_2",
				"imports: [ etsi_nfv_sol001_vnfd_types.yaml, hello_types.yaml ]",
				"topology_template:", "  substitution_mappings: { node_type: calaf.test.HelloCNF, properties: { flavour_id: complex } }",
				"  node_templates:", "    VNF: { type: calaf.test.HelloCNF }", ""}, "\n")},
			want: []string{`flavour "complex" maps no node to any Kubernetes object`}},
		{name: "missing inputs reported together, in order", pkg: "cnf-manifests", request: simpleReq,
			edits: []edit{{simpleDF, "flavour_description: { type: string }", "flavour_description: { type: string }\n    zone: { type: string }\n    rack: { type: integer }"}},
			want:  []string{simpleDF + `:20:5: topology_template.inputs["zone"]: unassigned required input definition`, simpleDF + `:21:5: topology_template.inputs["rack"]: unassigned required input definition`}},
		{name: "an instantiate request for a package that is no VNF", pkg: "cnf-manifests", request: "flavourId: simple\n",
			files: map[string]string{"TOSCA-Metadata/TOSCA.meta": "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: x\nEntry-Definitions: Definitions/hello_types.yaml\n"},
			want:  []string{`flavourId "simple": the package is not an ETSI SOL001 VNF package`}},
	}
}

// TestETSIBadInputs feeds calaf validate SOL001 packages and requests that are wrong, and
// the tolerated idioms with --strict: each must end with exit code 1 and diagnostics that
// name the file and line, without a panic.
func TestETSIBadInputs(t *testing.T) {
	for _, c := range etsiCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"validate"}, c.build(t, dir)...)
			code, stdout, stderr := runCalaf(t, caseTimeout, args...)
			t.Logf("exit %d\n%s%s", code, stdout, stderr)
			if code != ExitInvalid {
				t.Errorf("exit code %d, want %d", code, ExitInvalid)
			}
			for _, want := range c.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr shows a panic")
			}
		})
	}
}

// A package whose nodes map to no object at all validates, and says so: an ETSI VNFD
// without deployment flavours (as published packages are, once edited to compile as a
// single template) would otherwise render nothing, silently.
func TestNoObjectsIsSaid(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"vnfd.yaml": `tosca_definitions_version: tosca_simple_yaml_1_2
imports:
- https://calaf.io/profiles/etsi-nfv/sol001/1.0/etsi_nfv_sol001_vnfd_types.yaml
topology_template:
  node_templates:
    VDU1:
      type: tosca.nodes.nfv.Vdu.Compute
      properties: { name: vdu1, vdu_profile: { min_number_of_instances: 1, max_number_of_instances: 1 } }
`})
	code, stdout, stderr := runCalaf(t, caseTimeout, "validate", filepath.Join(dir, "vnfd.yaml"))
	if code != ExitOK || !strings.Contains(stdout, "0 objects") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if want := "warning: vnfd.yaml: the package validates but maps no node to any Kubernetes object: none of the types of its 1 node templates (tosca.nodes.nfv.Vdu.Compute) has a renderer"; !strings.Contains(stderr, want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr)
	}
}
