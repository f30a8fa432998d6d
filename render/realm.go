package render

import (
	contextpkg "context"
	_ "embed"
	"time"

	"github.com/go-logr/logr"
	"github.com/tliron/go-ard"
	"github.com/tliron/kutil/problems"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"

	"calaf.io/calaf/tosca"
)

//go:embed realm.js
var realmSource string

// realmScriptlet is the Clout name of the scriptlet that renders one node in its realm.
const realmScriptlet = "calaf.realm"

// realms runs the renderers of one render, each node in a JavaScript realm of its own (a
// fresh runtime): a renderer that changes prototypes, globals, modules or the views it is
// given changes them for its own node only. All of them share one deadline.
type realms struct {
	compiled *tosca.Compiled
	scripts  *cloutpkg.Clout // the scriptlets, copied into each realm's Clout
	log      logr.Logger
	programs *tosca.Programs
	deadline time.Time
	timeout  time.Duration
}

// renderNodes sets the objects and attributes of every node of the driver's result data
// that has a renderer, rendering each in a realm of its own. Problems of the package are
// an *tosca.InvalidError.
func (r *realms) renderNodes(ctx contextpkg.Context, data map[string]any, opts Options) error {
	views, _ := data["views"].(string)
	delete(data, "views")
	for _, item := range asList(data["nodes"]) {
		node := asMap(item)
		renderer := asString(node["renderer"])
		if renderer == "" {
			continue
		}
		params := map[string]any{"node": asString(node["name"]), "renderer": renderer, "views": views,
			"service": opts.Service, "namespace": opts.Namespace}
		rendered, err := r.render(ctx, params)
		if err != nil {
			return err
		}
		node["objects"], node["attributes"] = rendered["objects"], rendered["attributes"]
	}
	return nil
}

// render runs calaf.realm for one node in a fresh runtime, whose Clout holds a copy of the
// package's scriptlets and nothing else.
func (r *realms) render(ctx contextpkg.Context, params map[string]any) (map[string]any, error) {
	remaining := time.Until(r.deadline)
	if remaining <= 0 {
		return nil, r.invalid(nil, &tosca.ScriptError{Scriptlet: realmScriptlet, Timeout: true})
	}
	clout := &cloutpkg.Clout{Version: r.scripts.Version, Metadata: ard.CopyMapsToStringMaps(r.scripts.Metadata).(ard.StringMap),
		Properties: ard.StringMap{}, Vertexes: cloutpkg.Vertexes{}}
	probs := problems.NewProblems(nil)
	sandbox := &tosca.Sandbox{Timeout: remaining, Log: r.log, Programs: r.programs,
		Globals: map[string]any{"calaf": &calafAPI{pkg: r.compiled.Package}}}
	result, err := sandbox.Exec(ctx, clout, probs, realmScriptlet, "render", params)
	if err := r.invalid(probs, err); err != nil {
		return nil, err
	}
	return asMap(result), nil
}

// invalid turns the problems and the failure of a realm into an *tosca.InvalidError (nil
// when there are none); a deadline is worded with the render's whole timeout.
func (r *realms) invalid(probs *problems.Problems, execErr error) error {
	if script, ok := execErr.(*tosca.ScriptError); ok && script.Timeout {
		execErr = &tosca.ScriptError{Scriptlet: script.Scriptlet, Timeout: true, Message: "did not finish within " + r.timeout.String()}
	}
	if probs == nil {
		probs = problems.NewProblems(nil)
	}
	return driverFailure(r.compiled, probs, execErr)
}

// newRealms prepares the realms of a render that started at start. Their scriptlets are
// the compiled package's, as compiled: not what the functions run before may have changed.
func newRealms(compiled *tosca.Compiled, start time.Time, timeout time.Duration, log logr.Logger, programs *tosca.Programs) (*realms, error) {
	if timeout <= 0 {
		timeout = tosca.DefaultScriptTimeout
	}
	clout := compiled.Clout
	scripts := &cloutpkg.Clout{Version: clout.Version, Metadata: ard.CopyMapsToStringMaps(clout.Metadata).(ard.StringMap)}
	if err := js.SetScriptlet(realmScriptlet, realmSource, scripts); err != nil {
		return nil, err
	}
	return &realms{compiled: compiled, scripts: scripts, log: log, programs: programs, deadline: start.Add(timeout), timeout: timeout}, nil
}
