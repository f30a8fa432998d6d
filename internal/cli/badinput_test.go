package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caseTimeout is generous: every case is expected to end within a few seconds; the limit
// only turns a hang into a failure instead of a stuck test binary.
const caseTimeout = 30 * time.Second

const profileImport = "https://calaf.io/profiles/kubernetes/1.0/profile.yaml"

// serviceYAML is a valid service template; extra is appended to its top level, nodes to
// its node_templates, metadata to its metadata.
func serviceYAML(metadata, extra, nodes string) string {
	return `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  template_name: bad-input
` + indent(metadata, "  ") + `
imports:
- ` + profileImport + `
` + extra + `
topology_template:
  inputs:
    replicas:
      type: integer
      default: 1
    image:
      type: string
      default: busybox:1.36
  node_templates:
    web:
      type: calaf.nodes.Deployment
      properties:
        image: { get_input: image }
        replicas: { get_input: replicas }
` + indent(nodes, "    ")
}

func indent(text, prefix string) string {
	if text == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, line := range lines {
		lines[i] = prefix + line
	}
	return strings.Join(lines, "\n") + "\n"
}

// functionTemplate declares a custom TOSCA function "probe" by an inline scriptlet and
// uses it in a property of a node template.
func functionTemplate(body string) string {
	return serviceYAML("puccini.scriptlet:tosca.function.probe: |-\n"+indent(body, "  "), "",
		"cm:\n  type: calaf.nodes.ConfigMap\n  properties:\n    data:\n      value: { probe: [] }\n")
}

const metaFile = "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-By: test\nEntry-Definitions: Definitions/service.yaml\n"

// badCase is a package that calaf must refuse (or, for exit 0, handle).
type badCase struct {
	name string
	// build writes the package below dir and returns the calaf arguments after the command.
	build func(t *testing.T, dir string) []string
	// want are substrings of the diagnostics on stderr (exit 1) or of stdout (exit 0).
	want []string
	// valid marks the one case that must work (exit 0): calaf normalizes what Puccini
	// would panic on.
	valid bool
	// marker, when set, is a file name in dir the package tries to create through a command.
	marker string
	// notOut are substrings that must not appear on stdout or stderr (host data).
	notOut []string
}

func dirPackage(files map[string]string, args ...string) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		pkg := filepath.Join(dir, "pkg")
		writeFiles(t, pkg, files)
		return append([]string{pkg}, args...)
	}
}

func service(text string, args ...string) func(*testing.T, string) []string {
	return dirPackage(map[string]string{"service.yaml": text}, args...)
}

func archive(name string, data func(t *testing.T) []byte) func(*testing.T, string) []string {
	return func(t *testing.T, dir string) []string {
		return []string{writeFile(t, dir, name, data(t))}
	}
}

func csarEntries(service string) []entry {
	return []entry{
		{name: "TOSCA-Metadata/TOSCA.meta", body: metaFile},
		{name: "Definitions/service.yaml", body: service},
	}
}

func badCases() []badCase {
	valid := serviceYAML("", "", "")
	return []badCase{
		{
			name:  "empty file",
			build: archive("empty.csar", func(*testing.T) []byte { return nil }),
			want:  []string{"empty.csar: package is empty"},
		},
		{
			name: "truncated zip",
			build: archive("truncated.csar", func(t *testing.T) []byte {
				data := zipBytes(t, csarEntries(valid)...)
				return data[:len(data)/2]
			}),
			want: []string{"truncated.csar: not a valid zip archive (CSAR)"},
		},
		{
			name: "garbage named .csar",
			build: archive("garbage.csar", func(*testing.T) []byte {
				return bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x00, 0x01}, 1000)
			}),
			want: []string{"garbage.csar: package is neither a zip (CSAR) nor a tar archive"},
		},
		{
			name: "TOSCA.meta without Entry-Definitions",
			build: archive("nometa.csar", func(t *testing.T) []byte {
				return zipBytes(t, entry{name: "TOSCA-Metadata/TOSCA.meta", body: "TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\n"},
					entry{name: "Definitions/service.yaml", body: valid})
			}),
			want: []string{"TOSCA-Metadata/TOSCA.meta: no Entry-Definitions key"},
		},
		{
			name: "Entry-Definitions pointing nowhere",
			build: archive("nowhere.csar", func(t *testing.T) []byte {
				return zipBytes(t, entry{name: "TOSCA-Metadata/TOSCA.meta", body: strings.Replace(metaFile, "service.yaml", "missing.yaml", 1)},
					entry{name: "Definitions/service.yaml", body: valid})
			}),
			want: []string{`Entry-Definitions "Definitions/missing.yaml" is not a file in the package`},
		},
		{
			name: "no TOSCA.meta and no template",
			build: archive("notemplate.csar", func(t *testing.T) []byte {
				return zipBytes(t, entry{name: "Files/readme.txt", body: "hello"})
			}),
			want: []string{"no TOSCA-Metadata/TOSCA.meta and no service template YAML at the package root"},
		},
		{
			name: "zip entry with ../",
			build: archive("dotdot.csar", func(t *testing.T) []byte {
				return zipBytes(t, append(csarEntries(valid), entry{name: "../../escaped.txt", body: "x"})...)
			}),
			want: []string{`path "../../escaped.txt" leaves the package`},
		},
		{
			name: "absolute zip entry",
			build: archive("absolute.csar", func(t *testing.T) []byte {
				return zipBytes(t, append(csarEntries(valid), entry{name: "/tmp/calaf-absolute-entry.txt", body: "x"})...)
			}),
			want: []string{`absolute path "/tmp/calaf-absolute-entry.txt" is not allowed`},
		},
		{
			name: "zip bomb (1 GiB of zeros)",
			build: archive("bomb.csar", func(t *testing.T) []byte {
				return zipBytes(t, append(csarEntries(valid), entry{name: "Files/zeros.bin", zeros: 1 << 30})...)
			}),
			want: []string{"Files/zeros.bin: decompresses to more than"},
		},
		{
			name: "tar entries starting with ./ work",
			build: archive("dotslash.tar.gz", func(t *testing.T) []byte {
				return tarGzBytes(t, entry{name: "./"}, entry{name: "./TOSCA-Metadata/"},
					entry{name: "./TOSCA-Metadata/TOSCA.meta", body: metaFile},
					entry{name: "./Definitions/"}, entry{name: "./Definitions/service.yaml", body: valid})
			}),
			valid: true,
			want:  []string{"valid: Definitions/service.yaml", "1 node templates, 1 objects"},
		},
		{
			name: "tar symlink",
			build: archive("symlink.tar.gz", func(t *testing.T) []byte {
				return tarGzBytes(t, append(csarEntries(valid), entry{name: "Files/passwd", symlink: "/etc/passwd"})...)
			}),
			want: []string{"Files/passwd: links are not allowed in a package"},
		},
		{
			name:  "single template in a cluttered directory works",
			build: clutteredDirectory,
			valid: true,
			want:  []string{"valid: service.yaml", "1 node templates, 1 objects"},
		},
		{
			name:  "invalid YAML",
			build: service("tosca_definitions_version: tosca_simple_yaml_1_3\ntopology_template:\n  node_templates: [\n    web: {\n"),
			want:  []string{"service.yaml", "invalid YAML"},
		},
		{
			name:  "YAML that is not a template",
			build: service("all:\n  hosts:\n    localhost: {}\n"),
			want:  []string{"service.yaml: not a service template: no tosca_definitions_version"},
		},
		{
			name:  "YAML alias bomb",
			build: service(aliasBomb()),
			want:  []string{"service.yaml: invalid YAML: its aliases expand it by more than 100000 nodes (an alias bomb?)"},
		},
		{
			name:  "self-import",
			build: service(strings.Replace(valid, "imports:\n", "imports:\n- service.yaml\n", 1)),
			want:  []string{`service.yaml:6:3: import "service.yaml" imports the file itself`},
		},
		{
			name: "import cycle",
			build: dirPackage(map[string]string{
				"service.yaml": strings.Replace(valid, "imports:\n", "imports:\n- types/a.yaml\n", 1),
				"types/a.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n- b.yaml\n",
				"types/b.yaml": "tosca_definitions_version: tosca_simple_yaml_1_3\nimports:\n- a.yaml\n",
			}),
			want: []string{`types/b.yaml:3:3: import "a.yaml" closes an import cycle: types/a.yaml → types/b.yaml → types/a.yaml`},
		},
		{
			name:  "import escaping the package",
			build: service(strings.Replace(valid, "imports:\n", "imports:\n- ../outside.yaml\n", 1)),
			want:  []string{`service.yaml:6:3: import "../outside.yaml": it leaves the package`},
		},
		{
			name:  "absolute import",
			build: service(strings.Replace(valid, "imports:\n", "imports:\n- /etc/passwd\n", 1)),
			want:  []string{`service.yaml:6:3: import "/etc/passwd": absolute paths are not allowed`},
		},
		{
			name:  "http import",
			build: service(strings.Replace(valid, "imports:\n", "imports:\n- http://example.com/types.yaml\n", 1)),
			want:  []string{`service.yaml:6:3: import "http://example.com/types.yaml" is not allowed`},
		},
		{
			name:  "template of another TOSCA version",
			build: service(strings.Replace(valid, "tosca_simple_yaml_1_3", "tosca_simple_yaml_1_2", 1)),
			want:  []string{`incompatible import "` + profileImport + `": the Calaf profiles are TOSCA 1.3`},
		},
		{
			name:  "unknown type",
			build: service(serviceYAML("", "", "db:\n  type: calaf.nodes.NoSuchThing\n")),
			want:  []string{`node_templates["db"].type: reference to unknown node type: calaf.nodes.NoSuchThing`},
		},
		{
			name:  "missing required input",
			build: service(strings.Replace(valid, "      type: string\n      default: busybox:1.36\n", "      type: string\n", 1)),
			want:  []string{`topology_template.inputs["image"]: unassigned required input`},
		},
		{
			name:  "mistyped input",
			build: service(valid, "-i", "replicas=three"),
			want:  []string{`inputs["replicas"]`, `"string" instead of "integer"`},
		},
		{
			name:  "undeclared input",
			build: service(valid, "-i", "color=blue"),
			want:  []string{`inputs["color"]`, "undeclared"},
		},
		{
			name:  "scriptlet throws a string",
			build: service(functionTemplate("exports.evaluate = function() { throw 'the probe is broken'; };")),
			want:  []string{"the probe is broken"},
		},
		{
			name:  "scriptlet loops forever",
			build: service(functionTemplate("exports.evaluate = function() { while (true) {} };")),
			want:  []string{"scriptlets did not finish within 2s: an endless loop in a TOSCA function or a renderer?"},
		},
		{
			name:  "two properties loop forever",
			build: service(serviceYAML("puccini.scriptlet:tosca.function.probe: |-\n  exports.evaluate = function() { while (true) {} };", "", "cm:\n  type: calaf.nodes.ConfigMap\n  properties:\n    data:\n      a: { probe: [] }\n      b: { probe: [] }\n      c: { probe: [] }\n")),
			want:  []string{"scriptlets did not finish within 2s: an endless loop in a TOSCA function or a renderer?"},
		},
		{
			name:   "scriptlet calls os.exec",
			build:  osExec,
			marker: "executed",
			want:   []string{"os is not defined"},
		},
		{
			name:   "scriptlet reads a host file with env.loadString",
			build:  service(functionTemplate("exports.evaluate = function() { return env.loadString('/etc/passwd'); };")),
			want:   []string{"loadString"},
			notOut: []string{"root:"},
		},
		{
			name:   "scriptlet reads a host file with clout.load",
			build:  service(functionTemplate("exports.evaluate = function() { return String(clout.load('/etc/passwd')); };")),
			want:   []string{"clout.load is not available"},
			notOut: []string{"root:"},
		},
		{
			name:  "scriptlet recurses forever",
			build: service(functionTemplate("function down(n) { return down(n + 1) + 1; }\nexports.evaluate = function() { return down(0); };")),
			want:  []string{`properties["data"]["value"]: call to tosca.function.probe() failed because the call stack overflowed (runaway recursion?) at down`},
		},
		{
			name:  "scriptlet deep-copies a cyclic value",
			build: service(functionTemplate("let a = {}; a.self = a;\nexports.evaluate = function() { util.deepCopy(a); return 'copied'; };")),
			want:  []string{"failed because value is cyclic, nested too deeply or too large"},
		},
		{
			name:  "scriptlet formats a cyclic value",
			build: service(functionTemplate("let a = {}; a.self = a;\nexports.evaluate = function() { return util.sprintf('%v', a); };")),
			want:  []string{"failed because value is cyclic, nested too deeply or too large"},
		},
		{
			name:  "scriptlet logs a cyclic value",
			build: service(functionTemplate("let a = {}; a.self = a;\nexports.evaluate = function() { console.log(a); throw 'logged it'; };")),
			want:  []string{"failed because logged it"},
		},
		{
			name:  "scriptlet coerces a cyclic value",
			build: service(functionTemplate("let a = {}; a.self = a;\nexports.evaluate = function() { return clout.coerce(clout.newCoercible(a)); };")),
			want:  []string{"failed because value is cyclic, nested too deeply or too large"},
		},
		{
			name:  "scriptlet locks a mutex twice",
			build: service(functionTemplate("exports.evaluate = function() { let m = util.mutex(); m.lock(); m.lock(); return 'locked'; };")),
			want:  []string{"failed because util.mutex is not available in Calaf scriptlets"},
		},
		{
			name:  "scriptlet decodes a YAML alias bomb",
			build: service(functionTemplate("exports.evaluate = function() {\n  let y = 'a0: &a0 [l,l,l,l,l,l,l,l,l,l]\\n';\n  for (let i = 1; i < 10; i++) { let r = '*a' + (i - 1); y += 'a' + i + ': &a' + i + ' [' + [r,r,r,r,r,r,r,r,r,r].join(',') + ']\\n'; }\n  return String(ard.decode(y, 'yaml', false));\n};")),
			want:  []string{"failed because YAML aliases expand by more than 100000 nodes"},
		},
		{
			name:  "regular expression that backtracks forever",
			build: service(functionTemplate("exports.evaluate = function() { return String(/^(a|aa)+(?=b)c\\1$/.test('a'.repeat(64) + 'x')); };")),
			want:  []string{"scriptlets did not finish within 2s"},
		},
		{
			name: "renderer returns a cyclic object",
			build: dirPackage(map[string]string{
				"service.yaml": vendorType("exports.render = function (node, ctx) { let o = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }; o.data = o; return [o]; };"),
			}),
			want: []string{`node "thing": renderer vendor.render.thing: value nested more than 100 levels deep`},
		},
		{
			name:  "scriptlet syntax error",
			build: service(functionTemplate("exports.evaluate = function( { return 1; };")),
			want:  []string{"SyntaxError"},
		},
		{
			name: "scriptlet import escaping the package",
			build: service(serviceYAML("puccini.scriptlet.import:tosca.function.probe: ../../../etc/passwd", "",
				"cm:\n  type: calaf.nodes.ConfigMap\n  properties:\n    data:\n      value: { probe: [] }\n")),
			want: []string{`scriptlet "../../../etc/passwd": it leaves the package`},
		},
		{
			name: "renderer returns garbage",
			build: dirPackage(map[string]string{
				"service.yaml": vendorType("exports.render = function (node, ctx) { return { objects: ['not an object', 42] }; };"),
			}),
			want: []string{`node "thing": renderer vendor.render.thing returned objects[0] as the string "not an object", not an object`},
		},
		{
			name: "renderer loops forever",
			build: dirPackage(map[string]string{
				"service.yaml": vendorType("exports.render = function (node, ctx) { for (;;) {} };"),
			}),
			want: []string{"did not finish within 2s"},
		},
		{
			name: "renderer object in another namespace",
			build: dirPackage(map[string]string{
				"service.yaml": vendorType("exports.render = function (node, ctx) { return { objects: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'kube-system' } }] }; };"),
			}),
			want: []string{`node "thing": ConfigMap "x" is in namespace "kube-system": objects must be in the Service's namespace "default"`},
		},
		{
			name: "connects to a workload without a Service",
			build: service(serviceYAML("", "", "db:\n  type: calaf.nodes.Deployment\n  properties:\n    image: busybox:1.36\n    expose: false\n    ports: [ { port: 5432 } ]\n"+
				"app:\n  type: calaf.nodes.Deployment\n  properties:\n    image: busybox:1.36\n  requirements:\n  - connects_to: db\n")),
			want: []string{`node "app": renderer calaf.render.deployment: "db" has no Service to connect to`},
		},
		{
			name: "dependency cycle",
			build: service(serviceYAML("", "", "a:\n  type: calaf.nodes.ConfigMap\n  requirements:\n  - dependency: b\n"+
				"b:\n  type: calaf.nodes.ConfigMap\n  requirements:\n  - dependency: a\n")),
			want: []string{"dependency cycle: a → b → a"},
		},
		{
			name:   "artifact outside the package",
			build:  service(serviceYAML("", "", "m:\n  type: calaf.nodes.Manifests\n  artifacts:\n    host:\n      type: calaf.artifacts.Manifest\n      file: /etc/passwd\n")),
			want:   []string{`artifact file "/etc/passwd": absolute paths are not allowed`},
			notOut: []string{"root:"},
		},
		{
			name:   "ConfigMap file outside the package",
			build:  service(serviceYAML("", "", "cm:\n  type: calaf.nodes.ConfigMap\n  properties:\n    files:\n      passwd: ../../../../etc/passwd\n")),
			want:   []string{`node "cm": renderer calaf.render.configmap: `, `path "../../../../etc/passwd" leaves the package`},
			notOut: []string{"root:"},
		},
	}
}

// aliasBomb is the "billion laughs": ten levels of ten aliases each.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("tosca_definitions_version: tosca_simple_yaml_1_3\n")
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// vendorType declares a node type whose renderer is the given scriptlet, and one node.
func vendorType(renderer string) string {
	return `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:vendor.render.thing: |-
` + indent(renderer, "    ") + `
imports:
- ` + profileImport + `
node_types:
  vendor.nodes.Thing:
    derived_from: calaf.nodes.Root
    metadata:
      calaf.render: vendor.render.thing
topology_template:
  node_templates:
    thing:
      type: vendor.nodes.Thing
`
}

// clutteredDirectory writes a valid template into a directory that holds what a home
// directory or /tmp may: a file above the package limits, a symbolic link to a host file,
// a subdirectory of unrelated files. Given as a single file, the template is its own package
// with the files it references only.
func clutteredDirectory(t *testing.T, dir string) []string {
	writeFiles(t, dir, map[string]string{"service.yaml": serviceYAML("", "", ""), "notes/a.txt": "a", "notes/b.yaml": "not: [a, template"})
	big, err := os.Create(filepath.Join(dir, "disk.img"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	big.Close()
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	return []string{filepath.Join(dir, "service.yaml")}
}

// osExec writes a package whose function tries to create a marker file through a command.
func osExec(t *testing.T, dir string) []string {
	marker := filepath.Join(dir, "executed")
	body := fmt.Sprintf("exports.evaluate = function() { os.exec('touch', %q); return 'ran'; };", marker)
	return service(functionTemplate(body))(t, dir)
}

// TestBadInputs feeds calaf validate packages that are broken or hostile. Each must end
// with exit code 1 and a clear diagnostic, promptly, without a panic (which would end the
// test binary), without running a command and without leaving files outside its
// temporary directories.
func TestBadInputs(t *testing.T) {
	cases := badCases()
	if len(cases) < 25 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp := t.TempDir()
			work := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Chdir(work)
			args := append([]string{"validate", "--script-timeout", "2s"}, c.build(t, dir)...)
			before := listTree(t, dir)

			start := time.Now()
			code, stdout, stderr := runCalaf(t, caseTimeout, args...)
			t.Logf("exit %d after %s\n%s%s", code, time.Since(start).Round(time.Millisecond), stdout, stderr)

			want, text := ExitInvalid, stderr
			if c.valid {
				want, text = ExitOK, stdout
			}
			if code != want {
				t.Errorf("exit code %d, want %d", code, want)
			}
			for _, want := range c.want {
				if !strings.Contains(text, want) {
					t.Errorf("output does not say %q", want)
				}
			}
			for _, secret := range c.notOut {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("output shows host data %q", secret)
				}
			}
			if !c.valid && !strings.HasPrefix(stderr, "error: ") {
				t.Errorf("stderr does not start with a diagnostic")
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr shows a panic")
			}
			if c.marker != "" {
				if _, err := os.Stat(filepath.Join(dir, c.marker)); err == nil {
					t.Errorf("the package ran a command: %s exists", c.marker)
				}
			}
			if after := listTree(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Errorf("files changed next to the package:\nbefore %v\nafter  %v", before, after)
			}
			if left := listTree(t, tmp); len(left) > 0 {
				t.Errorf("files left in TMPDIR: %v", left)
			}
			if left := listTree(t, work); len(left) > 0 {
				t.Errorf("files written in the working directory: %v", left)
			}
			// The three directories of this case share a parent: nothing may appear beside
			// them (where "../" entries of an archive extracted in TMPDIR would land).
			if siblings, _ := os.ReadDir(filepath.Dir(tmp)); len(siblings) != 3 {
				t.Errorf("files written beside the temporary directories: %v", siblings)
			}
			if _, err := os.Stat("/tmp/calaf-absolute-entry.txt"); err == nil {
				t.Errorf("an absolute archive entry was written")
			}
		})
	}
}
