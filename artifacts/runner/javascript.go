package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dop251/goja"

	"calaf.io/calaf/artifacts/protocol"
)

// maxReadBytes bounds calaf.readFile.
const maxReadBytes = 16 << 20

// maxCallStack bounds recursion in artifacts.
const maxCallStack = 2048

// runJavaScript runs the artifact as a CommonJS module with the calaf API, interrupting it
// at the deadline.
func (r *execution) runJavaScript(ctx context.Context) {
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStack)
	stop := context.AfterFunc(ctx, func() { vm.Interrupt(errTimeout) })
	defer stop()

	js := &jsAPI{r: r, vm: vm, ctx: ctx, modules: map[string]*goja.Object{}}
	if err := js.install(); err != nil {
		r.errKind, r.err = protocol.ErrorInvalid, err.Error()
		return
	}
	file := r.req.Artifact.File
	if file == "" {
		file = "artifact.js"
	}
	_, err := js.load(file, r.req.Source)
	if err == nil && ctx.Err() == nil {
		return
	}
	var interrupted *goja.InterruptedError
	switch {
	case errors.As(err, &interrupted) || ctx.Err() != nil:
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.errKind, r.err = protocol.ErrorTimeout, r.timeoutMessage()
		} else {
			r.errKind, r.err = protocol.ErrorException, "stopped: the runner was terminated"
		}
	default:
		r.errKind, r.err = protocol.ErrorException, exceptionMessage(err)
	}
}

// exceptionMessage words a JavaScript failure: the thrown value and where it was thrown.
func exceptionMessage(err error) string {
	var overflow *goja.StackOverflowError
	if errors.As(err, &overflow) {
		return "RangeError: maximum call stack size exceeded" + position(overflow.Stack())
	}
	var ex *goja.Exception
	if !errors.As(err, &ex) {
		return err.Error()
	}
	message := ""
	if v := ex.Value(); v != nil && !goja.IsUndefined(v) && !goja.IsNull(v) {
		if obj, ok := v.(*goja.Object); ok {
			if m := obj.Get("message"); m != nil && !goja.IsUndefined(m) {
				name := "Error"
				if n := obj.Get("name"); n != nil && !goja.IsUndefined(n) {
					name = n.String()
				}
				message = name + ": " + m.String()
			}
		}
		if message == "" {
			message = v.String()
		}
	}
	if message == "" {
		message = ex.Error()
	}
	return message + position(ex.Stack())
}

// position names the innermost frame of the artifact's own code.
func position(stack []goja.StackFrame) string {
	for _, frame := range stack {
		if pos := frame.Position(); pos.Line > 0 && frame.SrcName() != "<native>" {
			return fmt.Sprintf(" (at %s:%d:%d)", frame.SrcName(), pos.Line, pos.Column)
		}
	}
	return ""
}

// jsAPI is the calaf global and the module system of one run.
type jsAPI struct {
	r       *execution
	vm      *goja.Runtime
	ctx     context.Context
	modules map[string]*goja.Object // package path → module.exports
}

func (j *jsAPI) install() error {
	vm, req := j.vm, j.r.req
	calaf := vm.NewObject()
	set := func(name string, value any) {
		if err := calaf.Set(name, value); err != nil {
			panic(err)
		}
	}
	iface, op, _ := strings.Cut(req.Operation, ".")
	set("inputs", plainValue(vm, req.Inputs))
	set("node", plainValue(vm, map[string]any{
		"name": req.Node.Name, "type": req.Node.Type,
		"properties": orEmpty(req.Node.Properties), "attributes": orEmpty(req.Node.Attributes),
	}))
	set("pod", plainValue(vm, req.Pod))
	set("service", plainValue(vm, req.Service))
	set("operation", plainValue(vm, map[string]any{"name": req.Operation, "interface": iface, "operation": op}))
	set("artifact", plainValue(vm, req.Artifact))
	set("workDir", j.r.work)
	files := make([]string, 0, len(req.Files))
	for name := range req.Files {
		files = append(files, name)
	}
	sort.Strings(files)
	set("files", plainValue(vm, files))
	set("file", j.file)
	set("exec", j.exec)
	set("readFile", j.readFile)
	set("writeFile", j.writeFile)
	set("appendFile", j.appendFile)
	set("exists", j.exists)
	set("mkdir", j.mkdir)
	set("remove", j.remove)
	set("log", j.log)
	set("setAttribute", j.setValue("attribute"))
	set("setOutput", j.setValue("output"))
	set("sleep", j.sleep)
	set("remaining", j.remaining)
	set("getenv", func(name string) string { return os.Getenv(name) })
	if err := vm.Set("calaf", calaf); err != nil {
		return err
	}
	console := vm.NewObject()
	for _, name := range []string{"log", "info", "warn", "error", "debug"} {
		_ = console.Set(name, j.log)
	}
	return vm.Set("console", console)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// plainValue turns Go data into plain JavaScript values (through JSON, so that objects
// are ordinary, mutable JavaScript objects).
func plainValue(vm *goja.Runtime, value any) goja.Value {
	data, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	var plain any
	_ = json.Unmarshal(data, &plain)
	if plain == nil {
		if _, isMap := value.(map[string]any); isMap {
			return vm.NewObject()
		}
	}
	return vm.ToValue(toJSValues(vm, plain))
}

func toJSValues(vm *goja.Runtime, value any) any {
	switch v := value.(type) {
	case map[string]any:
		obj := vm.NewObject()
		keys := make([]string, 0, len(v))
		for key := range v {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			_ = obj.Set(key, toJSValues(vm, v[key]))
		}
		return obj
	case []any:
		items := make([]any, len(v))
		for i, item := range v {
			items[i] = toJSValues(vm, item)
		}
		return vm.NewArray(items...)
	}
	return value
}

// throw raises a JavaScript Error from Go.
func (j *jsAPI) throw(format string, args ...any) {
	panic(j.vm.NewGoError(fmt.Errorf(format, args...)))
}

// load runs a module (the artifact, or a companion file) and returns its exports.
func (j *jsAPI) load(file, source string) (*goja.Object, error) {
	if exports, ok := j.modules[file]; ok {
		return exports, nil
	}
	vm := j.vm
	module := vm.NewObject()
	exports := vm.NewObject()
	_ = module.Set("exports", exports)
	j.modules[file] = exports
	if strings.HasSuffix(file, ".json") {
		var value any
		if err := json.Unmarshal([]byte(source), &value); err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		obj, _ := toJSValues(vm, value).(*goja.Object)
		if obj == nil {
			obj = vm.NewObject()
		}
		j.modules[file] = obj
		return obj, nil
	}
	program, err := goja.Compile(file, "(function (exports, require, module, __filename, __dirname) {"+source+"\n})", false)
	if err != nil {
		return nil, fmt.Errorf("syntax error: %v", err)
	}
	wrapper, err := vm.RunProgram(program)
	if err != nil {
		return nil, err
	}
	fn, ok := goja.AssertFunction(wrapper)
	if !ok {
		return nil, fmt.Errorf("%s: not a module", file)
	}
	require := func(name string) goja.Value {
		target := resolveModule(file, name)
		content, ok := j.r.req.Files[target]
		if !ok && target == j.r.req.Artifact.File {
			content, ok = j.r.req.Source, true
		}
		if !ok {
			j.throw("require(%q): %s is not among the operation's dependencies", name, target)
		}
		exported, err := j.load(target, content)
		if err != nil {
			panic(err)
		}
		return exported
	}
	if _, err := fn(goja.Undefined(), exports, vm.ToValue(require), module, vm.ToValue(file), vm.ToValue(path.Dir(file))); err != nil {
		return nil, err
	}
	exported, _ := module.Get("exports").(*goja.Object)
	if exported == nil {
		exported = vm.NewObject()
	}
	j.modules[file] = exported
	return exported, nil
}

// resolveModule resolves a require() name against the requiring module's package path.
func resolveModule(from, name string) string {
	target := name
	if strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") {
		target = path.Join(path.Dir(from), name)
	}
	target = strings.TrimPrefix(path.Clean("/"+target), "/")
	if path.Ext(target) == "" {
		target += ".js"
	}
	return target
}

// file returns a companion file's content by package path.
func (j *jsAPI) file(name string) string {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	content, ok := j.r.req.Files[name]
	if !ok {
		j.throw("file %q is not among the operation's dependencies", name)
	}
	return content
}

// exec runs a command: an argv array, or a string run with /bin/sh -c.
func (j *jsAPI) exec(call goja.FunctionCall) goja.Value {
	var argv []string
	switch v := call.Argument(0).Export().(type) {
	case string:
		argv = []string{"/bin/sh", "-c", v}
	case []any:
		for _, item := range v {
			argv = append(argv, fmt.Sprint(item))
		}
	default:
		j.throw("calaf.exec: the command must be an array of strings or a string")
	}
	if len(argv) == 0 || argv[0] == "" {
		j.throw("calaf.exec: empty command")
	}
	c := command{Argv: argv}
	options, _ := call.Argument(1).Export().(map[string]any)
	check := false
	for key, value := range options {
		switch key {
		case "stdin":
			c.Stdin = fmt.Sprint(value)
		case "dir":
			c.Dir = fmt.Sprint(value)
		case "timeout":
			c.Timeout = time.Duration(toFloat(value) * float64(time.Millisecond))
		case "env":
			env, _ := value.(map[string]any)
			c.Env = map[string]string{}
			for k, v := range env {
				c.Env[k] = fmt.Sprint(v)
			}
		case "check":
			check, _ = value.(bool)
		default:
			j.throw("calaf.exec: unknown option %q (stdin, dir, timeout, env, check)", key)
		}
	}
	res := j.r.runCommand(j.ctx, c, nil, nil)
	if check && (res.ExitCode != 0 || res.TimedOut) {
		j.throw("command %s exited with code %d: %s", argv[0], res.ExitCode, protocol.Tail(strings.TrimSpace(res.Stderr), 512))
	}
	return plainValue(j.vm, res)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	case int:
		return float64(n)
	}
	return 0
}

// localPath resolves a path of the container's file system; relative paths are relative
// to the work directory (where the companion files are).
func (j *jsAPI) localPath(name string) string {
	if name == "" {
		j.throw("empty path")
	}
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(j.r.work, name)
}

func (j *jsAPI) readFile(name string) string {
	f, err := os.Open(j.localPath(name))
	if err != nil {
		j.throw("%v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		j.throw("%v", err)
	}
	if len(data) > maxReadBytes {
		j.throw("%s is larger than %d bytes", name, maxReadBytes)
	}
	return string(data)
}

func (j *jsAPI) writeFile(call goja.FunctionCall) goja.Value {
	j.write(call, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	return goja.Undefined()
}

func (j *jsAPI) appendFile(call goja.FunctionCall) goja.Value {
	j.write(call, os.O_CREATE|os.O_APPEND|os.O_WRONLY)
	return goja.Undefined()
}

func (j *jsAPI) write(call goja.FunctionCall, flags int) {
	name := j.localPath(call.Argument(0).String())
	mode := os.FileMode(0o644)
	if m := call.Argument(2); !goja.IsUndefined(m) {
		mode = os.FileMode(m.ToInteger())
	}
	f, err := os.OpenFile(name, flags, mode)
	if err != nil {
		j.throw("%v", err)
	}
	_, err = io.WriteString(f, call.Argument(1).String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		j.throw("%v", err)
	}
}

func (j *jsAPI) exists(name string) bool {
	_, err := os.Stat(j.localPath(name))
	return err == nil
}

func (j *jsAPI) mkdir(name string) {
	if err := os.MkdirAll(j.localPath(name), 0o755); err != nil {
		j.throw("%v", err)
	}
}

func (j *jsAPI) remove(name string) {
	if err := os.RemoveAll(j.localPath(name)); err != nil {
		j.throw("%v", err)
	}
}

func (j *jsAPI) log(call goja.FunctionCall) goja.Value {
	parts := make([]string, len(call.Arguments))
	for i, arg := range call.Arguments {
		if s, ok := arg.Export().(string); ok {
			parts[i] = s
			continue
		}
		if data, err := json.Marshal(arg.Export()); err == nil && !goja.IsUndefined(arg) {
			parts[i] = string(data)
		} else {
			parts[i] = arg.String()
		}
	}
	j.r.logs.add(strings.Join(parts, " "))
	return goja.Undefined()
}

func (j *jsAPI) setValue(kind string) func(string, goja.Value) {
	return func(name string, value goja.Value) {
		if err := j.r.values.set(kind, name, value.Export()); err != nil {
			j.throw("%v", err)
		}
	}
}

// sleep waits, up to the deadline.
func (j *jsAPI) sleep(ms float64) {
	timer := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-j.ctx.Done():
	}
}

// remaining returns the milliseconds left before the deadline.
func (j *jsAPI) remaining() int64 {
	deadline, ok := j.ctx.Deadline()
	if !ok {
		return -1
	}
	return time.Until(deadline).Milliseconds()
}
