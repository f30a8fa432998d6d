package etsi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"calaf.io/calaf/tosca"
)

// builtByCalaf tells whether Calaf builds a VDU's workload from its container types: a
// Vdu.OsContainerDeployableUnit that no Mciop (Helm chart) is associated with.
func (m *mapper) builtByCalaf(n *Node) bool {
	if !n.is(typeOsContainerDU) {
		return false
	}
	for _, other := range m.in.Nodes {
		if !other.is(typeMciop) {
			continue
		}
		for _, r := range other.Requirements {
			if r.Target == n.Name {
				return false
			}
		}
	}
	return true
}

// nodeByName returns a node template of the flavour.
func (m *mapper) nodeByName(name string) *Node {
	for i := range m.in.Nodes {
		if m.in.Nodes[i].Name == name {
			return &m.in.Nodes[i]
		}
	}
	return nil
}

// containers builds the workload of every container VDU Calaf realizes itself: a
// Deployment or StatefulSet (mcio_identification_data) whose pod runs the VDU's
// OsContainers, with the volumes of its VirtualBlockStorages and the placement its
// mcio_constraint_params and nfvi_constraints ask for.
func (m *mapper) containers(context.Context) error {
	var diags []tosca.Diagnostic
	for i := range m.in.Nodes {
		n := &m.in.Nodes[i]
		if !m.builtByCalaf(n) {
			continue
		}
		objects, err := m.containerWorkload(n)
		if err != nil {
			diags = append(diags, m.nodeDiagnostic(n.Name, fmt.Sprintf("VDU %s: %v", n.Name, err)))
			continue
		}
		m.objects = append(m.objects, objects...)
		workload := objects[len(objects)-1].content
		m.vdus = append(m.vdus, VDU{Node: n.Name, Name: asString(n.Properties["name"]),
			Workload: asString(workload["kind"]) + "/" + objectName(workload), Replicas: m.replicas[n.Name]})
	}
	if len(diags) > 0 {
		return &tosca.InvalidError{Diagnostics: diags}
	}
	return nil
}

// isDNSLabel tells whether name is an RFC 1123 label: 1 to 63 lowercase letters, digits
// and '-', starting and ending with a letter or a digit. (A loop, not a regular
// expression: a package-level regexp with {0,61} was compiled at every calaf start.)
func isDNSLabel(name string) bool {
	if len(name) == 0 || len(name) > 63 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		alnum := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(name)-1) {
			return false
		}
	}
	return true
}

// containerWorkload returns the objects of a container VDU: its claims (for a Deployment)
// and its workload, last.
func (m *mapper) containerWorkload(n *Node) ([]*object, error) {
	identification := asMap(n.Properties["mcio_identification_data"])
	kind := asString(identification["type"])
	if kind == "" {
		kind = "Deployment"
	}
	name := asString(identification["name"])
	if name == "" {
		name = asString(n.Properties["name"])
	}
	if !isDNSLabel(name) {
		return nil, fmt.Errorf("workload name %q is not a DNS label (lower case letters, digits and '-')", name)
	}
	var containers []any
	for _, r := range n.Requirements {
		if target := m.nodeByName(r.Target); r.Name == "container" && target != nil && target.is(typeOsContainer) {
			container, err := osContainer(target)
			if err != nil {
				return nil, err
			}
			containers = append(containers, container)
		}
	}
	if len(containers) == 0 {
		return nil, fmt.Errorf("no container: a Vdu.OsContainerDeployableUnit requires one or more Vdu.OsContainer (requirement container)")
	}
	selector := m.in.selector(n.Name)
	pod := map[string]any{"containers": containers}
	placement(pod, n.Properties, selector)
	spec := map[string]any{
		"replicas": m.replicas[n.Name],
		"selector": map[string]any{"matchLabels": copyLabels(selector)},
		"template": map[string]any{"metadata": map[string]any{"labels": copyLabels(selector)}, "spec": pod},
	}
	if kind == "StatefulSet" {
		spec["serviceName"] = name
	}
	workload := map[string]any{"apiVersion": "apps/v1", "kind": kind, "metadata": map[string]any{"name": name}, "spec": spec}
	objects, err := m.storage(n, name, kind, spec, pod, containers)
	if err != nil {
		return nil, err
	}
	return append(objects, &object{content: workload, file: m.in.VNFD.FlavourFile, line: m.in.VNFD.NodeLines[n.Name], owner: n.Name, vdu: n.Name}), nil
}

// osContainer returns the Kubernetes container of a Vdu.OsContainer. A vendor type derived
// from Vdu.OsContainer may add command, args, env (a map) and ports, which Calaf reads.
func osContainer(n *Node) (map[string]any, error) {
	p := n.Properties
	name := asString(p["name"])
	if !isDNSLabel(name) {
		return nil, fmt.Errorf("container %s: name %q is not a DNS label", n.Name, name)
	}
	image := ""
	for _, artifactName := range slices.Sorted(maps.Keys(n.Artifacts)) {
		a := n.Artifacts[artifactName]
		if slices.Contains(a.Types, artifactSwImage) {
			image = imageOf(a)
			break
		}
	}
	if image == "" {
		return nil, fmt.Errorf("container %s has no sw_image artifact (tosca.artifacts.nfv.SwImage) with a name", n.Name)
	}
	container := map[string]any{"name": name, "image": image}
	if resources := containerResources(p); len(resources) > 0 {
		container["resources"] = resources
	}
	for _, key := range []string{"command", "args"} {
		if list := asStrings(p[key]); len(list) > 0 {
			container[key] = toAnyList(list)
		}
	}
	if env := asMap(p["env"]); len(env) > 0 {
		var vars []any
		for _, k := range slices.Sorted(maps.Keys(env)) {
			vars = append(vars, map[string]any{"name": k, "value": fmt.Sprint(env[k])})
		}
		container["env"] = vars
	}
	if ports, ok := p["ports"].([]any); ok && len(ports) > 0 {
		container["ports"] = ports
	}
	return container, nil
}

// imageOf is the image of a SwImage artifact: "name:version" of its properties (a name
// holding ":" or "@" is used as it is).
func imageOf(a Artifact) string {
	name := asString(a.Properties["name"])
	version := asString(a.Properties["version"])
	if name == "" || strings.ContainsAny(name, ":@") || version == "" {
		return name
	}
	return name + ":" + version
}

// containerResources turns the OsContainer's resource properties into requests and limits:
// CPU in milli-CPU, sizes in bytes, huge pages requested and limited alike.
func containerResources(p map[string]any) map[string]any {
	requests, limits := map[string]any{}, map[string]any{}
	set := func(into map[string]any, key string, value any, format func(int64) string) {
		if value == nil {
			return
		}
		if n, ok := quantity(value); ok {
			into[key] = format(n)
		}
	}
	millis := func(n int64) string { return strconv.FormatInt(n, 10) + "m" }
	bytes := func(n int64) string { return strconv.FormatInt(n, 10) }
	set(requests, "cpu", p["requested_cpu_resources"], millis)
	set(limits, "cpu", p["cpu_resource_limit"], millis)
	set(requests, "memory", p["requested_memory_resources"], bytes)
	set(limits, "memory", p["memory_resource_limit"], bytes)
	set(requests, "ephemeral-storage", p["requested_ephemeral_storage_resources"], bytes)
	set(limits, "ephemeral-storage", p["ephemeral_storage_resource_limit"], bytes)
	pages := asMap(p["huge_pages_resources"])
	for _, size := range slices.Sorted(maps.Keys(pages)) {
		set(requests, "hugepages-"+size, pages[size], bytes)
		set(limits, "hugepages-"+size, pages[size], bytes)
	}
	resources := map[string]any{}
	if len(requests) > 0 {
		resources["requests"] = requests
	}
	if len(limits) > 0 {
		resources["limits"] = limits
	}
	return resources
}

// quantity reads a number or a TOSCA scalar-unit.size (evaluated to bytes, or text).
func quantity(v any) (int64, bool) {
	switch n := v.(type) {
	case int64, int, float64, uint64:
		return asInt(n), true
	case map[string]any:
		for _, key := range []string{"$number", "number", "value"} {
			if x, ok := n[key]; ok {
				return quantity(x)
			}
		}
	case string:
		return parseSize(n)
	}
	return 0, false
}

var sizeUnits = map[string]int64{
	"b": 1, "kb": 1000, "kib": 1 << 10, "mb": 1000 * 1000, "mib": 1 << 20, "gb": 1000 * 1000 * 1000,
	"gib": 1 << 30, "tb": 1000 * 1000 * 1000 * 1000, "tib": 1 << 40,
}

// parseSize reads "10 MiB" and its kin.
func parseSize(s string) (int64, bool) {
	fields := strings.Fields(s)
	if len(fields) != 2 {
		return 0, false
	}
	f, err := strconv.ParseFloat(fields[0], 64)
	unit, ok := sizeUnits[strings.ToLower(fields[1])]
	if err != nil || !ok {
		return 0, false
	}
	return int64(f * float64(unit)), true
}

// constraintTopology maps mcio_constraint_params to the topology key they place pods by,
// and whether they attract (affinity) or repel (anti-affinity) the VDU's own pods.
var constraintTopology = map[string]struct {
	key      string
	affinity bool
}{
	"affinity_cis_node":      {"kubernetes.io/hostname", true},
	"anti_affinity_cis_node": {"kubernetes.io/hostname", false},
	"affinity_nfvi_pop":      {"topology.kubernetes.io/zone", true},
	"anti_affinity_nfvi_pop": {"topology.kubernetes.io/zone", false},
}

// placement sets the pod's affinity from mcio_constraint_params (between the VDU's own
// pods) and its node selector from nfvi_constraints.
func placement(pod map[string]any, properties map[string]any, selector map[string]string) {
	var affinity, anti []any
	for _, param := range asStrings(properties["mcio_constraint_params"]) {
		c, ok := constraintTopology[param]
		if !ok {
			continue
		}
		term := map[string]any{"topologyKey": c.key, "labelSelector": map[string]any{"matchLabels": copyLabels(selector)}}
		if c.affinity {
			affinity = append(affinity, term)
		} else {
			anti = append(anti, term)
		}
	}
	rules := map[string]any{}
	if len(affinity) > 0 {
		rules["podAffinity"] = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": affinity}
	}
	if len(anti) > 0 {
		rules["podAntiAffinity"] = map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": anti}
	}
	if len(rules) > 0 {
		pod["affinity"] = rules
	}
	if constraints := asMap(properties["nfvi_constraints"]); len(constraints) > 0 {
		nodeSelector := map[string]any{}
		for k, v := range constraints {
			nodeSelector[k] = fmt.Sprint(v)
		}
		pod["nodeSelector"] = nodeSelector
	}
}

// storage adds the volumes of a VDU's VirtualBlockStorages: volume claim templates for a
// StatefulSet (one claim per pod), claims of their own for a Deployment, mounted in every
// container at /data/<storage node>.
func (m *mapper) storage(n *Node, workloadName, kind string, spec, pod map[string]any, containers []any) ([]*object, error) {
	var objects []*object
	var templates, volumes, mounts []any
	for _, r := range n.Requirements {
		target := m.nodeByName(r.Target)
		if r.Name != "virtual_storage" || target == nil || !target.is(typeBlockStorage) {
			continue
		}
		data := asMap(target.Properties["virtual_block_storage_data"])
		size, ok := quantity(data["size_of_storage"])
		if !ok || size <= 0 {
			return nil, fmt.Errorf("storage %s has no size_of_storage", target.Name)
		}
		claimName := strings.ToLower(strings.NewReplacer("_", "-", ".", "-").Replace(target.Name))
		claimSpec := map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": strconv.FormatInt(size, 10)}}}
		if class := asString(asMap(data["vdu_storage_requirements"])["storage_class"]); class != "" {
			claimSpec["storageClassName"] = class
		}
		mounts = append(mounts, map[string]any{"name": claimName, "mountPath": "/data/" + target.Name})
		if kind == "StatefulSet" {
			templates = append(templates, map[string]any{"metadata": map[string]any{"name": claimName}, "spec": claimSpec})
			continue
		}
		claim := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": workloadName + "-" + claimName}, "spec": claimSpec}
		objects = append(objects, &object{content: claim, file: m.in.VNFD.FlavourFile, line: m.in.VNFD.NodeLines[target.Name], owner: n.Name})
		volumes = append(volumes, map[string]any{"name": claimName, "persistentVolumeClaim": map[string]any{"claimName": workloadName + "-" + claimName}})
	}
	if len(mounts) == 0 {
		return nil, nil
	}
	for _, c := range containers {
		c.(map[string]any)["volumeMounts"] = mounts
	}
	if len(templates) > 0 {
		spec["volumeClaimTemplates"] = templates
	}
	if len(volumes) > 0 {
		pod["volumes"] = volumes
	}
	return objects, nil
}

func copyLabels(labels map[string]string) map[string]any {
	out := make(map[string]any, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	return out
}

func toAnyList(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
