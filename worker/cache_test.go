package worker

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"calaf.io/calaf/render"
	"calaf.io/calaf/tosca"
)

// A render cache with ResultCodec answers a hit with a result equal to the render's — its
// objects gathered from its nodes again, the same objects — and of its own: changing one
// hit changes neither the cache nor the next hit. An entry that does not decode is a miss.
func TestRendererKeepsResultsEncoded(t *testing.T) {
	ctx := context.Background()
	compiled, err := tosca.NewCompiler(1).Compile(ctx, openExample(t, "network-service"), nil)
	if err != nil {
		t.Fatal(err)
	}
	renders := 0
	renderer := render.NewRenderer(8)
	renderer.Codec = ResultCodec{}
	renderer.OnRender = func(_ time.Duration, _ error) { renders++ }
	opts := render.Options{Service: "demo", Namespace: "ns"}

	first, err := renderer.Render(ctx, compiled, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ResultCodec{}.Decode(mustEncode(t, first))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(want, first) {
		t.Fatalf("a decoded result differs from the render's")
	}
	hit, err := renderer.Render(ctx, compiled, opts)
	if err != nil || renders != 1 {
		t.Fatalf("second render: %v, %d renders (want a hit)", err, renders)
	}
	if !reflect.DeepEqual(hit, first) {
		t.Errorf("the hit differs from the render")
	}
	if len(hit.Objects) == 0 || hit.Objects[0] != hit.Nodes[firstNodeWithObjects(hit)].Objects[0] {
		t.Errorf("the hit's objects are not its nodes' objects")
	}
	hit.Objects[0].SetName("changed")
	again, ok := renderer.Cached(compiled.Key, opts)
	if !ok || again.Objects[0].GetName() == "changed" {
		t.Errorf("a change to a hit reached the cache (hit: %v)", ok)
	}

	renderer.Codec = brokenCodec{}
	if _, err := renderer.Render(ctx, compiled, opts); err != nil || renders != 2 {
		t.Errorf("an entry that does not decode: %v, %d renders (want a render again)", err, renders)
	}
}

func mustEncode(t *testing.T, result *render.Result) []byte {
	t.Helper()
	data, err := ResultCodec{}.Encode(result)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func firstNodeWithObjects(result *render.Result) int {
	for i, node := range result.Nodes {
		if len(node.Objects) > 0 {
			return i
		}
	}
	return -1
}

// brokenCodec decodes nothing.
type brokenCodec struct{ ResultCodec }

func (brokenCodec) Decode([]byte) (*render.Result, error) {
	return nil, errors.New("broken entry")
}
