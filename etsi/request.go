// Package etsi maps ETSI NFV packages onto Kubernetes: the SOL003 instantiate request,
// and the SOL001 VNFD's VDUs as workloads — the Kubernetes manifests of the package
// (Tacker's model), the container VDU types (Vdu.OsContainerDeployableUnit with its
// Vdu.OsContainers and Vdu.VirtualBlockStorage), or Helm charts rendered in-process — with
// the replicas of the requested instantiation level. Package tosca selects and compiles
// the deployment flavour; package render calls Map after the profile renderers.
package etsi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"calaf.io/calaf/tosca"
)

// maxRequestBytes bounds an instantiate request file.
const maxRequestBytes = 1 << 20

// maxReleaseName is the longest Helm release name (Helm's own bound).
const maxReleaseName = 53

// Request is a SOL003 InstantiateVnfRequest as Calaf reads it. Members Calaf has no use
// for on Kubernetes (vimConnectionInfo, localizationLanguage, ...) are accepted and
// ignored; extVirtualLinks are ignored with a warning.
type Request struct {
	// FlavourID selects the deployment flavour; empty selects the package's only one.
	FlavourID string `json:"flavourId,omitempty"`
	// InstantiationLevelID selects the instantiation level; empty selects the flavour's
	// default level.
	InstantiationLevelID string `json:"instantiationLevelId,omitempty"`
	// AdditionalParams are free-form; Calaf reads lcm-kubernetes-def-files, namespace,
	// helm_chart_path, helm_value_names and helm_parameters, and Tacker v1's vdu_mapping,
	// use_helm, using_helm_install_param and helm_replica_values (docs/etsi.md).
	AdditionalParams map[string]any `json:"additionalParams,omitempty"`
	// ExtVirtualLinks connect the VNF to networks outside it: not applicable on Kubernetes.
	ExtVirtualLinks []any `json:"extVirtualLinks,omitempty"`
}

// ParseRequest reads an instantiate request in JSON or YAML. The parameter files Tacker
// users keep are read as they are: JSON with trailing commas included. name is used in
// diagnostics.
func ParseRequest(name string, data []byte) (*Request, error) {
	if len(data) > maxRequestBytes {
		return nil, tosca.Invalid(name, "the instantiate request is larger than %d bytes", maxRequestBytes)
	}
	var raw map[string]any
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if bytes.HasPrefix(trimmed, []byte("{")) {
		decoder := json.NewDecoder(bytes.NewReader(stripTrailingCommas(trimmed)))
		decoder.UseNumber()
		if err := decoder.Decode(&raw); err != nil {
			return nil, jsonDiagnostic(name, trimmed, err)
		}
	} else {
		var node yaml.Node
		if err := yaml.Unmarshal(trimmed, &node); err != nil {
			line, problem := tosca.YAMLProblem(err)
			return nil, &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{File: name, Line: line, Message: "the instantiate request is neither JSON nor YAML: " + problem}}}
		}
		if err := node.Decode(&raw); err != nil {
			line, problem := tosca.YAMLProblem(err)
			return nil, &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{File: name, Line: line, Message: "the instantiate request is not a map: " + problem}}}
		}
	}
	return FromMap(name, raw)
}

// FromMap reads an instantiate request from decoded JSON or YAML.
func FromMap(name string, raw map[string]any) (*Request, error) {
	req := &Request{AdditionalParams: map[string]any{}}
	var diags []tosca.Diagnostic
	field := func(key string, into *string) {
		switch v := raw[key].(type) {
		case nil:
		case string:
			*into = v
		default:
			diags = append(diags, tosca.Diagnostic{File: name, Path: key, Message: fmt.Sprintf("is %s, not a string", tosca.KindOf(v))})
		}
	}
	field("flavourId", &req.FlavourID)
	field("instantiationLevelId", &req.InstantiationLevelID)
	switch v := normalize(raw["additionalParams"]).(type) {
	case nil:
	case map[string]any:
		req.AdditionalParams = v
	default:
		diags = append(diags, tosca.Diagnostic{File: name, Path: "additionalParams", Message: fmt.Sprintf("is %s, not a map", tosca.KindOf(v))})
	}
	if links, ok := normalize(raw["extVirtualLinks"]).([]any); ok {
		req.ExtVirtualLinks = links
	}
	if len(diags) > 0 {
		return nil, &tosca.InvalidError{Diagnostics: diags}
	}
	if _, err := req.params(); err != nil {
		return nil, tosca.Invalid(name, "%v", err)
	}
	return req, nil
}

// Warnings says what of the request Calaf does not apply on Kubernetes.
func (r *Request) Warnings() []string {
	if r == nil {
		return nil
	}
	var warnings []string
	if len(r.ExtVirtualLinks) > 0 {
		warnings = append(warnings, fmt.Sprintf("extVirtualLinks (%d) are ignored: on Kubernetes the VNF's external connectivity comes from its Services", len(r.ExtVirtualLinks)))
	}
	return warnings
}

// params are the additionalParams Calaf reads.
type params struct {
	defFiles       []string
	namespace      string
	helmChartPath  string
	helmValueNames map[string]string // VDU node → values path of its replicas
	helmParameters map[string]any    // dotted values path → value
	// Tacker's v1 model: vdu_mapping for manifests and charts; use_helm with its charts.
	vduMapping        map[string]vduMapping // VDU node → its workload
	helmInstalls      []helmInstall         // using_helm_install_param, when use_helm
	helmReplicaValues map[string]string     // aspect → values path of its VDUs' replicas
}

// vduMapping names the workload of a VDU (Tacker v1's vdu_mapping), instead of its
// properties.name.
type vduMapping struct {
	kind, name string
	release    string // helmreleasename: the chart the workload comes from
}

// helmInstall is one chart of Tacker v1's using_helm_install_param.
type helmInstall struct {
	index      int
	release    string
	chartPath  string   // helmchartfile_path, a chart of the package
	parameters []string // helmparameter, "key=value" as helm --set reads them
	// repository, chart and url name a chart of a Helm repository (exthelmchart).
	repository, chart, url string
}

// params reads the additionalParams Calaf knows, checking their shapes.
func (r *Request) params() (*params, error) {
	p := &params{helmValueNames: map[string]string{}, helmParameters: map[string]any{}}
	if r == nil {
		return p, nil
	}
	a := r.AdditionalParams
	if files, ok := a["lcm-kubernetes-def-files"]; ok {
		list, ok := files.([]any)
		if !ok {
			return nil, fmt.Errorf("additionalParams.lcm-kubernetes-def-files is %s, not a list of package paths", tosca.KindOf(files))
		}
		for _, f := range list {
			s, ok := f.(string)
			if !ok {
				return nil, fmt.Errorf("additionalParams.lcm-kubernetes-def-files holds %s, not a package path", tosca.KindOf(f))
			}
			p.defFiles = append(p.defFiles, s)
		}
	}
	for key, into := range map[string]*string{"namespace": &p.namespace, "helm_chart_path": &p.helmChartPath} {
		if v, ok := a[key]; ok {
			s, isString := v.(string)
			if !isString {
				return nil, fmt.Errorf("additionalParams.%s is %s, not a string", key, tosca.KindOf(v))
			}
			*into = s
		}
	}
	if names, ok := a["helm_value_names"].(map[string]any); ok {
		for vdu, v := range names {
			m, _ := v.(map[string]any)
			replica, _ := m["replica"].(string)
			if replica == "" {
				return nil, fmt.Errorf("additionalParams.helm_value_names.%s needs a replica value name", vdu)
			}
			p.helmValueNames[vdu] = replica
		}
	}
	if parameters, ok := a["helm_parameters"].(map[string]any); ok {
		p.helmParameters = parameters
	}
	if err := p.readTackerV1(a); err != nil {
		return nil, err
	}
	return p, nil
}

// readTackerV1 reads the additionalParams of Tacker's v1 API: vdu_mapping, and use_helm
// with using_helm_install_param and helm_replica_values.
func (p *params) readTackerV1(a map[string]any) error {
	var err error
	if p.vduMapping, err = readVduMapping(a["vdu_mapping"]); err != nil {
		return err
	}
	if !isTrue(a["use_helm"]) {
		return nil
	}
	if p.helmInstalls, err = readHelmInstalls(a["using_helm_install_param"]); err != nil {
		return err
	}
	p.helmReplicaValues = map[string]string{}
	values, isMap := a["helm_replica_values"].(map[string]any)
	if raw, given := a["helm_replica_values"]; given && !isMap {
		return fmt.Errorf("additionalParams.helm_replica_values is %T, not a map of aspect to values key", raw)
	}
	for aspect, key := range values {
		s, ok := key.(string)
		if !ok || s == "" {
			return fmt.Errorf("additionalParams.helm_replica_values.%s is %T, not a values key", aspect, key)
		}
		p.helmReplicaValues[aspect] = s
	}
	return nil
}

// readVduMapping reads vdu_mapping: {VDU: {kind, name, helmreleasename}}.
func readVduMapping(raw any) (map[string]vduMapping, error) {
	mapping := map[string]vduMapping{}
	if raw == nil {
		return mapping, nil
	}
	entries, ok := raw.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("additionalParams.vdu_mapping is %T, not a map of VDU to its workload", raw)
	}
	for vdu, v := range entries {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		kind, _ := m["kind"].(string)
		release, _ := m["helmreleasename"].(string)
		if name == "" {
			return nil, fmt.Errorf("additionalParams.vdu_mapping.%s needs the name of the VDU's workload", vdu)
		}
		mapping[vdu] = vduMapping{kind: kind, name: name, release: release}
	}
	return mapping, nil
}

// readHelmInstalls reads using_helm_install_param: a chart of the package
// (helmchartfile_path) or of a repository (exthelmchart "true"), each a release.
func readHelmInstalls(raw any) ([]helmInstall, error) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("additionalParams.use_helm is true, but using_helm_install_param is not a list of charts to install")
	}
	installs := make([]helmInstall, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("additionalParams.using_helm_install_param[%d] is %T, not a map", i, item)
		}
		in := helmInstall{index: i}
		in.release, _ = m["helmreleasename"].(string)
		in.chartPath, _ = m["helmchartfile_path"].(string)
		in.repository, _ = m["helmrepositoryname"].(string)
		in.chart, _ = m["helmchartname"].(string)
		in.url, _ = m["exthelmrepo_url"].(string)
		if !isDNSLabel(in.release) || len(in.release) > maxReleaseName {
			return nil, fmt.Errorf("additionalParams.using_helm_install_param[%d].helmreleasename %q is not a Helm release name (a DNS label of at most %d characters)", i, in.release, maxReleaseName)
		}
		if !isTrue(m["exthelmchart"]) && in.chartPath == "" {
			return nil, fmt.Errorf("additionalParams.using_helm_install_param[%d] needs a helmchartfile_path (the chart in the package)", i)
		}
		if isTrue(m["exthelmchart"]) {
			in.chartPath = ""
		}
		parameters, _ := m["helmparameter"].([]any)
		for j, p := range parameters {
			s, ok := p.(string)
			if !ok || !strings.Contains(s, "=") {
				return nil, fmt.Errorf("additionalParams.using_helm_install_param[%d].helmparameter[%d] is not a \"key=value\" string", i, j)
			}
			in.parameters = append(in.parameters, s)
		}
		installs = append(installs, in)
	}
	return installs, nil
}

// isTrue reads Tacker's flags, which are strings ("true") as often as booleans.
func isTrue(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

// stripTrailingCommas removes the commas that end a JSON object or array (",}" ",]"),
// outside strings.
func stripTrailingCommas(data []byte) []byte {
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		if c == ',' {
			j := i + 1
			for j < len(data) && strings.ContainsRune(" \t\r\n", rune(data[j])) {
				j++
			}
			if j < len(data) && (data[j] == '}' || data[j] == ']') {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// jsonDiagnostic locates a JSON syntax error by line.
func jsonDiagnostic(name string, data []byte, err error) error {
	d := tosca.Diagnostic{File: name, Message: "the instantiate request is not valid JSON: " + err.Error()}
	var syntax *json.SyntaxError
	if ok := asSyntax(err, &syntax); ok && syntax.Offset <= int64(len(data)) {
		d.Line = bytes.Count(data[:syntax.Offset], []byte("\n")) + 1
	}
	return &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{d}}
}

func asSyntax(err error, target **json.SyntaxError) bool {
	s, ok := err.(*json.SyntaxError)
	if ok {
		*target = s
	}
	return ok
}

// normalize makes decoded values plain: string keys, int64 or float64 numbers.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for key, item := range v {
			v[key] = normalize(item)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for key, item := range v {
			m[fmt.Sprint(key)] = normalize(item)
		}
		return m
	case []any:
		for i, item := range v {
			v[i] = normalize(item)
		}
		return v
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case int:
		return int64(v)
	}
	return v
}
