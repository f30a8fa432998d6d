package render

// policyPlacement is the policy type of the Calaf profile that places nodes in other
// clusters.
const policyPlacement = "calaf.policies.Placement"

// Placement says where the Service a substituted node template is deployed as runs: in
// the cluster of a kubeconfig Secret of the Service's namespace, its objects applied there.
type Placement struct {
	// Policy names the policy that placed the node.
	Policy string `json:"policy"`
	// KubeconfigSecret names the Secret of the kubeconfig.
	KubeconfigSecret string `json:"kubeconfigSecret"`
	// Delegate hands the Service to the Calaf operator serving that cluster.
	Delegate bool `json:"delegate,omitempty"`
}

// applyPlacements sets the Placement of the nodes calaf.policies.Placement policies
// target; a node placed twice is a problem of the package.
func applyPlacements(result *Result, raw map[string]any) error {
	byName := map[string]*Node{}
	for _, node := range result.Nodes {
		byName[node.Name] = node
	}
	for _, item := range asList(raw["policies"]) {
		p := asMap(item)
		policy := policy{Name: asString(p["name"]), Types: asStrings(p["types"]), Properties: asMap(p["properties"]), Targets: asStrings(p["targets"])}
		if !policy.is(policyPlacement) {
			continue
		}
		secret := asString(policy.Properties["kubeconfig_secret"])
		if secret == "" {
			return invalidf("placement policy %q: kubeconfig_secret is empty", policy.Name)
		}
		for _, target := range policy.Targets {
			node, ok := byName[target]
			if !ok {
				continue
			}
			if node.Placement != nil {
				return invalidf("node %s is placed twice: by policies %q and %q", target, node.Placement.Policy, policy.Name)
			}
			delegate, _ := policy.Properties["delegate"].(bool)
			node.Placement = &Placement{Policy: policy.Name, KubeconfigSecret: secret, Delegate: delegate}
		}
	}
	return nil
}
