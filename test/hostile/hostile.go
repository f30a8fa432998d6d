// Package hostile holds the packages that end the process compiling or rendering them,
// shared by the tests that prove they end only a worker (package worker), never the
// operator or the CLI.
package hostile

// DerivationCycle is a service template whose data types derive from each other: Puccini's
// Go code recurses until its goroutine stack overflows, a fatal error no recover catches.
const DerivationCycle = `tosca_definitions_version: tosca_simple_yaml_1_3
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
data_types:
  A:
    derived_from: B
  B:
    derived_from: A
topology_template:
  inputs:
    x:
      type: A
      default: {}
  node_templates:
    cm:
      type: calaf.nodes.ConfigMap
`

// MemoryBomb is a service template whose TOSCA function doubles a string until memory runs
// out, when the package is rendered.
const MemoryBomb = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  puccini.scriptlet:tosca.function.probe: |-
    exports.evaluate = function() { let s = 'x'; while (true) { s = s + s; } };
imports:
- https://calaf.io/profiles/kubernetes/1.0/profile.yaml
topology_template:
  node_templates:
    cm:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          value: { probe: [] }
`
