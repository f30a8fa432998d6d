package render

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"calaf.io/calaf/tosca"
)

// TestConcurrentRenders renders one compiled package from several goroutines at once, for
// different Services and live attributes, sharing the compiled Clout: every render works on
// its own copy, and gives exactly what the same render done alone gives (so a regression
// shows without -race; with it, unsynchronized access shows too).
func TestConcurrentRenders(t *testing.T) {
	pkg, err := tosca.Open("../examples/network-service", tosca.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := tosca.NewCompiler(1).Compile(context.Background(), pkg, nil)
	if err != nil {
		t.Fatal(err)
	}
	optionsOf := func(g int) Options {
		return Options{Service: fmt.Sprintf("s%d", g%4), Namespace: "ns",
			Attributes: map[string]map[string]any{"n2": {"cluster_ip": fmt.Sprintf("10.96.0.%d", g)}}}
	}
	alone := map[int]string{}
	for g := range 8 {
		result, err := NewRenderer(1).Render(context.Background(), compiled, optionsOf(g))
		if err != nil {
			t.Fatal(err)
		}
		alone[g] = fingerprintResult(t, result)
	}
	renderer := NewRenderer(16)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			service := fmt.Sprintf("s%d", g%4)
			ip := fmt.Sprintf("10.96.0.%d", g)
			result, err := renderer.Render(context.Background(), compiled, optionsOf(g))
			if err != nil {
				errs <- err
				return
			}
			if fingerprintResult(t, result) != alone[g] {
				errs <- fmt.Errorf("render %d differs from the same render done alone", g)
			}
			if got := result.Outputs["n2_address"]; got != ip+":38412" {
				errs <- fmt.Errorf("render %d: n2_address %v", g, got)
			}
			if name := result.Objects[0].GetName(); name[:len(service)] != service {
				errs <- fmt.Errorf("render %d: object %s", g, name)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// fingerprintResult is the JSON of a render's objects and outputs.
func fingerprintResult(t *testing.T, result *Result) string {
	data, err := json.Marshal(map[string]any{"objects": result.Objects, "outputs": result.Outputs})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
