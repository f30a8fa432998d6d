package profilekit

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// profileName is what a profile's name may be: it prefixes its types and scriptlets.
var profileName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Scaffold writes a new profile named name into dir (which must not exist): one node type
// derived from calaf.nodes.Deployment with a renderer of its own, a test case of it and
// a README saying what to do next. The files pass `calaf profile test` as written.
func Scaffold(dir, name string) ([]string, error) {
	if !profileName.MatchString(name) {
		return nil, fmt.Errorf("profile name %q: lower case letters, digits and dashes, starting with a letter (it prefixes the profile's types: %s.nodes.App)", name, "NAME")
	}
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("%s exists already: give a new directory", dir)
	}
	files := map[string]string{
		ProfileEntry:           scaffoldProfile,
		"js/app.js":            scaffoldRenderer,
		TestsDir + "/app.yaml": scaffoldTests,
		"README.md":            scaffoldReadme,
	}
	var written []string
	for _, rel := range []string{ProfileEntry, "js/app.js", TestsDir + "/app.yaml", "README.md"} {
		full := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return written, err
		}
		text := strings.ReplaceAll(files[rel], "NAME", name)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			return written, err
		}
		written = append(written, full)
	}
	return written, nil
}

const scaffoldProfile = `tosca_definitions_version: tosca_simple_yaml_1_3

# The NAME profile: node types derived from the Calaf Kubernetes profile, each with a
# renderer of its own (a scriptlet named in the type's metadata "calaf.render").

metadata:
  template_name: NAME
  template_author: NAME
  template_version: '0.1'
  puccini.scriptlet.import:NAME.render.app: js/app.js

imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml

node_types:

  NAME.nodes.App:
    description: >-
      A web application: a Calaf Deployment (with its Service) whose greeting is kept in a
      ConfigMap of its own and handed to the container as GREETING.
    derived_from: calaf.nodes.Deployment
    metadata:
      calaf.render: NAME.render.app
    properties:
      greeting:
        description: What the application says.
        type: string
        default: hello
        constraints:
        - min_length: 1
`

const scaffoldRenderer = `// NAME.render.app renders a NAME.nodes.App as the Calaf Deployment renderer does, then
// adds a ConfigMap holding the greeting and hands it to the container as GREETING.
const deployment = require('calaf.render.deployment');
const lib = require('calaf.lib');

exports.render = function (node, ctx) {
  let result = deployment.render(node, ctx);
  let name = ctx.objectName(node.name);
  let config = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: lib.metadata(node, ctx, name + '-greeting'),
    data: { greeting: node.properties.greeting },
  };
  for (let object of result.objects) {
    if (object.kind !== 'Deployment') continue;
    let container = object.spec.template.spec.containers[0];
    container.env = (container.env || []).concat([{
      name: 'GREETING',
      valueFrom: { configMapKeyRef: { name: config.metadata.name, key: 'greeting' } },
    }]);
  }
  // The ConfigMap first: the Deployment's pods read it.
  result.objects.unshift(config);
  return result;
};
`

const scaffoldTests = `# Test cases of the NAME profile: calaf profile test . runs them.
tests:
- name: an app with its greeting
  nodes:
    web:
      type: NAME.nodes.App
      properties:
        image: busybox:1.36
        greeting: bonjour
        ports: [ { name: http, port: 8080 } ]
  assert:
  - object: ConfigMap/test-web-greeting
    path: data.greeting
    equals: bonjour
  - object: Deployment/test-web
    path: spec.template.spec.containers[0].env[0].valueFrom.configMapKeyRef.name
    equals: test-web-greeting
  - object: Service/test-web
  - count: 3
- name: an empty greeting is refused
  nodes:
    web:
      type: NAME.nodes.App
      properties: { image: busybox:1.36, greeting: '' }
  error: greeting
`

const scaffoldReadme = "# The NAME profile\n\n" +
	"TOSCA node types for Calaf, derived from the Calaf Kubernetes profile, each rendered into\n" +
	"Kubernetes objects by a JavaScript renderer of its own. Service templates import it by\n" +
	"reference once it is published.\n\n" +
	"| file | what it is |\n|---|---|\n" +
	"| `profile.yaml` | the types; the file templates import |\n" +
	"| `js/app.js` | the renderer of `NAME.nodes.App` |\n" +
	"| `tests/app.yaml` | renderer test cases: node templates and what they must render |\n\n" +
	"## Working on it\n\n" +
	"```sh\n" +
	"calaf profile test .                  # run the test cases (--update rewrites golden files, --junit FILE for CI)\n" +
	"calaf profile doc . -o REFERENCE.md   # the reference of the types (--format html)\n" +
	"calaf explain NAME.nodes.App --profile .\n" +
	"calaf profile schema . -o NAME.schema.json   # for the YAML language server of editors\n" +
	"calaf profile diff OLD_DIR .          # what this version breaks for packages written for OLD_DIR\n" +
	"calaf profile push . oci://REGISTRY/NAME:0.1 [--key KEY --cert CERT]\n" +
	"```\n\n" +
	"A package then imports `oci://REGISTRY/NAME:0.1` and locks it with `calaf package lock`.\n"
