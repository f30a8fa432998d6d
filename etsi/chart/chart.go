// Package chart is what the ETSI mapping asks of a Helm chart engine: the files of a chart,
// the values it is rendered with, and the manifests it renders. It links no Helm: a
// process that renders no chart (the CLI's lean commands) does not pay for Helm's startup.
package chart

import (
	"context"
	"errors"
	"time"
)

// DefaultTimeout bounds the rendering of one chart.
const DefaultTimeout = 10 * time.Second

// ErrTimeout is a chart whose templates did not render within the deadline.
var ErrTimeout = errors.New("the Helm templates did not render within the deadline")

// ErrNoEngine is a package that deploys a Helm chart, rendered by a process that was given
// no chart engine.
var ErrNoEngine = errors.New("this process renders no Helm charts")

// File is a file of a chart, its path relative to the chart's root.
type File struct {
	Name string
	Data []byte
}

// Request is one chart to render, as `helm template` would.
type Request struct {
	Files []File
	// Values are the values over the chart's own.
	Values    map[string]any
	Release   string
	Namespace string
	// Timeout bounds the templates; zero means DefaultTimeout.
	Timeout time.Duration
}

// Manifest is a rendered template: its path in the chart and its YAML.
type Manifest struct {
	Name    string
	Content string
}

// Hook is a rendered template annotated as a Helm hook.
type Hook struct {
	Manifest
	Weight int
	// Test is a test hook (`helm test`), which Calaf skips.
	Test bool
}

// Rendered is a rendered chart: its manifests in Helm's install order, then its hooks.
type Rendered struct {
	Manifests []Manifest
	Hooks     []Hook
}

// Engine renders charts; a problem of the chart is an error whose text says it.
type Engine interface {
	Render(ctx context.Context, req Request) (*Rendered, error)
}
