// Package helmchart renders Helm charts with the Helm SDK (template only: no release, no
// hooks run, nothing installed): the chart.Engine of the processes that link Helm.
package helmchart

import (
	"context"
	"fmt"
	"strings"

	helmv2 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"

	"calaf.io/calaf/etsi/chart"
)

// maxRenderedBytes bounds what a chart's templates render.
const maxRenderedBytes = 16 << 20

// notesFile ends the name of a chart's notes template: helm prints it, it is no object.
const notesFile = "NOTES.txt"

// Engine is the Helm SDK's template engine.
type Engine struct{}

// Render loads the chart from its files and renders its templates within the request's
// deadline (a template stuck in a loop is abandoned) and a bound on what they render.
func (Engine) Render(ctx context.Context, req chart.Request) (*chart.Rendered, error) {
	files := make([]*loader.BufferedFile, len(req.Files))
	for i, f := range req.Files {
		files[i] = &loader.BufferedFile{Name: f.Name, Data: f.Data}
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, err
	}
	rendered, err := renderTemplates(ctx, ch, req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ch.Name(), err)
	}
	for name := range rendered {
		if strings.HasSuffix(name, notesFile) { // a chart's notes are text for its user, as with helm
			delete(rendered, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(rendered, chartutil.DefaultCapabilities.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	out := &chart.Rendered{}
	for _, m := range manifests {
		out.Manifests = append(out.Manifests, chart.Manifest{Name: m.Name, Content: m.Content})
	}
	for _, h := range hooks {
		out.Hooks = append(out.Hooks, chart.Hook{Manifest: chart.Manifest{Name: h.Path, Content: h.Manifest}, Weight: h.Weight, Test: isTestHook(h.Events)})
	}
	return out, nil
}

// renderTemplates renders a chart's templates as `helm template` would.
func renderTemplates(ctx context.Context, ch *helmv2.Chart, req chart.Request) (map[string]string, error) {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = chart.DefaultTimeout
	}
	values := req.Values
	if values == nil {
		values = map[string]any{}
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return nil, err
	}
	options := chartutil.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: 1, IsInstall: true}
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
		return nil, fmt.Errorf("%w (%s)", chart.ErrTimeout, timeout)
	}
}

func isTestHook[E ~string](events []E) bool {
	for _, e := range events {
		if strings.HasPrefix(string(e), "test") {
			return true
		}
	}
	return false
}
