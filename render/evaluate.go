package render

import (
	contextpkg "context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/tliron/go-ard"
	"github.com/tliron/kutil/problems"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"

	"calaf.io/calaf/tosca"
)

// Evaluate resolves the requirements of a compiled package into relationships and, with
// coerce, replaces every value by its evaluated result, within the Budget of timeout. It
// returns a new Clout.
func Evaluate(ctx contextpkg.Context, compiled *tosca.Compiled, timeout time.Duration, coerce bool) (*cloutpkg.Clout, error) {
	limits := scriptLimits{timeout, Budget(compiled, timeout)}
	clout, _, _, err := runDriver(ctx, compiled, false, nil, limits, logr.Discard(), nil, "evaluate", map[string]any{"coerce": coerce})
	if err != nil {
		return nil, err
	}
	if calaf, ok := ard.With(clout.Metadata).Get("puccini", "scriptlets", "calaf").StringMap(); ok {
		delete(calaf, "driver")
		delete(calaf, "realm")
		delete(calaf, "resolve")
		delete(calaf, "values")
	}
	return clout, nil
}

// scriptLimits are the script timeout a render was given and the budget it makes.
type scriptLimits struct {
	timeout, budget time.Duration
}

// runDriver runs an export of the driver scriptlet on a copy of the compiled Clout (with
// live attributes set), within the budget, and returns the copy and the export's result.
// An owned Clout's vertexes and properties are not copied but changed in place; its
// metadata (the package's scriptlets, the VNFD) is copied all the same. Problems reported
// by scriptlets and script failures become an *tosca.InvalidError; the problems that are
// tolerated idioms of a SOL001 flavour are returned as warnings.
func runDriver(ctx contextpkg.Context, compiled *tosca.Compiled, owned bool, attributes map[string]map[string]any, limits scriptLimits, log logr.Logger, programs *tosca.Programs, function string, params map[string]any) (*cloutpkg.Clout, any, []tosca.Diagnostic, error) {
	pkg := compiled.Package
	clout, err := driverClout(compiled.Clout, owned)
	if err != nil {
		return nil, nil, nil, err
	}
	for name, source := range map[string]string{driverScriptlet: driverSource, realmScriptlet: realmSource, resolveScriptlet: resolveSource, valuesScriptlet: valuesSource} {
		if err := js.SetScriptlet(name, source, clout); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := setAttributes(clout, attributes); err != nil {
		return nil, nil, nil, err
	}
	probs := problems.NewProblems(nil)
	blocking := func() bool {
		_, diags := tosca.TolerateValues(compiled.VNFD(), problemDiagnostics(compiled, probs))
		return len(diags) > 0
	}
	sandbox := &tosca.Sandbox{Timeout: limits.budget, Log: log, Programs: programs, Globals: map[string]any{"calaf": &calafAPI{pkg: pkg}, "calafDriver": driverAPI{blocking: blocking}}}
	result, execErr := sandbox.Exec(ctx, clout, probs, driverScriptlet, function, params)
	if script, ok := execErr.(*tosca.ScriptError); ok && script.Timeout {
		execErr = &tosca.ScriptError{Scriptlet: script.Scriptlet, Timeout: true, Message: "did not finish within " + budgetText(limits.budget, limits.timeout)}
	}
	warnings, err := driverFailure(compiled, probs, execErr)
	if err != nil {
		return nil, nil, nil, err
	}
	return clout, result, warnings, nil
}

// driverClout is the Clout the driver runs on: a copy, or an owned Clout's vertexes and
// properties with a copy of its metadata.
func driverClout(compiled *cloutpkg.Clout, owned bool) (*cloutpkg.Clout, error) {
	if !owned {
		return compiled.Copy()
	}
	metadata, ok := ard.CopyMapsToStringMaps(compiled.Metadata).(ard.StringMap)
	if !ok {
		return nil, fmt.Errorf("the compiled Clout's metadata is not a map")
	}
	return &cloutpkg.Clout{Version: compiled.Version, Metadata: metadata, Properties: compiled.Properties, Vertexes: compiled.Vertexes}, nil
}

// driverFailure turns the problems that scriptlets reported and the failure of a run of
// the driver (or of a node's realm) into an *tosca.InvalidError, nil when there are none;
// an error of Calaf's own is returned as it is. Problems that are tolerated idioms of a
// SOL001 flavour (tosca.TolerateValues) are returned as warnings instead.
func driverFailure(compiled *tosca.Compiled, probs *problems.Problems, execErr error) ([]tosca.Diagnostic, error) {
	warnings, diags := tosca.TolerateValues(compiled.VNFD(), problemDiagnostics(compiled, probs))
	if execErr != nil {
		var scriptErr *tosca.ScriptError
		if !errors.As(execErr, &scriptErr) {
			return nil, execErr
		}
		diags = append(diags, tosca.Diagnostic{File: compiled.Package.Entry, Message: driverMessage(scriptErr)})
	}
	if len(diags) > 0 {
		return nil, &tosca.InvalidError{Diagnostics: diags}
	}
	return warnings, nil
}

// driverMessage words a failure of the driver for the package author: the driver itself is
// Calaf's, the scriptlets it runs (functions, renderers) are the package's or a profile's.
func driverMessage(err *tosca.ScriptError) string {
	if err.Scriptlet != driverScriptlet && err.Scriptlet != realmScriptlet {
		return err.Error()
	}
	switch {
	case err.Timeout && err.Scriptlet == realmScriptlet:
		return err.Message + ": an endless loop in the renderer?"
	case err.Timeout:
		return "scriptlets " + err.Message + ": an endless loop in a TOSCA function or a renderer?"
	}
	return err.Message
}
