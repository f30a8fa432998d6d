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
	"time"

	"gopkg.in/yaml.v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/strvals"

	"calaf.io/calaf/tosca"
)

// DefaultHelmTimeout bounds the rendering of one chart.
const DefaultHelmTimeout = 10 * time.Second

// Bounds of a chart: its files once decompressed, and what its templates render.
const (
	maxChartBytes    = 32 << 20
	maxChartFiles    = 2000
	maxRenderedBytes = 16 << 20
)

// ErrHelmTimeout is a chart whose templates did not render within the deadline.
var ErrHelmTimeout = errors.New("the Helm templates did not render within the deadline")

// chartSource is a chart of the package and the node its objects belong to.
type chartSource struct {
	file  string // package path of the .tgz or the chart directory
	owner string
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
	for _, n := range m.in.Nodes {
		for _, name := range slices.Sorted(maps.Keys(n.Artifacts)) {
			if a := n.Artifacts[name]; slices.Contains(a.Types, artifactHelmChart) && a.File != m.params.helmChartPath {
				charts = append(charts, chartSource{file: a.File, owner: n.Name})
			}
		}
	}
	return charts
}

// helm renders the flavour's charts in-process with the Helm SDK (template only: no
// release, no hooks run, nothing installed), with values from the chart, the request's
// helm_parameters, and each VDU's replicas under its helm_value_names entry. Calaf then
// applies the objects like every other.
func (m *mapper) helm(ctx context.Context) error {
	for _, source := range m.charts() {
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

func (m *mapper) renderChart(ctx context.Context, source chartSource) ([]*object, error) {
	ch, err := m.loadChart(source.file)
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm chart: %v", err)
	}
	values, err := m.chartValues()
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm values: %v", err)
	}
	rendered, err := renderTemplates(ctx, ch, values, m.in.Service, m.in.Namespace, m.in.HelmTimeout)
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm chart %s: %v", ch.Name(), err)
	}
	return m.chartObjects(source, rendered)
}

// loadChart loads a chart from a .tgz or a directory of the package, within bounds.
func (m *mapper) loadChart(file string) (*chart.Chart, error) {
	var files []*loader.BufferedFile
	var err error
	if data, readErr := m.in.Package.ReadFile(file); readErr == nil {
		files, err = chartArchiveFiles(data)
	} else {
		files, err = m.chartDirFiles(file)
	}
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}

// chartArchiveFiles reads the files of a chart archive, counting what it decompresses.
func chartArchiveFiles(data []byte) ([]*loader.BufferedFile, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a chart archive (.tgz): %v", err)
	}
	defer gz.Close()
	reader := tar.NewReader(io.LimitReader(gz, maxChartBytes+1))
	var files []*loader.BufferedFile
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
		files = append(files, &loader.BufferedFile{Name: parts[1], Data: content})
	}
}

// chartDirFiles reads a chart directory of the package.
func (m *mapper) chartDirFiles(dir string) ([]*loader.BufferedFile, error) {
	prefix := strings.TrimSuffix(path.Clean(dir), "/") + "/"
	var files []*loader.BufferedFile
	for _, f := range m.in.Package.Files {
		rel, ok := strings.CutPrefix(f.Path, prefix)
		if !ok {
			continue
		}
		data, err := m.in.Package.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		files = append(files, &loader.BufferedFile{Name: rel, Data: data})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s is neither a chart archive nor a chart directory of the package", dir)
	}
	return files, nil
}

// chartValues are the values the chart is rendered with, over its own: the request's
// helm_parameters ("a.b": value), then each VDU's replicas at its helm_value_names entry.
func (m *mapper) chartValues() (map[string]any, error) {
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

// renderTemplates renders a chart's templates as `helm template` would, within a deadline
// (a template stuck in a loop is abandoned) and a bound on what it renders.
func renderTemplates(ctx context.Context, ch *chart.Chart, values map[string]any, release, namespace string, timeout time.Duration) (map[string]string, error) {
	if timeout <= 0 {
		timeout = DefaultHelmTimeout
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, err
	}
	options := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	renderValues, err := chartutil.ToRenderValues(ch, values, options, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		return nil, err
	}
	type outcome struct {
		rendered map[string]string
		err      error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: fmt.Errorf("the templates failed: %v", r)}
			}
		}()
		rendered, err := engine.Render(ch, renderValues)
		done <- outcome{rendered: rendered, err: err}
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, o.err
		}
		total := 0
		for _, text := range o.rendered {
			if total += len(text); total > maxRenderedBytes {
				return nil, fmt.Errorf("the templates render more than %d bytes", maxRenderedBytes)
			}
		}
		return o.rendered, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%w (%s)", ErrHelmTimeout, timeout)
	}
}

// chartObjects turns rendered templates into objects in Helm's install order. Test hooks
// are skipped; other hooks are applied as plain objects, with a warning.
func (m *mapper) chartObjects(source chartSource, rendered map[string]string) ([]*object, error) {
	hooks, manifests, err := releaseutil.SortManifests(rendered, chartutil.DefaultCapabilities.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, tosca.Invalid(source.file, "Helm chart: %v", err)
	}
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
	for _, manifest := range manifests {
		if err := add(manifest.Name, manifest.Content); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(hooks, func(i, j int) bool { return hooks[i].Weight < hooks[j].Weight })
	for _, hook := range hooks {
		if isTestHook(hook.Events) {
			continue
		}
		m.warn(source.file, 0, "Helm hook %s is applied as a plain object (Calaf runs no hooks)", hook.Path)
		if err := add(hook.Path, hook.Manifest); err != nil {
			return nil, err
		}
	}
	return objects, nil
}

func isTestHook[E ~string](events []E) bool {
	for _, e := range events {
		if strings.HasPrefix(string(e), "test") {
			return true
		}
	}
	return false
}
