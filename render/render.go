// Package render turns a compiled TOSCA package into Kubernetes objects and a plan. The
// rendering logic lives in the profiles' JavaScript scriptlets (each node type names its
// renderer in the metadata key "calaf.render"); this package drives them in the tosca
// sandbox, labels what they return, and orders the nodes by their requirements.
package render

import (
	contextpkg "context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/tliron/kutil/problems"

	"calaf.io/calaf/etsi"
	"calaf.io/calaf/etsi/chart"
	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/internal/text"
	"calaf.io/calaf/tosca"
)

//go:embed driver.js
var driverSource string

// driverScriptlet is the Clout name under which the driver runs.
const driverScriptlet = "calaf.driver"

//go:embed resolve.js
var resolveSource string

// resolveScriptlet is the Clout name of Calaf's requirement resolution (resolve.js).
const resolveScriptlet = "calaf.resolve"

//go:embed values.js
var valuesSource string

// valuesScriptlet is the Clout name of Calaf's evaluation of every value (values.js).
const valuesScriptlet = "calaf.values"

// Options say for whom a package is rendered.
type Options struct {
	// Service and Namespace name the Calaf Service: object names, labels, DNS names.
	Service   string
	Namespace string
	// Attributes are live attribute values by node template and attribute name; they feed
	// get_attribute in properties and outputs.
	Attributes map[string]map[string]any
	// Timeout bounds each node's renderer, and the scriptlets of the whole render once for
	// every 100 node templates (Budget); zero means tosca.DefaultScriptTimeout.
	Timeout time.Duration
	// Instantiate is the SOL003 instantiate request of an ETSI SOL001 VNF package: its
	// instantiation level and additionalParams (the flavour was chosen by the compile).
	Instantiate *etsi.Request
	// Scale sets the scale level of aspects, by aspect (the Service's spec.scale): their
	// workloads' replicas follow.
	Scale map[string]int64
	// Stopped scales every workload to zero (an OPERATE to STOPPED).
	Stopped bool
}

// Renderer renders compiled packages, caching results by compile key and options.
type Renderer struct {
	Log logr.Logger
	// OnRender, if set, is called after every render that was not a cache hit.
	OnRender func(duration time.Duration, err error)
	// Run, when set, does the work of every render that is not a cache hit — in a worker
	// process, where a package that crashes or exhausts memory ends that process and not
	// this one (package worker). Nil renders in this process.
	Run Func
	// Charts renders the Helm charts of ETSI packages in this process; nil refuses a
	// package that deploys one (chart.ErrNoEngine).
	Charts chart.Engine
	// Codec, when set, keeps cached results encoded — several times smaller than their
	// decoded objects — and decodes one on every hit, so that the cache can hold every
	// Service in flight. Nil keeps them decoded and shared with the callers.
	Codec Codec

	cache    *lru.Cache[cached]
	programs *tosca.Programs
}

// Codec encodes results for the cache and decodes them back.
type Codec interface {
	Encode(result *Result) ([]byte, error)
	Decode(data []byte) (*Result, error)
}

// cached is one cache entry: the result, or its encoding.
type cached struct {
	result  *Result
	encoded []byte
}

// Func renders a compiled package; problems of the package are a *tosca.InvalidError.
type Func func(ctx contextpkg.Context, compiled *tosca.Compiled, opts Options) (*Result, error)

// NewRenderer returns a renderer that keeps up to cacheSize results.
func NewRenderer(cacheSize int) *Renderer {
	return &Renderer{cache: lru.New[cached](cacheSize), programs: tosca.NewPrograms()}
}

// Render resolves requirements, coerces values (evaluating functions), runs the renderer
// of every node template, and evaluates the outputs. Problems of the package are returned
// as *tosca.InvalidError. The result may be shared with the cache: DeepCopy objects
// before changing them.
func (r *Renderer) Render(ctx contextpkg.Context, compiled *tosca.Compiled, opts Options) (*Result, error) {
	if result, ok := r.Cached(compiled.Key, opts); ok {
		return result, nil
	}
	start := time.Now()
	run := r.Run
	if run == nil {
		run = r.RenderUncached
	}
	result, err := run(ctx, compiled, opts)
	if r.OnRender != nil {
		r.OnRender(time.Since(start), err)
	}
	if err != nil {
		return nil, err
	}
	// A render that read no attributes is the one of any attribute values: it is kept
	// under the key without them.
	if !result.ReadsAttributes {
		opts.Attributes = nil
	}
	result.Key = renderKey(compiled.Key, opts)
	r.store(result.Key, result)
	return result, nil
}

// load returns the cached result of key, decoded when the cache keeps it encoded; an
// entry that does not decode is a miss.
func (r *Renderer) load(key string) (*Result, bool) {
	entry, ok := r.cache.Get(key)
	if !ok || entry.encoded == nil {
		return entry.result, ok
	}
	result, err := r.Codec.Decode(entry.encoded)
	if err != nil {
		r.Log.Error(err, "a cached render does not decode; rendering again", "key", key)
		return nil, false
	}
	return result, true
}

// store caches result under key, encoded when the renderer has a codec that can encode it.
func (r *Renderer) store(key string, result *Result) {
	if r.Codec != nil {
		if encoded, err := r.Codec.Encode(result); err == nil {
			r.cache.Put(key, cached{encoded: encoded})
			return
		}
	}
	r.cache.Put(key, cached{result: result})
}

// Cached returns the result of an earlier render of the compile key with opts, if the
// cache still holds it — or of one with other attribute values that read none of them
// (Result.ReadsAttributes): a caller that has it needs neither the compiled package nor
// a render. The result may be shared with the cache, as Render's.
func (r *Renderer) Cached(compileKey string, opts Options) (*Result, bool) {
	if result, ok := r.load(renderKey(compileKey, opts)); ok || len(opts.Attributes) == 0 {
		return result, ok
	}
	opts.Attributes = nil
	if result, ok := r.load(renderKey(compileKey, opts)); ok && !result.ReadsAttributes {
		return result, true
	}
	return nil, false
}

// renderKey identifies a render: the compile and the options, no attributes and an empty
// map of them alike.
func renderKey(compileKey string, opts Options) string {
	if len(opts.Attributes) == 0 {
		opts.Attributes = nil
	}
	h := sha256.New()
	data, _ := json.Marshal([]any{compileKey, opts.Service, opts.Namespace, opts.Attributes, opts.Instantiate, opts.Scale, opts.Stopped})
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// RenderUncached renders in this process, bypassing the cache and Run: what a worker
// process does for a Renderer whose Run sends it the render. Requirements are resolved and
// values evaluated in one JavaScript realm, then every node's renderer runs in a realm of
// its own (realms), all within the render's Budget.
func (r *Renderer) RenderUncached(ctx contextpkg.Context, compiled *tosca.Compiled, opts Options) (*Result, error) {
	return r.renderUncached(ctx, compiled, opts, false)
}

// RenderOwned is RenderUncached for a compiled package whose Clout is the caller's alone
// (a Clout a worker has just bound): its vertexes and properties are evaluated in place
// instead of in a copy, and it cannot be rendered again.
func (r *Renderer) RenderOwned(ctx contextpkg.Context, compiled *tosca.Compiled, opts Options) (*Result, error) {
	return r.renderUncached(ctx, compiled, opts, true)
}

func (r *Renderer) renderUncached(ctx contextpkg.Context, compiled *tosca.Compiled, opts Options, owned bool) (*Result, error) {
	params := map[string]any{
		"service":   opts.Service,
		"namespace": opts.Namespace,
		"root":      compiled.Package.Root + "/",
		"render":    true,
	}
	start := time.Now()
	budget := Budget(compiled, opts.Timeout)
	// Read before the driver, which evaluates an owned Clout's functions in place.
	mayRead, outputs := mayReadAttributes(compiled.Clout), outputDefinitions(compiled.Clout)
	realms, err := newRealms(compiled, start, opts.Timeout, budget, r.Log, r.programs)
	if err != nil {
		return nil, err
	}
	_, raw, tolerated, err := runDriver(ctx, compiled, owned, opts.Attributes, scriptLimits{opts.Timeout, budget}, r.Log, r.programs, "run", params)
	if err != nil {
		return nil, err
	}
	data, _ := raw.(map[string]any)
	renderersRead, err := realms.renderNodes(ctx, data, opts)
	if err != nil {
		return nil, err
	}
	result, err := assemble(raw, opts)
	if err != nil {
		return nil, err
	}
	result.ReadsAttributes = renderersRead || mayRead
	result.OutputDefinitions = outputs
	result.Warnings = append(compiled.Warnings(), tolerated...)
	if err := mapVNF(ctx, compiled, data, result, opts, r.Charts); err != nil {
		return nil, err
	}
	if err := applyPlacements(result, data); err != nil {
		return nil, err
	}
	if err := applyLifecycle(result, data, opts); err != nil {
		return nil, err
	}
	warnings, err := resolveOperations(compiled.Package, compiledEntry(compiled), result.Nodes)
	if err != nil {
		return nil, err
	}
	result.Warnings = append(result.Warnings, warnings...)
	if len(result.Objects) == 0 && len(result.Nodes) > 0 {
		result.Warnings = append(result.Warnings, noObjects(compiledEntry(compiled), result.Nodes))
	}
	if err := ValidateObjects(compiledEntry(compiled), result.Nodes); err != nil {
		return nil, err
	}
	if err := ValidateOutputs(compiledEntry(compiled), result.Outputs); err != nil {
		return nil, err
	}
	return result, nil
}

// noObjects says that a package validates but maps no node to any object: that its
// renderers returned none, naming them, or, when none of its node types has a renderer,
// naming the types.
func noObjects(entry string, nodes []*Node) tosca.Diagnostic {
	var renderers, types []string
	for _, node := range nodes {
		if node.Renderer != "" {
			renderers = append(renderers, node.Renderer)
		} else {
			types = append(types, node.Type)
		}
	}
	if len(renderers) > 0 {
		return tosca.Diagnostic{File: entry, Message: fmt.Sprintf("the package validates but maps no node to any Kubernetes object: its renderers (%s) returned none", fewOf(renderers))}
	}
	return tosca.Diagnostic{File: entry, Message: fmt.Sprintf("the package validates but maps no node to any Kubernetes object: none of the types of its %d node templates (%s) has a renderer (calaf.render), and it is no ETSI SOL001 VNF with a deployment flavour (docs/etsi.md)",
		len(nodes), fewOf(types))}
}

// fewOf lists names once each, sorted, at most five of them and the count of the others.
func fewOf(names []string) string {
	sort.Strings(names)
	names = slices.Compact(names)
	for i, name := range names {
		names[i] = text.Shorten(name, tosca.MaxEcho)
	}
	if len(names) > 5 {
		names = append(names[:5], fmt.Sprintf("and %d more", len(names)-5))
	}
	return strings.Join(names, ", ")
}

// problemDiagnostics converts problems that scriptlets reported (unsatisfied requirements,
// failed constraints, function errors) into diagnostics.
// Requirement resolution reports its problems in the section "Resolution", at the line of
// a node template: they are in the compiled entry (a SOL001 package's flavour file).
func problemDiagnostics(compiled *tosca.Compiled, probs *problems.Problems) []tosca.Diagnostic {
	pkg := compiled.Package
	var diags []tosca.Diagnostic
	for _, problem := range probs.Slice() {
		d := tosca.Diagnostic{File: problem.Section, Path: problem.Item, Message: problemMessage(problem.Message)}
		if rel, ok := pkg.Rel(trimFileScheme(problem.Section)); ok {
			d.File = rel
		} else if problem.Section == "Resolution" {
			d.File = compiledEntry(compiled)
		}
		if problem.Row > 0 {
			d.Line = problem.Row
		}
		if problem.Column > 0 {
			d.Column = problem.Column
		}
		diags = append(diags, d)
	}
	return diags
}

// problemMessage completes Puccini's message for a function that overflowed the call
// stack: goja's StackOverflowError has no message, only a stack.
func problemMessage(message string) string {
	return strings.Replace(message, " failed because  at ", " failed because the call stack overflowed (runaway recursion?) at ", 1)
}

func trimFileScheme(s string) string {
	if len(s) > 7 && s[:7] == "file://" {
		return s[7:]
	}
	return s
}

func invalidf(format string, args ...any) error {
	return &tosca.InvalidError{Diagnostics: []tosca.Diagnostic{{Message: fmt.Sprintf(format, args...)}}}
}

// compiledEntry is the template a compile started from: a SOL001 package's flavour file,
// else the package's entry.
func compiledEntry(compiled *tosca.Compiled) string {
	if vnfd := compiled.VNFD(); vnfd != nil {
		return vnfd.FlavourFile
	}
	return compiled.Package.Entry
}
