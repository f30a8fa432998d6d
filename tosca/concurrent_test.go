package tosca

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	cloutpkg "github.com/tliron/puccini/clout"
)

// TestConcurrentCompiles compiles the examples from several goroutines at once, through
// separate Compilers and a shared one, and checks every result against the same compile
// done alone: parses take turns process-wide (pucciniLock), and whatever happens beside a
// compile must not change what it produces. With -race it also catches unsynchronized
// access.
func TestConcurrentCompiles(t *testing.T) {
	dirs := []string{"../examples/hello-world", "../examples/network-service", "../examples/vendor-profile"}
	var packages []*Package
	for _, dir := range dirs {
		pkg, err := Open(dir, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		packages = append(packages, pkg)
	}
	inputsOf := func(pkg *Package, g int) map[string]any {
		if pkg.Entry == "service.yaml" {
			return map[string]any{"message": fmt.Sprintf("hello %d", g)}
		}
		return map[string]any{}
	}
	serial := func(pkg *Package, g int) any {
		compiled, err := NewCompiler(1).Compile(context.Background(), pkg, inputsOf(pkg, g))
		if err != nil {
			t.Fatalf("%s alone: %v", pkg.Entry, err)
		}
		return NormalizeClout(compiled.Clout)
	}
	const goroutines = 6
	want := map[string]any{}
	for g := range goroutines {
		for _, pkg := range packages {
			want[fmt.Sprint(pkg.Entry, g)] = serial(pkg, g)
		}
	}

	shared := NewCompiler(64)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := NewCompiler(4)
			for i, pkg := range packages {
				compiler := own
				if (g+i)%2 == 0 {
					compiler = shared
				}
				compiled, err := compiler.Compile(context.Background(), pkg, inputsOf(pkg, g))
				if err != nil {
					errs <- fmt.Errorf("%s: %w", pkg.Entry, err)
					continue
				}
				if compiled.Package != pkg {
					errs <- fmt.Errorf("%s: compiled for another package", pkg.Entry)
				}
				if diff := cmp.Diff(want[fmt.Sprint(pkg.Entry, g)], NormalizeClout(compiled.Clout)); diff != "" {
					errs <- fmt.Errorf("%s (goroutine %d) differs from the same compile done alone (-alone +concurrent):\n%s", pkg.Entry, g, diff)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Compiles of different keys run at once (in worker processes they need not wait for one
// another); concurrent compiles of one key run once.
func TestCompilesOfOtherKeysOverlap(t *testing.T) {
	pkg, err := Open("../examples/hello-world", DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	c := NewCompiler(16)
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	var runs atomic.Int32
	c.Run = func(ctx context.Context, pkg *Package, inputs map[string]any, opts CompileOptions) (*cloutpkg.Clout, error) {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return c.CompileClout(ctx, pkg, inputs, opts)
	}
	var wg sync.WaitGroup
	for _, inputs := range []map[string]any{{"replicas": 1}, {"replicas": 2}, {"replicas": 2}} {
		wg.Go(func() {
			if _, err := c.Compile(context.Background(), pkg, inputs); err != nil {
				t.Error(err)
			}
		})
	}
	for range 2 {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the compiles of two keys did not run at once")
		}
	}
	close(release)
	wg.Wait()
	if n := runs.Load(); n != 2 {
		t.Errorf("%d compiles for 2 keys", n)
	}
}
