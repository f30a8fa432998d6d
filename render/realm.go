package render

import (
	contextpkg "context"
	_ "embed"
	"fmt"
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
// given changes them for its own node only. Each has the script timeout at most, and all
// of them end by the render's deadline (its Budget).
type realms struct {
	compiled *tosca.Compiled
	scripts  *cloutpkg.Clout // the scriptlets, copied into each realm's Clout
	log      logr.Logger
	programs *tosca.Programs
	deadline time.Time
	timeout  time.Duration // of one node's renderer
	budget   time.Duration // of the whole render
}

// renderNodes sets the objects and attributes of every node of the driver's result data
// that has a renderer, rendering each in a realm of its own, and tells whether any
// renderer read a view's attributes. Problems of the package are an *tosca.InvalidError.
func (r *realms) renderNodes(ctx contextpkg.Context, data map[string]any, opts Options) (readsAttributes bool, err error) {
	views := asMap(data["views"])
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
			return false, err
		}
		node["objects"], node["attributes"] = rendered["objects"], rendered["attributes"]
		if read, _ := rendered["readsAttributes"].(bool); read {
			readsAttributes = true
		}
	}
	return readsAttributes, nil
}

// render runs calaf.realm for one node in a fresh runtime, whose Clout holds a copy of the
// package's scriptlets and nothing else, with the script timeout or what is left of the
// render's budget, whichever ends first.
func (r *realms) render(ctx contextpkg.Context, params map[string]any) (map[string]any, error) {
	node := asString(params["node"])
	limit := min(r.timeout, time.Until(r.deadline))
	if limit <= 0 {
		return nil, r.invalid(nil, r.timedOut(node, false))
	}
	clout := &cloutpkg.Clout{Version: r.scripts.Version, Metadata: ard.CopyMapsToStringMaps(r.scripts.Metadata).(ard.StringMap),
		Properties: ard.StringMap{}, Vertexes: cloutpkg.Vertexes{}}
	probs := problems.NewProblems(nil)
	sandbox := &tosca.Sandbox{Timeout: limit, Log: r.log, Programs: r.programs,
		Globals: map[string]any{"calaf": &calafAPI{pkg: r.compiled.Package}}}
	result, err := sandbox.Exec(ctx, clout, probs, realmScriptlet, "render", params)
	if script, ok := err.(*tosca.ScriptError); ok && script.Timeout {
		err = r.timedOut(node, limit == r.timeout)
	}
	if err := r.invalid(probs, err); err != nil {
		return nil, err
	}
	return asMap(result), nil
}

// timedOut words a renderer that ran out of time: its own timeout, or the render's budget.
func (r *realms) timedOut(node string, own bool) *tosca.ScriptError {
	if own {
		return &tosca.ScriptError{Scriptlet: realmScriptlet, Timeout: true,
			Message: fmt.Sprintf("node %s: its renderer did not finish within %s", tosca.Echo(node), r.timeout)}
	}
	return &tosca.ScriptError{Scriptlet: realmScriptlet, Timeout: true,
		Message: fmt.Sprintf("node %s: the renderers did not finish within %s", tosca.Echo(node), budgetText(r.budget, r.timeout))}
}

// invalid turns the problems and the failure of a realm into an *tosca.InvalidError (nil
// when there are none).
func (r *realms) invalid(probs *problems.Problems, execErr error) error {
	if probs == nil {
		probs = problems.NewProblems(nil)
	}
	_, err := driverFailure(r.compiled, probs, execErr)
	return err
}

// newRealms prepares the realms of a render that started at start with a budget, each
// renderer with timeout at most. Their scriptlets are the compiled package's, as compiled:
// not what the functions run before may have changed.
func newRealms(compiled *tosca.Compiled, start time.Time, timeout, budget time.Duration, log logr.Logger, programs *tosca.Programs) (*realms, error) {
	if timeout <= 0 {
		timeout = tosca.DefaultScriptTimeout
	}
	clout := compiled.Clout
	scripts := &cloutpkg.Clout{Version: clout.Version, Metadata: ard.CopyMapsToStringMaps(clout.Metadata).(ard.StringMap)}
	if err := js.SetScriptlet(realmScriptlet, realmSource, scripts); err != nil {
		return nil, err
	}
	return &realms{compiled: compiled, scripts: scripts, log: log, programs: programs, deadline: start.Add(budget), timeout: timeout, budget: budget}, nil
}
