package etsi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	"helm.sh/helm/v3/pkg/strvals"

	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/tosca"
)

// Bounds of a chart: its files once decompressed.
const (
	maxChartBytes = 32 << 20
	maxChartFiles = 2000
)

// chartSource is a chart of the package and the node its objects belong to.
type chartSource struct {
	file  string // package path of the .tgz or the chart directory
	owner string
	// install is the entry of Tacker v1's using_helm_install_param the chart is rendered
	// for (its release name and parameters); nil for helm_chart_path and Mciops.
	install *helmInstall
}

// hasChart tells whether the flavour deploys Helm charts.
func (m *mapper) hasChart() bool {
	return len(m.charts()) > 0
}

// charts lists the charts to render: additionalParams.helm_chart_path (Tacker), and every
// tosca.artifacts.nfv.HelmChart artifact of the flavour's nodes (an Mciop's, typically).
func (m *mapper) charts() []chartSource {
	var charts []chartSource
	if m.params.helmChartPath != "" {
		charts = append(charts, chartSource{file: m.params.helmChartPath, owner: m.vnfNode})
	}
	for i := range m.params.helmInstalls {
		if install := &m.params.helmInstalls[i]; install.chartPath != "" {
			charts = append(charts, chartSource{file: install.chartPath, owner: m.vnfNode, install: install})
		}
	}
	for _, n := range m.in.Nodes {
		for _, name := range slices.Sorted(maps.Keys(n.Artifacts)) {
			if a := n.Artifacts[name]; slices.Contains(a.Types, artifactHelmChart) && a.File != m.params.helmChartPath {
				charts = append(charts, chartSource{file: a.File, owner: n.Name})
			}
		}
	}
	return charts
}

// helm renders the flavour's charts with the input's chart engine (template only: no
// release, no hooks run, nothing installed), with values from the chart, the request's
// helm_parameters, and each VDU's replicas under its helm_value_names entry. Calaf then
// applies the objects like every other.
func (m *mapper) helm(ctx context.Context) error {
	if err := m.refuseRepositoryCharts(); err != nil {
		return err
	}
	charts := m.charts()
	if len(charts) > 0 && m.in.Charts == nil {
		return fmt.Errorf("%s deploys a Helm chart: %w", charts[0].file, chart.ErrNoEngine)
	}
	for _, source := range charts {
		objects, err := m.renderChart(ctx, source)
		if err != nil {
			return err
		}
		m.objects = append(m.objects, objects...)
		if len(m.objects) > maxObjects {
			return tosca.Invalid(source.file, "the chart renders more than %d objects", maxObjects)
		}
	}
	return nil
}

// refuseRepositoryCharts refuses the charts of Tacker v1's using_helm_install_param that
// come from a Helm repository: Calaf downloads nothing a package does not carry.
func (m *mapper) refuseRepositoryCharts() error {
	var diags []tosca.Diagnostic
	for _, install := range m.params.helmInstalls {
		if install.chartPath != "" {
			continue
		}
		diags = append(diags, tosca.Diagnostic{File: m.in.VNFD.FlavourFile, Message: fmt.Sprintf(
			"instantiate request: additionalParams.using_helm_install_param[%d] (release %q): chart %q of the Helm repository %q (%s) is not in the package, and Calaf downloads no chart: put the chart in the package and name it with helmchartfile_path",
			install.index, install.release, install.chart, install.repository, install.url)})
	}
	if len(diags) > 0 {
		return &tosca.InvalidError{Diagnostics: diags}
	}
	return nil
}

func (m *mapper) renderChart(ctx context.Context, source chartSource) ([]*object, error) {
	files, err := m.chartFiles(source.file)
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm chart: %v", err)
	}
	values, err := m.chartValues(source)
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm values: %v", err)
	}
	release := m.in.Service
	if source.install != nil {
		release = source.install.release
	}
	rendered, err := m.in.Charts.Render(ctx, chart.Request{Files: files, Values: values, Release: release, Namespace: m.in.Namespace, Timeout: m.in.HelmTimeout})
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm chart %v", err)
	}
	return m.chartObjects(source, rendered)
}

// chartFiles reads a chart from a .tgz or a directory of the package, within bounds.
func (m *mapper) chartFiles(file string) ([]chart.File, error) {
	if data, err := m.in.Package.ReadFile(file); err == nil {
		return chartArchiveFiles(data)
	}
	return m.chartDirFiles(file)
}

// chartArchiveFiles reads the files of a chart archive, counting what it decompresses.
func chartArchiveFiles(data []byte) ([]chart.File, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a chart archive (.tgz): %v", err)
	}
	defer gz.Close()
	reader := tar.NewReader(io.LimitReader(gz, maxChartBytes+1))
	var files []chart.File
	var total int64
	for {
		h, err := reader.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a chart archive (.tgz): %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		// The archive's first directory is the chart's name.
		parts := strings.SplitN(path.Clean(strings.TrimPrefix(h.Name, "./")), "/", 2)
		if len(parts) != 2 || strings.HasPrefix(parts[1], "..") {
			continue
		}
		content, err := io.ReadAll(io.LimitReader(reader, maxChartBytes-total+1))
		if total += int64(len(content)); err != nil || total > maxChartBytes {
			return nil, fmt.Errorf("the chart decompresses to more than %d bytes", maxChartBytes)
		}
		if len(files) == maxChartFiles {
			return nil, fmt.Errorf("the chart has more than %d files", maxChartFiles)
		}
		files = append(files, chart.File{Name: parts[1], Data: content})
	}
}

// chartDirFiles reads a chart directory of the package.
func (m *mapper) chartDirFiles(dir string) ([]chart.File, error) {
	prefix := strings.TrimSuffix(path.Clean(dir), "/") + "/"
	var files []chart.File
	for _, f := range m.in.Package.Files {
		rel, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		data, err := m.in.Package.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		files = append(files, chart.File{Name: rel, Data: data})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s is neither a chart archive nor a chart directory of the package", dir)
	}
	return files, nil
}

// chartValues are the values the chart is rendered with, over its own: the request's
// helm_parameters ("a.b": value), then each VDU's replicas at its helm_value_names entry;
// for a chart of Tacker v1's using_helm_install_param, its helmparameter instead.
func (m *mapper) chartValues(source chartSource) (map[string]any, error) {
	if source.install != nil {
		return m.installValues(source.install)
	}
	values := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(m.params.helmParameters)) {
		if err := strvals.ParseInto(fmt.Sprintf("%s=%v", key, m.params.helmParameters[key]), values); err != nil {
			return nil, fmt.Errorf("helm_parameters %s: %v", key, err)
		}
	}
	for _, vdu := range slices.Sorted(maps.Keys(m.params.helmValueNames)) {
		replicas, ok := m.replicas[vdu]
		if !ok {
			return nil, fmt.Errorf("helm_value_names names %s, which is not a VDU of the flavour", vdu)
		}
		if err := strvals.ParseInto(fmt.Sprintf("%s=%d", m.params.helmValueNames[vdu], replicas), values); err != nil {
			return nil, fmt.Errorf("helm_value_names %s: %v", vdu, err)
		}
	}
	return values, nil
}

// installValues are the values of a chart of Tacker v1's using_helm_install_param: its
// helmparameter ("key=value", as helm --set reads them), then, for each aspect of
// helm_replica_values, the replicas of the VDUs of the release (vdu_mapping) it scales.
func (m *mapper) installValues(install *helmInstall) (map[string]any, error) {
	values := map[string]any{}
	for i, parameter := range install.parameters {
		if err := strvals.ParseInto(parameter, values); err != nil {
			return nil, fmt.Errorf("using_helm_install_param[%d].helmparameter[%d]: %v", install.index, i, err)
		}
	}
	for _, aspect := range slices.Sorted(maps.Keys(m.params.helmReplicaValues)) {
		for _, vdu := range slices.Sorted(maps.Keys(m.params.vduMapping)) {
			if m.params.vduMapping[vdu].release != install.release || m.scaling.deltas[vdu][aspect] == nil {
				continue
			}
			replicas, ok := m.replicas[vdu]
			if !ok {
				return nil, fmt.Errorf("vdu_mapping names %s, which is not a VDU of the flavour", vdu)
			}
			if err := strvals.ParseInto(fmt.Sprintf("%s=%d", m.params.helmReplicaValues[aspect], replicas), values); err != nil {
				return nil, fmt.Errorf("helm_replica_values %s: %v", aspect, err)
			}
		}
	}
	return values, nil
}

// chartObjects turns rendered templates into objects in Helm's install order. Test hooks
// are skipped; other hooks are applied as plain objects, with a warning.
func (m *mapper) chartObjects(source chartSource, rendered *chart.Rendered) ([]*object, error) {
	var objects []*object
	add := func(name, content string) error {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(content), &doc); err != nil {
			return tosca.Invalid(source.file, "Helm template %s renders invalid YAML: %v", name, err)
		}
		obj, err := m.manifestObject(source.file+"!"+name, &doc)
		if err != nil || obj == nil {
			return err
		}
		obj.chart, obj.owner = true, ""
		if source.owner != m.vnfNode {
			obj.owner = source.owner
		}
		objects = append(objects, obj)
		return nil
	}
	for _, manifest := range rendered.Manifests {
		if err := add(manifest.Name, manifest.Content); err != nil {
			return nil, err
		}
	}
	hooks := slices.Clone(rendered.Hooks)
	sort.SliceStable(hooks, func(i, j int) bool { return hooks[i].Weight < hooks[j].Weight })
	for _, hook := range hooks {
		if hook.Test {
			continue
		}
		m.warn(source.file, 0, "Helm hook %s is applied as a plain object (Calaf runs no hooks)", hook.Name)
		if err := add(hook.Name, hook.Content); err != nil {
			return nil, err
		}
	}
	return objects, nil
}
