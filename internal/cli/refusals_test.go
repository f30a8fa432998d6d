package cli

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// Classes of packages that were let through, or refused in words no one could act on,
// before every rendered object, operation, attribute mapping and template was checked
// offline (TestRefusals).
const (
	refusalRenderer   = "renderer result"
	refusalIdentity   = "object identity"
	refusalOperation  = "operation"
	refusalAttribute  = "attribute mapping"
	refusalAmbiguity  = "ambiguity"
	refusalDiagnostic = "diagnostic"
	refusalInputs     = "inputs file"
	refusalSize       = "size"
)

// maxLine bounds every line calaf prints about a package.
const maxLine = 500

// goInternals matches what a line must not show: Go's names of types and values, its
// packages, its runtime and the internals of the libraries' errors.
var goInternals = regexp.MustCompile(`map\[|\[\]interface|interface \{\}|\[\]any\b|\bany\{|\*[a-z][a-z0-9]*\.[A-Z]|\(\*[A-Z]\w*\)|\b(github\.com|golang\.org|gopkg\.in|k8s\.io)/|\.go:\d+|goroutine \d|bytes\.Reader|reflect\.|runtime error|\b(u?int(8|16|32|64)|float(32|64))\b|Go (struct|value|type)|%!|\bnil\b`)

// refusal is a package that calaf validate and calaf render must refuse with exit code 1
// and exactly this first line on stderr ({dir} standing for the case's directory).
type refusal struct {
	class, name string
	build       func(t *testing.T, dir string) []string
	first       string
}

// checkLines fails the test for a line of output longer than maxLine or showing Go's
// internals.
func checkLines(t *testing.T, output string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimRight(output, "\n"), "\n") {
		if n := len([]rune(line)); n > maxLine {
			t.Errorf("a line of %d characters (at most %d): %.200s…", n, maxLine, line)
		}
		if m := goInternals.FindString(line); m != "" {
			t.Errorf("a line shows Go's internals (%q): %.300s", m, line)
		}
	}
}

// TestRefusals runs every case of refusals through calaf validate and calaf render: both
// must exit 1, their first line is the case's, and no line is longer than maxLine or shows
// Go's internals.
func TestRefusals(t *testing.T) {
	count := map[string]int{}
	for _, c := range refusals() {
		count[c.class]++
		t.Run(c.class+"/"+c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := c.build(t, dir)
			want := "error: " + strings.ReplaceAll(c.first, "{dir}", dir)
			for _, command := range []string{"validate", "render"} {
				code, stdout, stderr := runCalaf(t, caseTimeout, append([]string{command, "--script-timeout", "2s"}, args...)...)
				if code != ExitInvalid {
					t.Errorf("calaf %s: exit code %d, want %d\nstdout:\n%.2000s\nstderr:\n%.2000s", command, code, ExitInvalid, stdout, stderr)
				}
				if first, _, _ := strings.Cut(stderr, "\n"); first != want {
					t.Errorf("calaf %s: first line\n%.1000s\nwant\n%s", command, first, want)
				}
				checkLines(t, stdout+stderr)
			}
		})
	}
	for _, class := range []string{refusalRenderer, refusalIdentity, refusalOperation, refusalAttribute, refusalAmbiguity, refusalDiagnostic, refusalInputs, refusalSize} {
		if count[class] < 3 {
			t.Errorf("class %q has %d cases", class, count[class])
		}
	}
}

func refusals() []refusal {
	var all []refusal
	for _, class := range [][]refusal{rendererRefusals(), identityRefusals(), operationRefusals(), attributeRefusals(),
		ambiguityRefusals(), diagnosticRefusals(), inputsRefusals(), sizeRefusals()} {
		all = append(all, class...)
	}
	return all
}

// contract is the end of the diagnostic of a result that breaks the renderer contract.
const contract = ", not { objects: [...], attributes: {...} } nor a list of objects (the renderer contract, docs/profiles.md)"

func rendererRefusals() []refusal {
	return []refusal{
		{refusalRenderer, "a number", renderer("42"), thing + "renderer vendor.render.thing: returned the number 42" + contract},
		{refusalRenderer, "nothing", service(vendorType("exports.render = function (node, ctx) { };")),
			thing + "renderer vendor.render.thing: returned undefined" + contract},
		{refusalRenderer, "a string", renderer("'ConfigMap'"), thing + `renderer vendor.render.thing: returned the string "ConfigMap"` + contract},
		{refusalRenderer, "objects that are no list", renderer("{ objects: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } } }"),
			thing + "renderer vendor.render.thing: returned objects that are an object, not a list of objects"},
		{refusalRenderer, "attributes that are no map", renderer("{ objects: [], attributes: ['ready'] }"),
			thing + "renderer vendor.render.thing: returned attributes that are a list, not a map of attribute names to mappings"},
		{refusalRenderer, "a misspelt member", renderer("{ object: [] }"),
			thing + `renderer vendor.render.thing: returned an object with the member "object": a result has objects and attributes only`},
		{refusalRenderer, "an object that is a number", renderer("[7]"),
			`node "thing": renderer vendor.render.thing returned objects[0] as the number 7, not an object`},
	}
}

// crd is a CustomResourceDefinition of the kind Widget of example.com, served in v1.
const crd = `{ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.example.com' },
  spec: { group: 'example.com', scope: 'Namespaced', names: { kind: 'Widget', plural: 'widgets' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }] } }`

func identityRefusals() []refusal {
	object := func(apiVersion, kind string) func(*testing.T, string) []string {
		return renderer(fmt.Sprintf("[{ apiVersion: %q, kind: %q, metadata: { name: 'x' } }]", apiVersion, kind))
	}
	return []refusal{
		{refusalIdentity, "an apiVersion that climbs", object("a/b/c/../../d", "ConfigMap"),
			thing + `ConfigMap "x": apiVersion "a/b/c/../../d": it is no version ("v1") nor group/version ("apps/v1")`},
		{refusalIdentity, "a kind with a space and a bang", object("v1", "Config Map!"),
			thing + `Config Map! "x": kind "Config Map!": a kind is a word of letters and digits that starts with a letter (ConfigMap, StatefulSet)`},
		{refusalIdentity, "a group in capitals", object("Example.COM/v1", "Widget"),
			thing + `Widget "x": apiVersion "Example.COM/v1": group "Example.COM": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{refusalIdentity, "a version that is no word", object("apps/v1.0", "Deployment"),
			thing + `Deployment "x": apiVersion "apps/v1.0": version "v1.0": a version is a lower-case word of letters and digits that starts with a letter (v1, v1beta1)`},
		{refusalIdentity, "a misspelt built-in kind", object("apps/v1", "Deploymnet"),
			thing + `Deploymnet "x": kind "Deploymnet": Kubernetes has no such kind in apps/v1 (Deployment?)`},
		{refusalIdentity, "a built-in kind in a version of another group", object("v1", "Deployment"),
			thing + `Deployment "x": kind "Deployment": Kubernetes has no such kind in v1`},
		{refusalIdentity, "a version a built-in group does not have", object("apps/v2", "Deployment"),
			thing + `Deployment "x": apiVersion "apps/v2": the group apps of Kubernetes has the versions v1, v1beta1, v1beta2, not "v2"`},
		{refusalIdentity, "a kind the package's definition does not define", renderer("[" + crd + ", { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'x' } }]"),
			thing + `Gadget "x": kind "Gadget": the package's CustomResourceDefinitions of example.com define Widget only`},
		{refusalIdentity, "a version the package's definition does not serve", renderer("[" + crd + ", { apiVersion: 'example.com/v2', kind: 'Widget', metadata: { name: 'x' } }]"),
			thing + `Widget "x": apiVersion "example.com/v2": the package's CustomResourceDefinition serves Widget in v1 only`},
	}
}

// operations writes a package whose Deployment "web" has the artifacts and interfaces of
// spec (YAML under the node template) and the files given besides service.yaml.
func operations(spec string, files map[string]string) func(*testing.T, string) []string {
	all := map[string]string{"service.yaml": serviceYAML("", "", spec)}
	for name, body := range files {
		all[name] = body
	}
	return dirPackage(all)
}

// web prefixes the diagnostics about the node "web" of operations' packages.
const web = `service.yaml: node "web": `

func operationRefusals() []refusal {
	configure := "  interfaces:\n    Standard:\n      operations:\n        configure: %s\n"
	withArtifact := func(file, kind, implementation string) string {
		return "  artifacts:\n    configure:\n      type: " + kind + "\n      file: " + file + "\n" + fmt.Sprintf(configure, implementation)
	}
	listed := map[string]string{"Artifacts/configure.sh": "echo configured\n"}
	unlisted := manifestPackage()
	unlisted["service.yaml"] = strings.Replace(unlisted["service.yaml"], "- types/types.yaml\n", "", 1) + indent(fmt.Sprintf(configure, "Artifacts/configure.sh"), "    ")
	unlisted["service.mf"] = strings.Replace(unlisted["service.mf"], sha256Hex(manifestPackage()["service.yaml"]), sha256Hex(unlisted["service.yaml"]), 1)
	unlisted["Artifacts/configure.sh"] = "echo configured\n"
	delete(unlisted, "types/types.yaml")
	return []refusal{
		{refusalOperation, "an artifact file that is missing", operations(withArtifact("Artifacts/configure.js", "calaf.artifacts.JavaScript", "configure"), nil),
			`service.yaml:25:17: artifact file "Artifacts/configure.js": "Artifacts/configure.js" is not a file of the package`},
		{refusalOperation, "an implementation that climbs out of the package", operations(fmt.Sprintf(configure, "../../../../etc/shadow"), nil),
			web + `operation "Standard.configure": implementation "../../../../etc/shadow": it leaves the package`},
		{refusalOperation, "an implementation that is neither artifact nor file", operations(fmt.Sprintf(configure, "configur"), nil),
			web + `operation "Standard.configure": implementation "configur" is no artifact of the node and no file of the package ("configur")`},
		{refusalOperation, "an artifact the runner cannot run", operations(withArtifact("Artifacts/configure.py", "tosca.artifacts.Implementation.Python", "configure"), map[string]string{"Artifacts/configure.py": "print('configured')\n"}),
			web + `operation "Standard.configure": artifact "configure" is "tosca::Implementation.Python": the runner runs calaf.artifacts.JavaScript and calaf.artifacts.Shell artifacts`},
		{refusalOperation, "a dependency that is missing", operations("  artifacts:\n    configure:\n      type: calaf.artifacts.Shell\n      file: Artifacts/configure.sh\n"+
			fmt.Sprintf(configure, "{ implementation: { primary: configure, dependencies: [ lib.sh ] } }"), listed),
			web + `operation "Standard.configure": dependency "lib.sh": "Artifacts/lib.sh" is not a file of the package`},
		{refusalOperation, "a script the manifest does not list", dirPackage(unlisted),
			web + `operation "Standard.configure": implementation "Artifacts/configure.sh": "Artifacts/configure.sh" is not listed in the manifest service.mf: an unlisted script is refused`},
	}
}

func attributeRefusals() []refusal {
	cm := "{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }"
	mapping := func(m string) func(*testing.T, string) []string {
		return renderer("{ objects: [" + cm + "], attributes: { password: " + m + " } }")
	}
	return []refusal{
		{refusalAttribute, "another object's Secret", mapping("{ object: 'Secret/someone-elses', path: 'data.password' }"),
			thing + `attribute "password": maps to "Secret/someone-elses", which is not an object of the node (its objects are ConfigMap/x): an attribute is read from an object the node renders itself`},
		{refusalAttribute, "an object of a node that renders none", renderer("{ objects: [], attributes: { password: { object: 'Secret/db', path: 'data.password' } } }"),
			thing + `attribute "password": maps to "Secret/db", which is not an object of the node (it renders none): an attribute is read from an object the node renders itself`},
		{refusalAttribute, "a path that is no path", mapping("{ object: 'ConfigMap/x', path: 'data..password[x]' }"),
			thing + `attribute "password": path "data..password[x]" is not a dotted path of names and list indexes (status.loadBalancer.ingress[0].ip)`},
		{refusalAttribute, "a default of 1 MB", mapping("{ object: 'ConfigMap/x', path: 'data.password', default: 'x'.repeat(1000000) }"),
			thing + `attribute "password": its default takes 1000002 bytes, more than the limit of 16 KiB`},
	}
}

func ambiguityRefusals() []refusal {
	secret := "---\ntosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates:\n    creds:\n      type: calaf.nodes.Secret\n"
	valid := serviceYAML("", "", "")
	lines := strings.Count(valid, "\n")
	return []refusal{
		{refusalAmbiguity, "a second document holding a Secret", service(valid + secret),
			fmt.Sprintf("service.yaml:%d: a second YAML document (after ---): a template is one document, and TOSCA would ignore the rest", lines+2)},
		{refusalAmbiguity, "a node template named null", service(serviceYAML("", "", "null:\n  type: calaf.nodes.ConfigMap\n")),
			fmt.Sprintf(`service.yaml:%d:5: a key that is a YAML null (null): quote it ("null") if the name is meant`, lines+1)},
		{refusalAmbiguity, "a node template named ~", service(serviceYAML("", "", "~:\n  type: calaf.nodes.ConfigMap\n")),
			fmt.Sprintf(`service.yaml:%d:5: a key that is a YAML null (~): quote it ("null") if the name is meant`, lines+1)},
	}
}

// loop is a template whose nodes a and b read each other's value of section (properties
// or attributes) with function.
func loop(section, function string) string {
	types := "node_types:\n  x.Loop:\n    derived_from: calaf.nodes.ConfigMap\n    " + section + ":\n      v: { type: string }\n"
	nodes := fmt.Sprintf("a:\n  type: x.Loop\n  %s:\n    v: { %s: [ b, v ] }\nb:\n  type: x.Loop\n  %s:\n    v: { %s: [ a, v ] }\n", section, function, section, function)
	return serviceYAML("", types, nodes)
}

// negativeOffset is a CSAR whose central directory gives its first entry a zip64 offset
// of 2^64-1: the zip reader's bytes.Reader answers "negative offset".
func negativeOffset(t *testing.T) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	zip64Offset := []byte{1, 0, 8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	for i, e := range csarEntries(serviceYAML("", "", "")) {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if i == 0 {
			h.Extra = zip64Offset
		}
		f, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	at := bytes.Index(data, []byte("PK\x01\x02"))
	binary.LittleEndian.PutUint32(data[at+42:], 0xffffffff) // the local header's offset is in the zip64 field
	return data
}

func diagnosticRefusals() []refusal {
	long := strings.Repeat("n", 1000)
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  ? { a: 1 }\n  : v\n"
	return []refusal{
		{refusalDiagnostic, "two properties that read each other", service(loop("properties", "get_property")),
			"service.yaml:30:9: topology_template.node_templates[\"a\"].properties[\"v\"]: the values read each other in a loop: a.v → b.v → a.v"},
		{refusalDiagnostic, "two attributes that read each other", service(loop("attributes", "get_attribute")),
			"service.yaml:30:9: topology_template.node_templates[\"a\"].attributes[\"v\"]: the values read each other in a loop: a.v → b.v → a.v"},
		{refusalDiagnostic, "a manifest with a map as a key", dirPackage(map[string]string{"cm.yaml": manifest,
			"service.yaml": serviceYAML("", "", "m:\n  type: calaf.nodes.Manifests\n  artifacts:\n    cm:\n      type: calaf.artifacts.Manifest\n      file: cm.yaml\n")}),
			`service.yaml: node "m": renderer calaf.render.manifests: invalid YAML: line 6: a key that is a map or a list: the keys of Kubernetes objects are text`},
		{refusalDiagnostic, "a zip whose offset is negative", archive("negative.csar", negativeOffset),
			`negative.csar: ambiguous zip archive: entry "TOSCA-Metadata/TOSCA.meta": its local header cannot be read: an offset or a size is out of range: the archive is corrupt`},
		{refusalDiagnostic, "an object name of 10,000 characters", renderer("[{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x'.repeat(10000) } }]"),
			thing + `ConfigMap "` + strings.Repeat("x", 79) + `…": metadata.name: Invalid value: "` + strings.Repeat("x", 79) + `…": must be no more than 253 characters`},
		{refusalDiagnostic, "a node template name of 1,000 characters", service(vendorType("exports.render = function (node, ctx) { throw 'broken'; };") + "    " + long + ":\n      type: vendor.nodes.Thing\n"),
			`service.yaml: node "` + long[:79] + `…": renderer vendor.render.thing: broken`},
		{refusalDiagnostic, "an archive entry name of 10,000 characters", archive("long.csar", func(t *testing.T) []byte {
			return zipBytes(t, csar(entry{name: "../" + strings.Repeat("a", 10000), body: "x"})...)
		}), "../" + strings.Repeat("a", 156) + `…: path "../` + strings.Repeat("a", 76) + `…" leaves the package`},
	}
}

// badInputsFile writes a valid package and an inputs file of content, and gives it to calaf.
func badInputsFile(content []byte) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		args := service(serviceYAML("", "", ""))(t, dir)
		return append(args, "--inputs", writeFile(t, dir, "inputs.yaml", content))
	}
}

func inputsRefusals() []refusal {
	return []refusal{
		{refusalInputs, "a file that cannot be read", func(t *testing.T, dir string) []string {
			return append(service(serviceYAML("", "", ""))(t, dir), "--inputs", dir)
		}, "{dir}: inputs file: cannot read it: is a directory"},
		{refusalInputs, "a list", badInputsFile([]byte("- replicas\n- image\n")), "{dir}/inputs.yaml:1: inputs file: it holds a list, not a map of input names to values"},
		{refusalInputs, "a key given twice", badInputsFile([]byte("replicas: 1\nreplicas: 2\n")), `{dir}/inputs.yaml:2: inputs file: mapping key "replicas" already defined at line 1`},
		{refusalInputs, "a binary file", badInputsFile([]byte{0x89, 'P', 'N', 'G', 0xff, 0xfe, 0, 1, 2}), "{dir}/inputs.yaml: inputs file: invalid YAML: the text is not UTF-8 (a binary file?)"},
		{refusalInputs, "invalid YAML", badInputsFile([]byte("replicas: [1,\n")), "{dir}/inputs.yaml:1: inputs file: invalid YAML: did not find expected node content"},
		{refusalInputs, "a map as a value's key", badInputsFile([]byte("? { a: 1 }\n: 2\n")), "{dir}/inputs.yaml:1:3: inputs file: a key that is a map or a list: names are text"},
	}
}

// nodeTemplates is a template of n ConfigMap node templates.
func nodeTemplates(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "cm%d:\n  type: calaf.nodes.ConfigMap\n", i)
	}
	return serviceYAML("", "", b.String())
}

// imports is a package whose template imports n type files.
func imports(n int) func(*testing.T, string) []string {
	files := map[string]string{}
	var list strings.Builder
	for i := range n {
		name := fmt.Sprintf("types/t%d.yaml", i)
		files[name] = "tosca_definitions_version: tosca_simple_yaml_1_3\n"
		fmt.Fprintf(&list, "- %s\n", name)
	}
	files["service.yaml"] = strings.Replace(serviceYAML("", "", ""), "imports:\n", "imports:\n"+list.String(), 1)
	return dirPackage(files)
}

func sizeRefusals() []refusal {
	million := "metadata:\n  template_name: bad-input\n  numbers: [" + strings.TrimSuffix(strings.Repeat("1,", 1000000), ",") + "]\n"
	var entries strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&entries, "          k%d: v\n", i)
	}
	bigMap := serviceYAML("", "", "cm:\n  type: calaf.nodes.ConfigMap\n  properties:\n    data:\n") + entries.String()
	return []refusal{
		{refusalSize, "10,000 node templates", service(nodeTemplates(10000)),
			"service.yaml:17:5: node_templates: 10001 node templates in the package, more than the limit of 2000"},
		{refusalSize, "a list of a million numbers", service(strings.Replace(serviceYAML("", "", ""), "metadata:\n  template_name: bad-input\n", million, 1)),
			"service.yaml: the templates of the package hold up to 1000050 YAML values (counting line breaks and , : - [ { ?), more than the limit of 150000"},
		{refusalSize, "a map of 20,000 entries", service(bigMap),
			"service.yaml:26:11: a map of 20000 entries, more than the limit of 10000 per list or map"},
		{refusalSize, "300 templates", imports(300), "types/t255.yaml: more than 256 templates (the entry and the files it imports): the limit of a package"},
	}
}
