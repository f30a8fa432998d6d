package lifecycle_test

import "strings"

// Packages of the tests. The ConfigMap ones are healthy on the API-server test ground;
// the Deployment ones are made ready by the workloads stand-in.

const profileImport = "imports:\n- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n"

// configTemplate renders a ConfigMap holding its greeting input; version names the
// revision (a second revision adds what the first did not have).
func configTemplate(version string, extra string) map[string]string {
	return map[string]string{"service.yaml": `tosca_definitions_version: tosca_simple_yaml_1_3
` + profileImport + `
topology_template:
  inputs:
    greeting:
      type: string
      default: hello
  node_templates:
    config:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          greeting: { get_input: greeting }
          version: '` + version + `'
` + extra + `
  outputs:
    version:
      type: string
      value: '` + version + `'
`}
}

// brokenNode is a node a second revision adds: a Deployment the stand-in holds back, so
// that it never becomes healthy (until released).
const brokenNode = `    broken:
      type: calaf.nodes.Deployment
      properties:
        image: busybox
`

// addedConfig is a ConfigMap a second revision adds.
const addedConfig = `    added:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          added: 'yes'
`

// scaledTemplate renders a Deployment scaled by an aspect: 2 replicas at level 0, 2 more
// per level, at most 7 (so levels 0 to 2).
func scaledTemplate() map[string]string {
	return map[string]string{"service.yaml": strings.TrimSpace(`
tosca_definitions_version: tosca_simple_yaml_1_3
`+profileImport+`
topology_template:
  node_templates:
    smf:
      type: calaf.nodes.Deployment
      properties:
        image: busybox
        replicas: 2
  policies:
  - smf_scaling:
      type: calaf.policies.Scaling
      targets: [ smf ]
      properties:
        aspect: smf
        delta: 2
        max_instances: 7
`) + "\n"}
}
