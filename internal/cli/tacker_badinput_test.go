package cli

import (
	"strings"
	"testing"
)

// The files of the Tacker-style test package the cases below change.
const (
	tackerDF     = "Definitions/tacker_df_simple.yaml"
	tackerVdumap = "Definitions/tacker_df_vdumap.yaml"
	tackerTypes  = "Definitions/tacker_types.yaml"
	tackerETSI   = "Definitions/etsi_nfv_sol001_vnfd_types.yaml"
)

// Edits that take, one after the other, the tolerated idioms out of the Tacker-style
// package, so that a strict validate reaches the next one.
var (
	tackerCreatedBy   = []edit{{"TOSCA-Metadata/TOSCA.meta", "Created-by", "Created-By"}}
	tackerNoMappings  = []edit{{tackerDF, "    requirements:\n      virtual_link_external: []\n", ""}, {tackerVdumap, "    requirements:\n      virtual_link_external: []\n", ""}}
	tackerNoOccurs    = []edit{{tackerETSI, "        occurrences: [ 1, 1 ]\n", ""}, {tackerETSI, "        occurrences: [ 1, UNBOUNDED ]\n", ""}}
	tackerComputeSpec = "capabilities:\n        virtual_compute:\n          properties:\n            virtual_memory: { virtual_mem_size: 64 MiB }\n            virtual_cpu: { num_virtual_cpu: 1 }\n      properties:"
	tackerCompute     = []edit{{tackerDF, "      properties:\n        name: vdu1", "      " + tackerComputeSpec + "\n        name: vdu1"},
		{tackerDF, "      properties:\n        name: vdu2", "      " + tackerComputeSpec + "\n        name: vdu2"},
		{tackerVdumap, "      properties:\n        name: VDU1", "      " + tackerComputeSpec + "\n        name: VDU1"}}
	tackerNoLinks = []edit{{tackerTypes, "    requirements:\n    - virtual_link_external:\n        capability: tosca.capabilities.nfv.VirtualLinkable\n", ""}}
)

// tackerScript puts the management script next to the flavour, where TOSCA looks for it.
var tackerScript = map[string]string{"Definitions/Scripts/tacker_mgmt.py": "print(1)\n"}

const (
	tackerOneFile = `{ "flavourId": "simple", "additionalParams": { "lcm-kubernetes-def-files": [ "Files/kubernetes/vdu2.yaml" ] } }`
	tackerVdumapR = `{ "flavourId": "vdumap", "additionalParams": { "lcm-kubernetes-def-files": [ "Files/kubernetes/vdumap.yaml" ], "vdu_mapping": { "VDU1": { "name": "vdumap-a", "kind": "Deployment" } } } }`
	tackerHelmV1  = `{ "flavourId": "helmchart", "additionalParams": { "use_helm": "true", "using_helm_install_param": [ %s ],
  "helm_replica_values": %s, "vdu_mapping": { "VDU1": { "name": "vdu1-localchart", "kind": "Deployment", "helmreleasename": "vdu1" } } } }`
	tackerLocal = `{ "exthelmchart": "false", "helmchartfile_path": "Files/kubernetes/localchart-0.1.0.tgz", "helmreleasename": "vdu1", "helmparameter": [ "service.port=8081" ] }`
)

// helmV1 is a Tacker v1 Helm request with the installs and helm_replica_values given.
func helmV1(installs, replicaValues string) string {
	return strings.Replace(strings.Replace(tackerHelmV1, "%s", installs, 1), "%s", replicaValues, 1)
}

func tackerCases() []etsiCase {
	return []etsiCase{
		{name: "strict: an artifact named from the package's root", pkg: "cnf-tacker", request: tackerOneFile, strict: true, edits: tackerCreatedBy,
			want: []string{tackerDF + `:43:17: artifact file "Scripts/tacker_mgmt.py" is not next to ` + tackerDF + `; Scripts/tacker_mgmt.py at the package's root would be read (Tacker's convention) (refused with --strict`}},
		{name: "strict: virtual_compute left unassigned", pkg: "cnf-tacker", request: tackerOneFile, strict: true,
			edits: withEdits(tackerCreatedBy, tackerNoMappings), files: tackerScript,
			want: []string{tackerDF + `:43:5: topology_template.node_templates["VDU1"].capabilities["virtual_compute"].properties["virtual_cpu"]: unassigned required property`,
				tackerDF + `:52:5: topology_template.node_templates["VDU2"].capabilities["virtual_compute"].properties["virtual_memory"]: unassigned required property`}},
		{name: "strict: a virtual link requirement unsatisfied", pkg: "cnf-tacker", request: tackerVdumapR, strict: true,
			edits: withEdits(tackerCreatedBy, tackerNoMappings, tackerNoOccurs, tackerCompute), files: tackerScript,
			want: []string{tackerVdumap + `:29:5: topology_template.node_templates["VNF"].requirements{0}: could not satisfy "virtual_link_external" because no candidate node template provides required capability`}},
		{name: "strict: a flavour_id the VNF type does not list", pkg: "cnf-tacker", request: tackerVdumapR, strict: true,
			edits: withEdits(tackerCreatedBy, tackerNoMappings, tackerNoOccurs, tackerCompute, tackerNoLinks), files: tackerScript,
			want: []string{tackerVdumap + `:26:7: topology_template.substitution_mappings.properties["flavour_id"]: returned false in call to tosca.constraint.valid_values("vdumap","simple")`}},
		{name: "strict: a VDU the listed manifests do not realize", pkg: "cnf-tacker", request: tackerOneFile, strict: true,
			edits: withEdits(tackerCreatedBy, tackerNoMappings, tackerNoOccurs, tackerCompute, tackerNoLinks), files: tackerScript,
			want: []string{tackerDF + `:43: VDU VDU1 is not instantiated: no workload named "vdu1" (its properties.name) in the manifests the request lists (Files/kubernetes/vdu2.yaml) (refused with --strict`}},
		{name: "a Helm chart of a repository (Tacker v1)", pkg: "cnf-tacker", request: helmV1(tackerLocal+`, { "exthelmchart": "true", "helmreleasename": "vdu2", "helmrepositoryname": "bitnami", "helmchartname": "apache", "exthelmrepo_url": "https://charts.example.com/bitnami" }`, `{}`),
			want: []string{`Definitions/tacker_df_helmchart.yaml: instantiate request: additionalParams.using_helm_install_param[1] (release "vdu2"): chart "apache" of the Helm repository "bitnami" (https://charts.example.com/bitnami) is not in the package, and Calaf downloads no chart`}},
		{name: "use_helm without charts (Tacker v1)", pkg: "cnf-tacker", request: `{ "flavourId": "helmchart", "additionalParams": { "use_helm": true } }`,
			want: []string{"request.yaml: additionalParams.use_helm is true, but using_helm_install_param is not a list of charts to install"}},
		{name: "a helmparameter that is no key=value (Tacker v1)", pkg: "cnf-tacker", request: helmV1(strings.Replace(tackerLocal, `"service.port=8081"`, `"service.port"`, 1), `{}`),
			want: []string{`additionalParams.using_helm_install_param[0].helmparameter[0] is not a "key=value" string`}},
		{name: "a release name that is no DNS label (Tacker v1)", pkg: "cnf-tacker", request: helmV1(strings.Replace(tackerLocal, `"helmreleasename": "vdu1"`, `"helmreleasename": "../VDU 1"`, 1), `{}`),
			want: []string{`additionalParams.using_helm_install_param[0].helmreleasename "../VDU 1" is not a Helm release name (a DNS label of at most 53 characters)`}},
		{name: "a local chart without helmchartfile_path (Tacker v1)", pkg: "cnf-tacker", request: helmV1(`{ "exthelmchart": "false", "helmreleasename": "vdu1" }`, `{}`),
			want: []string{"additionalParams.using_helm_install_param[0] needs a helmchartfile_path (the chart in the package)"}},
		{name: "helm_replica_values that are no map (Tacker v1)", pkg: "cnf-tacker", request: helmV1(tackerLocal, `[ "replicaCount" ]`),
			want: []string{"additionalParams.helm_replica_values is list, not a map of aspect to values key"}},
		{name: "a vdu_mapping entry without a name", pkg: "cnf-tacker", request: `{ "flavourId": "vdumap", "additionalParams": { "vdu_mapping": { "VDU1": { "kind": "Deployment" } } } }`,
			want: []string{"additionalParams.vdu_mapping.VDU1 needs the name of the VDU's workload"}},
		{name: "a vdu_mapping naming no workload of the manifests", pkg: "cnf-tacker", request: strings.Replace(tackerVdumapR, `"name": "vdumap-a", "kind": "Deployment"`, `"name": "vdumap-a", "kind": "StatefulSet"`, 1),
			want: []string{tackerVdumap + `:36: VDU VDU1: no StatefulSet "vdumap-a" (additionalParams.vdu_mapping) in Files/kubernetes/vdumap.yaml`}},
		{name: "a manifest by URL (Tacker's external artifact)", pkg: "cnf-tacker",
			edits:   []edit{{"TOSCA-Metadata/TOSCA.meta", "", "\nName: http://127.0.0.1:8000/storage-class.yaml\nContent-Type: application/yaml\nAlgorithm: SHA-256\nHash: 00\n"}},
			request: `{ "flavourId": "simple", "additionalParams": { "lcm-kubernetes-def-files": [ "http://127.0.0.1:8000/storage-class.yaml" ] } }`,
			want:    []string{"error: http://127.0.0.1:8000/storage-class.yaml: additionalParams.lcm-kubernetes-def-files names a URL, and Calaf downloads nothing: put the manifest in the package and list its package path"}},
		{name: "a stale TOSCA.meta digest names calaf package digest", pkg: "cnf-tacker", request: tackerOneFile, keepHashes: true,
			edits: []edit{{"Files/kubernetes/vdu2.yaml", "", "# changed\n"}},
			want:  []string{"Files/kubernetes/vdu2.yaml: SHA-256 mismatch", "integrity: TOSCA-Metadata/TOSCA.meta: the digests do not match the files: if the files changed on purpose, `calaf package digest` rewrites the package's digests from them (before it is signed)"}},
	}
}

// TestTackerBadInputs feeds calaf validate the Tacker-style package with requests it must
// refuse, and its tolerated idioms with --strict: exit code 1, each diagnostic naming the
// file (and line) it is about.
func TestTackerBadInputs(t *testing.T) {
	for _, c := range tackerCases() {
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
		})
	}
}
