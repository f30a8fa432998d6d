package tosca

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentCompiles compiles the examples from several goroutines at once, through
// separate Compilers and a shared one: Puccini v0.22.7 races when two parses run at once,
// so compiles must be serialized process-wide. Run with -race to see a regression.
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
	shared := NewCompiler(64)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := NewCompiler(4)
			for i, pkg := range packages {
				compiler := own
				if (g+i)%2 == 0 {
					compiler = shared
				}
				inputs := map[string]any{}
				if pkg.Entry == "service.yaml" {
					inputs["message"] = fmt.Sprintf("hello %d", g)
				}
				compiled, err := compiler.Compile(context.Background(), pkg, inputs)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", pkg.Entry, err)
					continue
				}
				if compiled.Package != pkg || len(compiled.Clout.Vertexes) == 0 {
					errs <- fmt.Errorf("%s: unexpected compile result", pkg.Entry)
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
