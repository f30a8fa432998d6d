package tosca

import (
	contextpkg "context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/go-logr/logr"
	commonjs "github.com/tliron/commonjs-goja"
	"github.com/tliron/commonjs-goja/api"
	"github.com/tliron/exturl"
	"github.com/tliron/go-transcribe"
	"github.com/tliron/kutil/problems"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"

	"calaf.io/calaf/internal/lru"
)

// DefaultScriptTimeout bounds one sandboxed scriptlet run.
const DefaultScriptTimeout = 10 * time.Second

// maxCallStack turns runaway recursion into a JavaScript RangeError instead of a Go stack
// overflow, which would end the process.
const maxCallStack = 2048

// abandonGrace is how long Exec waits, past the deadline, for a scriptlet stuck in Go code
// (where an interrupt does not reach) before it abandons the scriptlet's goroutine.
const abandonGrace = 2 * time.Second

// maxConsoleLines bounds what scriptlets may log through console.* in one run.
const maxConsoleLines = 200

// ErrScriptTimeout is returned when a scriptlet runs past its deadline.
var ErrScriptTimeout = errors.New("scriptlet deadline exceeded")

// Sandbox runs the scriptlets embedded in a Clout with no access to the host: no process
// execution, no files, no network, no
// goroutines, and a deadline. Only what Globals hands in reaches beyond the Clout. Puccini's own environment exposes all of these ("os",
// "env.loadString", "transcribe.output", "clout.load", "util.go"); the sandbox builds the
// JavaScript environment itself from safe parts instead.
type Sandbox struct {
	// Timeout bounds each Exec; zero means DefaultScriptTimeout.
	Timeout time.Duration
	// Globals are extra global objects for the scriptlets (Go values, exposed with
	// dromedary-case member names), e.g. the "calaf" API of the renderer.
	Globals map[string]any
	// Log receives console output and scriptlet log messages.
	Log logr.Logger
	// Programs, when set, shares compiled scriptlets across runs.
	Programs *Programs
}

// recyclePrograms is how many runs share one program cache before it is dropped, which
// bounds it when many package versions come and go.
const recyclePrograms = 10000

// Programs caches compiled JavaScript across sandbox runs: a scriptlet is parsed and
// compiled once per content, not at every run. Entries are keyed by the scriptlet's name
// and a hash of its source, so two packages with different scriptlets of the same name
// never share code. Safe for concurrent use.
type Programs struct {
	lock sync.Mutex
	root *commonjs.Environment
	uses int
	// sums are the hashes of scriptlet sources, by source: every run of a package
	// requires the same scriptlets (tens of KiB each render). Dropped with the programs.
	sums *lru.Cache[string]
}

// NewPrograms returns an empty program cache.
func NewPrograms() *Programs {
	return &Programs{sums: lru.New[string](4096)}
}

// sourceSum returns the short hash that keys a scriptlet's compiled program, once per
// source when p is set.
func (p *Programs) sourceSum(source string) string {
	if p == nil {
		return sourceSum(source)
	}
	p.lock.Lock()
	sums := p.sums
	p.lock.Unlock()
	if sums == nil {
		return sourceSum(source)
	}
	if sum, ok := sums.Get(source); ok {
		return sum
	}
	sum := sourceSum(source)
	sums.Put(source, sum)
	return sum
}

func sourceSum(source string) string {
	sum := sha256.Sum256([]byte(source))
	return hex.EncodeToString(sum[:6])
}

// environment returns a fresh JavaScript environment sharing the cache's compiled programs.
func (p *Programs) environment(urlContext *exturl.Context) *commonjs.Environment {
	p.lock.Lock()
	defer p.lock.Unlock()
	if p.root == nil || p.uses >= recyclePrograms {
		p.root, p.uses = commonjs.NewEnvironment(urlContext), 0
		p.sums = lru.New[string](4096) // the sources they hold go with the programs
	}
	p.uses++
	env := p.root.NewChild()
	env.URLContext = urlContext
	return env
}

// ScriptError is a JavaScript failure inside the sandbox: an exception, a deadline, a
// runaway recursion. It is a user error of the package.
type ScriptError struct {
	Scriptlet string
	Message   string
	Timeout   bool
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("scriptlet %s: %s", e.Scriptlet, e.Message)
}

// Exec loads scriptlet (by its Clout name, e.g. "tosca.resolve") in a fresh sandboxed
// environment and, when function is not empty, calls that export with arguments. Problems
// that scriptlets report go to probs. The result is exported to plain Go values.
func (s *Sandbox) Exec(ctx contextpkg.Context, clout *cloutpkg.Clout, probs *problems.Problems, scriptlet, function string, arguments ...any) (result any, err error) {
	if probs == nil {
		probs = problems.NewProblems(nil)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultScriptTimeout
	}
	urlContext := exturl.NewContext()
	defer urlContext.Release()
	env := s.environment(clout, probs, scriptlet, urlContext, timeout)
	stop := &interrupter{env: env}
	timer := time.AfterFunc(timeout, func() { stop.interrupt(ErrScriptTimeout) })
	defer timer.Stop()
	done := s.start(env, scriptlet, function, arguments)
	return s.wait(ctx, done, stop, scriptlet, timeout)
}

// environment makes the sandboxed JavaScript environment of one run: the package's
// scriptlets resolved from the Clout, and only the extensions a scriptlet may use (no
// os, no file system, no network).
func (s *Sandbox) environment(clout *cloutpkg.Clout, probs *problems.Problems, scriptlet string, urlContext *exturl.Context, timeout time.Duration) *commonjs.Environment {
	var env *commonjs.Environment
	if s.Programs != nil {
		env = s.Programs.environment(urlContext)
	} else {
		env = commonjs.NewEnvironment(urlContext)
	}
	env.Runtime.SetMaxCallStackSize(maxCallStack)
	env.Timeout = timeout
	// A module's compiled program takes the extensions as parameters, in order: programs
	// are shared only between runs with the same globals.
	globals := slices.Sorted(maps.Keys(s.Globals))
	globalsSum := sha256.Sum256([]byte(strings.Join(globals, ",")))
	globalsTag := hex.EncodeToString(globalsSum[:4])
	env.CreateResolver = func(_ exturl.URL, _ *commonjs.Context) commonjs.ResolveFunc {
		return func(_ contextpkg.Context, id string, _ bool) (exturl.URL, error) {
			source, err := js.GetScriptlet(id, clout)
			if err != nil {
				return nil, err
			}
			url := urlContext.NewInternalURL(id + "@" + s.Programs.sourceSum(source) + "." + globalsTag)
			url.SetContent(source)
			return url, nil
		}
	}
	console := &sandboxConsole{log: s.Log.WithName("js")}
	puccini := js.NewEnvironment(scriptlet, nil, nil, true, "yaml", true, false, false, "", urlContext)
	env.Extensions = []commonjs.Extension{
		{Name: "console", Create: once(func(*commonjs.Context) any { return console })},
		{Name: "env", Create: once(func(*commonjs.Context) any {
			return &sandboxEnv{Arguments: map[string]string{"history": "false"}, Log: console}
		})},
		{Name: "util", Create: once(func(*commonjs.Context) any { return sandboxUtil{Util: api.NewUtil(nil)} })},
		{Name: "ard", Create: once(func(*commonjs.Context) any { return sandboxARD{} })},
		{Name: "transcribe", Create: once(func(*commonjs.Context) any { return sandboxTranscribe{} })},
		{Name: "clout", Create: once(func(jsContext *commonjs.Context) any {
			return &sandboxClout{CloutAPI: puccini.NewCloutAPI(clout, jsContext), runtime: jsContext.Environment.Runtime, probs: probs}
		})},
		{Name: "problems", Create: once(func(*commonjs.Context) any { return probs })},
	}
	for _, name := range globals {
		global := s.Globals[name]
		env.Extensions = append(env.Extensions, commonjs.Extension{Name: name, Create: once(func(*commonjs.Context) any { return global })})
	}
	return env
}

// once makes an extension's JavaScript value once per run, and hands every module of the
// run that same value: wrapping the Go value anew for each module (its methods looked up
// by reflection) was a tenth of a render. None of them keeps state of its own in
// JavaScript: each wraps one Go value, which every module shared already. The Go value is
// wrapped when a scriptlet first uses it (lazyExtension): most runs use few of them.
func once(create commonjs.CreateExtensionFunc) commonjs.CreateExtensionFunc {
	var value goja.Value
	return func(jsContext *commonjs.Context) any {
		if value == nil {
			runtime := jsContext.Environment.Runtime
			value = runtime.NewDynamicObject(&lazyExtension{wrap: func() *goja.Object {
				return runtime.ToValue(create(jsContext)).ToObject(runtime)
			}})
		}
		return value
	}
}

// lazyExtension is an extension's JavaScript object that wraps its Go value when one of
// its properties is first read, written, listed or deleted, and forwards to it.
type lazyExtension struct {
	wrap   func() *goja.Object
	object *goja.Object
}

func (e *lazyExtension) target() *goja.Object {
	if e.object == nil {
		e.object = e.wrap()
	}
	return e.object
}

func (e *lazyExtension) Get(key string) goja.Value { return e.target().Get(key) }
func (e *lazyExtension) Set(key string, value goja.Value) bool {
	return e.target().Set(key, value) == nil
}
func (e *lazyExtension) Has(key string) bool    { return e.target().Get(key) != nil }
func (e *lazyExtension) Delete(key string) bool { return e.target().Delete(key) == nil }
func (e *lazyExtension) Keys() []string         { return e.target().Keys() }

// interrupter stops a run once, remembering whether it was for the deadline.
type interrupter struct {
	env      *commonjs.Environment
	once     sync.Once
	timedOut atomic.Bool
}

func (i *interrupter) interrupt(reason error) {
	i.once.Do(func() {
		i.timedOut.Store(errors.Is(reason, ErrScriptTimeout))
		i.env.Runtime.Interrupt(reason)
	})
}

// scriptOutcome is what a run of a scriptlet ended with.
type scriptOutcome struct {
	result any
	err    error
}

// start runs the scriptlet (and its function) on its own goroutine, so that Exec returns
// even if it is stuck in Go code, where an interrupt does not reach: it is then abandoned.
// A panic becomes an internal error of the scriptlet.
func (s *Sandbox) start(env *commonjs.Environment, scriptlet, function string, arguments []any) <-chan scriptOutcome {
	done := make(chan scriptOutcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				s.Log.Error(nil, "scriptlet panicked", "scriptlet", scriptlet, "panic", r, "stack", string(debug.Stack()))
				done <- scriptOutcome{err: &ScriptError{Scriptlet: scriptlet, Message: fmt.Sprintf("internal error: %v", r)}}
			}
		}()
		var result any
		exports, err := env.Require(scriptlet, false, nil)
		if err == nil && function != "" {
			var value any
			value, err = env.GetAndCall(exports, function, nil, arguments...)
			if err == nil {
				result = exportValue(value)
			}
		}
		done <- scriptOutcome{result: result, err: err}
	}()
	return done
}

// wait returns the run's result, or why it has none: its deadline, the context's end, or
// a run abandoned past its deadline.
func (s *Sandbox) wait(ctx contextpkg.Context, done <-chan scriptOutcome, stop *interrupter, scriptlet string, timeout time.Duration) (any, error) {
	abandon := time.NewTimer(timeout + abandonGrace)
	defer abandon.Stop()
	var o scriptOutcome
	select {
	case o = <-done:
	case <-ctx.Done():
		stop.interrupt(ctx.Err())
		select {
		case o = <-done:
		case <-time.After(abandonGrace):
			s.Log.Error(nil, "scriptlet abandoned after cancellation", "scriptlet", scriptlet)
			return nil, ctx.Err()
		}
	case <-abandon.C:
		s.Log.Error(nil, "scriptlet abandoned: stuck outside JavaScript past its deadline", "scriptlet", scriptlet)
		return nil, &ScriptError{Scriptlet: scriptlet, Message: fmt.Sprintf("did not finish within %s", timeout), Timeout: true}
	}
	if o.err == nil {
		return o.result, nil
	}
	if stop.timedOut.Load() {
		return nil, &ScriptError{Scriptlet: scriptlet, Message: fmt.Sprintf("did not finish within %s", timeout), Timeout: true}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var script *ScriptError
	if errors.As(o.err, &script) {
		return nil, script
	}
	return nil, &ScriptError{Scriptlet: scriptlet, Message: scriptMessage(o.err)}
}

// exportValue turns goja values into plain Go values.
func exportValue(value any) any {
	if v, ok := value.(goja.Value); ok {
		if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
			return nil
		}
		return v.Export()
	}
	return value
}

// scriptMessage extracts a readable message from goja and commonjs errors, dropping the
// Go type noise but keeping the JavaScript location.
func scriptMessage(err error) string {
	var exception *goja.Exception
	if errors.As(err, &exception) {
		msg := exception.Value().String()
		if stack := exception.String(); stack != "" {
			if _, at, ok := strings.Cut(stack, "\n\tat "); ok {
				at, _, _ = strings.Cut(at, "\n")
				msg += " (at " + at + ")"
			}
		}
		return msg
	}
	var interrupted *goja.InterruptedError
	if errors.As(err, &interrupted) {
		return fmt.Sprintf("interrupted: %v", interrupted.Value())
	}
	var stack *goja.StackOverflowError
	if errors.As(err, &stack) {
		return "maximum call stack size exceeded (runaway recursion?)"
	}
	return err.Error()
}

// sandboxClout is Puccini's clout API without the members that reach the host: "load"
// reads any URL and "callAll" runs scriptlets in Puccini's unsandboxed environment; and
// with Calaf's coerceValues.
type sandboxClout struct {
	*js.CloutAPI
	runtime  *goja.Runtime
	probs    *problems.Problems
	coercing bool
	// evaluating is the chain of values being evaluated: a value that reads itself,
	// through others or not, is refused as a loop.
	evaluating evaluating
}

// CoerceValues evaluates every value of the topology in place, as Puccini's
// traversal.coerce does, reporting each value that fails as a problem (valueCoercer). A
// TOSCA function that calls it while it runs gets an error instead of a recursion.
func (c *sandboxClout) CoerceValues() error {
	if c.coercing {
		return errors.New("clout.coerceValues is already running")
	}
	c.coercing = true
	defer func() { c.coercing = false }()
	coercer := valueCoercer{api: c.CloutAPI, runtime: c.runtime, probs: c.probs, evaluate: c.evaluate, evaluating: &c.evaluating}
	return coercer.coerce()
}

// Load is refused in the sandbox.
func (sandboxClout) Load(any, any, any) error {
	return errors.New("clout.load is not available in Calaf scriptlets")
}

// CallAll is refused in the sandbox.
func (sandboxClout) CallAll(any) error {
	return errors.New("clout.callAll is not available in Calaf scriptlets")
}

// NewCoercible, NewValidators, Coerce, Unwrap and Call walk their values in Go: they are
// checked first.
func (c *sandboxClout) NewCoercible(value goja.Value, site any, source any, target any) (js.Coercible, error) {
	if err := checkValue(value); err != nil {
		return nil, err
	}
	return c.CloutAPI.NewCoercible(value, site, source, target)
}

func (c *sandboxClout) NewValidators(value goja.Value, site any, source any, target any) (js.Validators, error) {
	if err := checkValue(value); err != nil {
		return nil, err
	}
	return c.CloutAPI.NewValidators(value, site, source, target)
}

func (c *sandboxClout) Coerce(value any) (any, error) {
	if err := checkValue(value); err != nil {
		return nil, err
	}
	return c.evaluate(value)
}

// evaluate coerces a value, refusing one that is being evaluated already (a loop).
func (c *sandboxClout) evaluate(value any) (any, error) {
	leave, loop := c.evaluating.enter(value)
	if loop != nil {
		return nil, loop
	}
	defer leave()
	return c.CloutAPI.Coerce(value)
}

func (c *sandboxClout) Unwrap(value any) (any, error) {
	if err := checkValue(value); err != nil {
		return nil, err
	}
	return c.CloutAPI.Unwrap(value), nil
}

func (c *sandboxClout) Call(scriptletName string, functionName string, arguments []any) (any, error) {
	if err := checkValues(arguments...); err != nil {
		return nil, err
	}
	return c.CloutAPI.Call(scriptletName, functionName, arguments)
}

// sandboxTranscribe formats values; Output, which writes files and stdout in Puccini, is a
// no-op so Puccini's own scriptlets (tosca.resolve, tosca.coerce) can run unchanged.
type sandboxTranscribe struct{}

// Output discards its value (Puccini's resolve and coerce end by printing the Clout).
func (sandboxTranscribe) Output(any, any, any) {}

// Stringify renders a value as yaml, json, xml, or the other formats of go-transcribe.
func (sandboxTranscribe) Stringify(value any, format string, indent string) (string, error) {
	if err := checkValue(value); err != nil {
		return "", err
	}
	return transcribe.NewTranscriber().SetFormat(format).SetIndent(indent).Stringify(value)
}

// sandboxEnv offers scriptlets their arguments and a logger, nothing of the process.
type sandboxEnv struct {
	Arguments map[string]string
	Log       *sandboxConsole
}

// sandboxConsole logs scriptlet output through logr, bounded in lines.
type sandboxConsole struct {
	log   logr.Logger
	lock  sync.Mutex
	lines int
}

func (c *sandboxConsole) write(level int, args ...any) {
	c.lock.Lock()
	defer c.lock.Unlock()
	if c.lines++; c.lines > maxConsoleLines {
		return
	}
	for i, arg := range args {
		if checkValue(arg) != nil {
			args[i] = "<" + errValueTooLarge.Error() + ">"
		}
	}
	c.log.V(level).Info(strings.TrimSpace(fmt.Sprintln(args...)))
}

func (c *sandboxConsole) Log(args ...any)   { c.write(0, args...) }
func (c *sandboxConsole) Info(args ...any)  { c.write(0, args...) }
func (c *sandboxConsole) Warn(args ...any)  { c.write(0, args...) }
func (c *sandboxConsole) Error(args ...any) { c.write(0, args...) }
func (c *sandboxConsole) Debug(args ...any) { c.write(1, args...) }
func (c *sandboxConsole) Trace(args ...any) { c.write(2, args...) }

// Debugf and its siblings serve Puccini's scriptlets, which log through env.log.
// Debugf takes the call as it is (no conversion of its arguments into Go) and formats
// nothing unless debug logging is on: Puccini's requirement resolution calls it for every
// candidate node template it passes over, which is every pair of templates.
func (c *sandboxConsole) Debugf(call goja.FunctionCall) goja.Value {
	if !c.log.V(1).Enabled() {
		return goja.Undefined()
	}
	args := make([]any, 0, len(call.Arguments))
	for _, arg := range call.Arguments[min(1, len(call.Arguments)):] {
		args = append(args, arg.Export())
	}
	c.write(1, fmt.Sprintf(call.Argument(0).String(), args...))
	return goja.Undefined()
}
func (c *sandboxConsole) Infof(format string, args ...any) { c.write(0, fmt.Sprintf(format, args...)) }
func (c *sandboxConsole) Warningf(format string, args ...any) {
	c.write(0, fmt.Sprintf(format, args...))
}
func (c *sandboxConsole) Errorf(format string, args ...any) {
	c.write(0, fmt.Sprintf(format, args...))
}
