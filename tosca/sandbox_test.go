package tosca

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	cloutpkg "github.com/tliron/puccini/clout"
	"github.com/tliron/puccini/clout/js"
)

// TestProgramsSharedAcrossGlobals runs one scriptlet in sandboxes that share compiled
// programs but not their globals: a module takes the globals as parameters of its compiled
// wrapper, so a program compiled with other globals would hand it the wrong ones.
func TestProgramsSharedAcrossGlobals(t *testing.T) {
	clout := cloutpkg.NewClout()
	clout.Metadata["puccini"] = map[string]any{"scriptlets": map[string]any{}}
	if err := js.SetScriptlet("test.read", "exports.read = function () { return typeof b === 'object' && b !== null ? b.name : 'b is ' + typeof b; };", clout); err != nil {
		t.Fatal(err)
	}
	programs := NewPrograms()
	many := map[string]any{"b": map[string]any{"name": "b of many"}}
	for i := range 9 {
		many[fmt.Sprintf("a%d", i)] = map[string]any{"name": fmt.Sprintf("a%d", i)}
	}
	runs := []struct {
		globals map[string]any
		want    string
	}{
		{many, "b of many"},
		{map[string]any{"b": map[string]any{"name": "b alone"}}, "b alone"},
		{map[string]any{"a0": map[string]any{"name": "a0"}, "b": map[string]any{"name": "b with a0"}}, "b with a0"},
		{many, "b of many"},
	}
	for i, run := range runs {
		sandbox := &Sandbox{Timeout: time.Minute, Log: logr.Discard(), Programs: programs, Globals: run.globals}
		got, err := sandbox.Exec(context.Background(), clout, nil, "test.read", "read")
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got != run.want {
			t.Errorf("run %d: the scriptlet read %q, want %q", i, got, run.want)
		}
	}
}

// TestExtensionsOncePerRun wants every module of a run handed the same global objects, made
// once per run (once), and a new run new ones.
func TestExtensionsOncePerRun(t *testing.T) {
	clout := cloutpkg.NewClout()
	clout.Metadata["puccini"] = map[string]any{"scriptlets": map[string]any{}}
	scriptlets := map[string]string{
		"test.other": "exports.globals = [clout, problems, util, calaf];",
		"test.same": `exports.same = function () {
  let other = require('test.other').globals;
  return [clout, problems, util, calaf].every(function (g, i) { return g === other[i]; });
};`,
	}
	for name, source := range scriptlets {
		if err := js.SetScriptlet(name, source, clout); err != nil {
			t.Fatal(err)
		}
	}
	sandbox := &Sandbox{Timeout: time.Minute, Log: logr.Discard(), Programs: NewPrograms(), Globals: map[string]any{"calaf": map[string]any{}}}
	for run := range 2 {
		same, err := sandbox.Exec(context.Background(), clout, nil, "test.same", "same")
		if err != nil {
			t.Fatal(err)
		}
		if same != true {
			t.Errorf("run %d: the modules of one run were handed different global objects", run)
		}
	}
}

// lazyGlobal is a global with a method and a field.
type lazyGlobal struct{ Greeting string }

func (g *lazyGlobal) Hello(name string) string { return g.Greeting + ", " + name }

// An extension's object is the Go value's, wrapped when a scriptlet first uses it: its
// methods and fields are read, listed, tested, written and deleted as before.
func TestExtensionsWrappedWhenUsed(t *testing.T) {
	clout := cloutpkg.NewClout()
	clout.Metadata["puccini"] = map[string]any{"scriptlets": map[string]any{}}
	source := `exports.use = function () {
  let seen = [];
  seen.push(calaf.hello('you'));
  seen.push(typeof calaf.hello, 'hello' in calaf, 'nothing' in calaf, Object.keys(calaf).indexOf('hello') >= 0);
  calaf.greeting = 'Hi';
  seen.push(calaf.hello('again'), util.sprintf('%d+%s', 1, 'x'), String(calaf).length > 0);
  return seen.join('|');
};`
	if err := js.SetScriptlet("test.use", source, clout); err != nil {
		t.Fatal(err)
	}
	global := &lazyGlobal{Greeting: "Hello"}
	sandbox := &Sandbox{Timeout: time.Minute, Log: logr.Discard(), Globals: map[string]any{"calaf": global}}
	got, err := sandbox.Exec(context.Background(), clout, nil, "test.use", "use")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Hello, you|function|true|false|true|Hi, again|1+x|true"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if global.Greeting != "Hi" {
		t.Errorf("the Go value's field is %q after the scriptlet wrote it, want Hi", global.Greeting)
	}
}
