package tosca

import (
	contextpkg "context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/tliron/exturl"
	"github.com/tliron/go-ard"
	"github.com/tliron/kutil/problems"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"
	"github.com/tliron/puccini/normal"
	"github.com/tliron/puccini/tosca/parser"
	"golang.org/x/sync/singleflight"

	"calaf.io/calaf/internal/lru"
	"calaf.io/calaf/profiles"
)

// Compiled is a package compiled into a Clout: parsed, validated and normalized, with its
// requirements not yet resolved and its values not yet coerced (both run in the sandbox
// when rendering). It is shared through the cache: never mutate
// Clout, work on Clout.Copy().
type Compiled struct {
	Clout *cloutpkg.Clout
	// Key identifies the package content and the inputs that produced this Clout.
	Key    string
	Digest string
	Inputs map[string]any
	// Package is the package the Clout was compiled from; it stays open while cached.
	Package *Package
	// Template, when set, is the template the Clout was made from by binding Inputs onto
	// it (bind.go), which one compile of the package makes again after a restart: nothing
	// of such a compile needs keeping.
	Template *Template
}

// pucciniLock serializes Puccini parses across all the Compilers of the process. Each
// Puccini v0.22.7 parser locks its own phases, but nothing in Puccini promises that two
// parsers may run at once, and what they build shares values between parses (normal
// gives every vertex without metadata the same package-level map, in every Clout). A
// concurrent-map fault there would end the whole operator, every tenant's Services with
// it, and no stress run can prove it absent; so parses take turns. The cost is small: a
// parse happens only on a cache miss, binding (bind.go) turns most input changes into no
// parse at all, and the fleet benchmark (docs/benchmarks.md) compiles once per package.
// TestConcurrentCompiles checks concurrent compiles against serial ones.
var pucciniLock sync.Mutex

// Compiler compiles packages with Puccini; it runs no JavaScript. Its parser caches
// imports forever, so every compile gets a new parser, and parses take turns process-wide
// (pucciniLock). Results are cached by package digest and inputs.
type Compiler struct {
	Log logr.Logger
	// OnCompile, if set, is called after every compile attempt that was not a cache hit.
	OnCompile func(duration time.Duration, err error)

	// Binding enables binding primitive inputs onto a per-package compile (see bind.go)
	// instead of compiling again for every set of inputs.
	Binding bool
	// OnBind, if set, is called after inputs were bound instead of compiled.
	OnBind func()
	// Run, when set, does the work of every compile that is neither a cache hit nor a
	// bind — in a worker process, where a package that crashes Puccini or exhausts memory
	// ends that process and not this one (package worker). Nil compiles in this process.
	Run CompileFunc

	// flight runs one compile per compile key, and one template probe per package.
	flight    singleflight.Group
	cache     *lru.Cache[*Compiled]
	templates *lru.Cache[*Template]
	// compiledOnce holds the digests of packages compiled once: a template is made for
	// a package only when it is compiled again with other inputs.
	compiledOnce *lru.Cache[struct{}]
}

// CompileFunc compiles a package with inputs and options into a new Clout; problems of
// the package are an *InvalidError.
type CompileFunc func(ctx contextpkg.Context, pkg *Package, inputs map[string]any, opts CompileOptions) (*cloutpkg.Clout, error)

// NewCompiler returns a compiler keeping up to cacheSize compiled packages.
func NewCompiler(cacheSize int) *Compiler {
	templates := max(cacheSize/8, 8)
	return &Compiler{cache: lru.New[*Compiled](cacheSize), templates: lru.New[*Template](templates), compiledOnce: lru.New[struct{}](templates * 8)}
}

// CacheKey identifies a compile: the package digest and the inputs.
func CacheKey(digest string, inputs map[string]any) string {
	h := sha256.New()
	h.Write([]byte(digest))
	h.Write([]byte{0})
	data, _ := json.Marshal(inputs) // maps marshal with sorted keys
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Add caches a compiled package obtained elsewhere (e.g. restored from durable state).
func (c *Compiler) Add(compiled *Compiled) {
	c.cache.Put(compiled.Key, compiled)
}

// Cached returns the compiled package for key, if cached.
// The result reads its files from pkg, a package of the same digest (the one first
// compiled may have been closed since).
func (c *Compiler) Cached(key string, pkg *Package) (*Compiled, bool) {
	compiled, ok := c.cache.Get(key)
	if !ok {
		return nil, false
	}
	return compiled.withPackage(pkg), true
}

// Bound returns the package compiled with inputs when the compiler can make it without
// compiling: from its cache, or by binding the inputs onto the package's template when
// that template was made already (microseconds); false otherwise (nothing is compiled).
func (c *Compiler) Bound(pkg *Package, inputs map[string]any, opts CompileOptions) (*Compiled, bool) {
	key := CompileKey(pkg.Digest, inputs, opts)
	if compiled, ok := c.cache.Get(key); ok {
		return compiled.withPackage(pkg), true
	}
	if !c.Binding || len(inputs) == 0 || !opts.IsZero() {
		return nil, false
	}
	t, ok := c.templates.Get(pkg.Digest)
	if !ok || t == nil {
		return nil, false
	}
	clout, ok := t.BindShared(inputs)
	if !ok {
		return nil, false
	}
	if c.OnBind != nil {
		c.OnBind()
	}
	compiled := &Compiled{Clout: clout, Key: key, Digest: pkg.Digest, Inputs: inputs, Package: pkg, Template: t}
	c.cache.Put(key, compiled)
	return compiled, true
}

// CompileKey identifies a compile with options: the package digest, the inputs and the
// options (CacheKey when they are the defaults).
func CompileKey(digest string, inputs map[string]any, opts CompileOptions) string {
	if opts.IsZero() {
		return CacheKey(digest, inputs)
	}
	data, _ := json.Marshal(opts)
	return CacheKey(digest+"\x00"+string(data), inputs)
}

// Compile parses and compiles pkg with inputs. Every problem becomes a
// Diagnostic of an *InvalidError; a cache hit returns the earlier result.
func (c *Compiler) Compile(ctx contextpkg.Context, pkg *Package, inputs map[string]any) (*Compiled, error) {
	return c.CompileWith(ctx, pkg, inputs, CompileOptions{})
}

// CompileWith is Compile with options: the deployment flavour of an ETSI SOL001 package,
// strictness about tolerated idioms.
func (c *Compiler) CompileWith(ctx contextpkg.Context, pkg *Package, inputs map[string]any, opts CompileOptions) (*Compiled, error) {
	key := CompileKey(pkg.Digest, inputs, opts)
	if compiled, ok := c.cache.Get(key); ok {
		return compiled.withPackage(pkg), nil
	}
	// A package beyond the template limits is refused here, at once, before a compile
	// (in a worker, perhaps) starts.
	if err := pkg.CheckSize(); err != nil {
		return nil, err
	}
	// One compile per key at a time; compiles of other keys go on beside it (in the
	// worker processes, or one parse at a time in this one: pucciniLock).
	compiled, err, _ := c.flight.Do(key, func() (any, error) {
		if compiled, ok := c.cache.Get(key); ok {
			return compiled, nil
		}
		return c.compileOrBind(ctx, key, pkg, inputs, opts)
	})
	if err != nil {
		return nil, err
	}
	return compiled.(*Compiled).withPackage(pkg), nil
}

// compileOrBind binds the inputs onto the package's template when it has one (made for a
// package compiled before), else compiles; it caches the result.
func (c *Compiler) compileOrBind(ctx contextpkg.Context, key string, pkg *Package, inputs map[string]any, opts CompileOptions) (*Compiled, error) {
	if again := c.compiledBefore(pkg.Digest); again && c.Binding && len(inputs) > 0 && opts.IsZero() {
		if t := c.templateFor(ctx, pkg); t != nil {
			if clout, ok := t.BindShared(inputs); ok {
				if c.OnBind != nil {
					c.OnBind()
				}
				compiled := &Compiled{Clout: clout, Key: key, Digest: pkg.Digest, Inputs: inputs, Package: pkg, Template: t}
				c.cache.Put(key, compiled)
				return compiled, nil
			}
		}
	}
	clout, err := c.timedCompile(ctx, pkg, inputs, opts)
	if err != nil {
		return nil, err
	}
	compiled := &Compiled{Clout: clout, Key: key, Digest: pkg.Digest, Inputs: inputs, Package: pkg}
	c.cache.Put(key, compiled)
	return compiled, nil
}

// timedCompile compiles and reports the compile to OnCompile.
func (c *Compiler) timedCompile(ctx contextpkg.Context, pkg *Package, inputs map[string]any, opts CompileOptions) (*cloutpkg.Clout, error) {
	start := time.Now()
	run := c.Run
	if run == nil {
		run = c.CompileClout
	}
	clout, err := run(ctx, pkg, inputs, opts)
	if c.OnCompile != nil {
		c.OnCompile(time.Since(start), err)
	}
	return clout, err
}

// CompileClout compiles in this process, bypassing the cache and Run: what a worker
// process does for a Compiler whose Run sends it the compile.
func (c *Compiler) CompileClout(ctx contextpkg.Context, pkg *Package, inputs map[string]any, opts CompileOptions) (clout *cloutpkg.Clout, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.Log.Error(nil, "Puccini panicked", "panic", r, "stack", string(debug.Stack()))
			clout, err = nil, Invalid(pkg.Entry, "the TOSCA parser failed on this package: %v", r)
		}
	}()
	plan, err := pkg.planCompile(inputs, opts)
	if err != nil {
		return nil, err
	}
	urlContext := exturl.NewContext()
	defer urlContext.Release()
	for public, internal := range plan.imports {
		urlContext.Map(public, internal)
	}
	for _, imp := range pkg.Imports {
		entry := filepath.Join(imp.Profile.Root, filepath.FromSlash(imp.Profile.Entry))
		urlContext.Map(imp.URL, (&url.URL{Scheme: "file", Path: filepath.ToSlash(entry)}).String())
	}
	for from, rel := range plan.mapped {
		full, err := pkg.Path(rel)
		if err != nil {
			return nil, Invalid(rel, "%v", err)
		}
		urlContext.Map(from, (&url.URL{Scheme: "file", Path: filepath.ToSlash(full)}).String())
	}
	entry, err := pkg.Path(plan.entry)
	if err != nil {
		return nil, Invalid(plan.entry, "%v", err)
	}
	entryURL, err := urlContext.NewValidFileURL(entry)
	if err != nil {
		return nil, Invalid(plan.entry, "%v", err)
	}
	clout, err = pkg.parse(ctx, entryURL, plan)
	if err != nil {
		return nil, err
	}
	if err := fixPucciniScriptlets(clout); err != nil {
		return nil, err
	}
	relativizeClout(clout, pkg.Root)
	rewriteImports(clout, pkg.importURLPrefixes())
	setCompileMetadata(clout, plan)
	return clout, nil
}

// parse runs Puccini's parser and compiler on the plan's entry (one at a time in the
// process: Puccini keeps process-wide state), tolerating the idioms the plan allows.
func (p *Package) parse(ctx contextpkg.Context, entryURL exturl.URL, plan *compilePlan) (*cloutpkg.Clout, error) {
	// One parse at a time in the whole process, whatever Compiler asks for it (pucciniLock).
	pucciniLock.Lock()
	defer pucciniLock.Unlock()
	parserContext := parser.NewParser().NewContext()
	parserContext.URL = entryURL
	parserContext.Inputs = toARDInputs(plan.inputs)
	parserContext.Quirks = plan.quirks
	serviceTemplate, err := p.runPhases(ctx, parserContext, plan)
	if err != nil {
		return nil, err
	}
	if err := p.checkReadFiles(parserContext.Files); err != nil {
		return nil, err
	}
	clout, err := serviceTemplate.Compile()
	if err != nil {
		return nil, Invalid(plan.entry, "compile: %v", err)
	}
	stripData(clout)
	return clout, nil
}

// runPhases runs the phases of Puccini's Parser.Parse, stopping after a phase that
// reported problems — but, when the plan is tolerant, only for problems that are not
// tolerated idioms, which become the plan's warnings.
func (p *Package) runPhases(ctx contextpkg.Context, pc *parser.Context, plan *compilePlan) (*normal.ServiceTemplate, error) {
	check := func() error {
		var probs *problems.Problems
		if pc.Root != nil {
			pc.MergeProblems()
			probs = pc.GetProblems()
		}
		diags := p.diagnostics(probs)
		var warnings []Diagnostic
		if plan.tolerant {
			warnings, diags = tolerate(diags)
		}
		if len(diags) > 0 {
			return &InvalidError{Diagnostics: diags}
		}
		plan.tolerated = warnings
		return nil
	}
	ok := pc.ReadRoot(ctx, pc.URL, pc.Bases, "")
	if err := check(); err != nil {
		return nil, err
	}
	if !ok { // Puccini found no grammar and says no more
		return nil, Invalid(plan.entry, "not a service template: no tosca_definitions_version (nor heat_template_version) at its top level")
	}
	pc.AddNamespaces()
	pc.LookupNames()
	pc.AddHierarchies()
	pc.Inherit(nil)
	pc.SetInputs(pc.Inputs)
	pc.Render()
	if err := check(); err != nil {
		return nil, err
	}
	serviceTemplate, ok := pc.Normalize()
	if err := check(); err != nil {
		return nil, err
	}
	if !ok {
		return nil, Invalid(plan.entry, "the TOSCA parser could not normalize the template")
	}
	plan.warnings = append(plan.warnings, plan.tolerated...)
	return serviceTemplate, nil
}

// checkReadFiles verifies, after parsing, that Puccini read nothing from outside the
// package and the embedded profiles (the preflight should already guarantee it).
func (p *Package) checkReadFiles(files parser.Files) error {
	for _, file := range files {
		u := file.GetContext().URL
		if u == nil {
			continue
		}
		switch url := u.(type) {
		case *exturl.FileURL:
			if _, imported := p.importedFile(url.Path); imported {
				continue
			}
			if _, inside := p.Rel(url.Path); !inside {
				return Invalid(p.Entry, "the template reads %s, which is outside the package", url.Path)
			}
		case *exturl.InternalURL:
		default:
			return Invalid(p.Entry, "the template reads %s, which is not a package file", u.String())
		}
	}
	return nil
}

// diagnostics converts Puccini's problems, locating each in a package-relative file.
func (p *Package) diagnostics(probs *problems.Problems) []Diagnostic {
	if probs == nil || probs.Empty() {
		return nil
	}
	var diags []Diagnostic
	for _, problem := range probs.Slice() {
		if isDataKeyProblem(problem.Item) {
			continue // the copy of an entry that asData added: its entry says it already
		}
		d := Diagnostic{File: profiles.Public(p.relativeSource(problem.Section)), Path: problem.Item, Message: profiles.Public(problem.Message)}
		if strings.HasPrefix(d.Message, "incompatible import") && profiles.IsProfileURL(d.Message) {
			d.Message += ": the Calaf profiles are TOSCA 1.3, declare tosca_definitions_version: tosca_simple_yaml_1_3"
		}
		if problem.Row > 0 {
			d.Line = problem.Row
		}
		if problem.Column > 0 {
			d.Column = problem.Column
		}
		diags = append(diags, d)
	}
	// Puccini reports the problems of one node in map order: the path orders them too.
	sort.SliceStable(diags, func(i, j int) bool {
		if diags[i].File != diags[j].File {
			return diags[i].File < diags[j].File
		}
		if diags[i].Line != diags[j].Line {
			return diags[i].Line < diags[j].Line
		}
		return diags[i].Path < diags[j].Path
	})
	return diags
}

// relativeSource turns a Puccini problem section (a URL) into a package-relative path.
func (p *Package) relativeSource(section string) string {
	if section == "" {
		return ""
	}
	if u, err := url.Parse(section); err == nil && u.Scheme == "file" {
		if rel, ok := p.Rel(u.Path); ok {
			return rel
		}
		if imported, ok := p.importedFile(u.Path); ok {
			return imported
		}
	}
	if strings.HasPrefix(section, "/") {
		if rel, ok := p.Rel(section); ok {
			return rel
		}
	}
	return section
}

// fixPucciniScriptlets repairs a typo in Puccini v0.22.7's bundled tosca.lib.utils
// ("toexportssca") that breaks policies targeting a group.
func fixPucciniScriptlets(clout *cloutpkg.Clout) error {
	source, err := js.GetScriptlet("tosca.lib.utils", clout)
	if err != nil {
		return nil // not a TOSCA Clout with Puccini's library: nothing to fix
	}
	if fixed := strings.ReplaceAll(source, "toexportssca.isTosca", "exports.isTosca"); fixed != source {
		return js.SetScriptlet("tosca.lib.utils", fixed, clout)
	}
	return nil
}

// toARDInputs converts decoded inputs to the value shapes Puccini's readers expect.
// toARDInputs converts input values for Puccini's parser, as data (asData).
func toARDInputs(inputs map[string]any) map[string]ard.Value {
	if inputs == nil {
		return nil
	}
	converted := make(map[string]ard.Value, len(inputs))
	for name, value := range inputs {
		converted[name] = asData(toARD(value))
	}
	return converted
}

func toARD(value any) ard.Value {
	switch v := value.(type) {
	case map[string]any:
		m := make(ard.Map, len(v))
		for key, item := range v {
			m[key] = toARD(item)
		}
		return m
	case []any:
		l := make(ard.List, len(v))
		for i, item := range v {
			l[i] = toARD(item)
		}
		return l
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case int:
		return int64(v)
	}
	return value
}

// String identifies the compiled package in logs.
func (c *Compiled) String() string {
	return fmt.Sprintf("%s (%s)", c.Package.Entry, c.Digest)
}

// withPackage returns the compiled package bound to pkg, a package of the same digest:
// a cache hit must render from the package the caller holds open, not from the one the
// Clout was first compiled from, which may have been closed (its files removed) since.
func (c *Compiled) withPackage(pkg *Package) *Compiled {
	if c.Package == pkg {
		return c
	}
	bound := *c
	bound.Package = pkg
	return &bound
}
