package controller_test

// Packages used by the tests. They render only kinds that are healthy without the
// controllers of a full cluster (ConfigMaps, Secrets, Services), so they run on the
// API-server test ground; workloads are covered by the node-mode tests in test/e2e.

const profileImport = "imports:\n- https://calaf.io/profiles/kubernetes/1.0/profile.yaml\n"

// layeredTemplate has three layers: base ← middle ← top, plus a raw Service manifest
// that depends on top. Its greeting input goes into the base ConfigMap.
const layeredTemplate = `tosca_definitions_version: tosca_simple_yaml_1_3
metadata:
  template_name: layered
  template_version: '1.0'
` + profileImport + `
topology_template:
  inputs:
    greeting:
      type: string
      default: hello
  node_templates:
    base:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          greeting: { get_input: greeting }
    middle:
      type: calaf.nodes.Secret
      properties:
        data:
          api-key: not-a-real-secret
      requirements:
      - dependency: base
    top:
      type: calaf.nodes.ConfigMap
      properties:
        data:
          layer: top
      requirements:
      - dependency: middle
    front:
      type: calaf.nodes.Manifests
      artifacts:
        service:
          type: calaf.artifacts.Manifest
          file: manifests/front.yaml
      requirements:
      - dependency: top
  outputs:
    greeting:
      type: string
      value: { get_input: greeting }
`

const frontService = `apiVersion: v1
kind: Service
metadata:
  name: front
spec:
  ports:
  - port: 80
    targetPort: 8080
  selector:
    app: front
`

func layeredPackage() map[string]string {
	return map[string]string{"service.yaml": layeredTemplate, "manifests/front.yaml": frontService}
}
