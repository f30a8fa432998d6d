package worker

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/tosca"
)

// TestCodecRoundTrip checks that values come back with their exact Go types: int stays
// int, int64 int64, float64 float64, nil maps nil, and structs field by field.
func TestCodecRoundTrip(t *testing.T) {
	type inner struct {
		Name  string
		Count int64
	}
	type outer struct {
		A      any
		Items  []inner
		Ptr    *inner
		Nil    *inner
		M      map[string]int
		Bytes  []byte
		Nested map[string]map[string]any
		when   time.Time //nolint:unused // unexported: not on the wire
	}
	in := outer{
		A: map[string]any{
			"int": 1, "int64": int64(-2), "float": 1.5, "integral float": 2.0, "nan": math.NaN(), "bool": true, "nil": nil,
			"list": []any{"a", int64(3), map[any]any{int64(1): "one", "k": []any{}}}, "empty": map[string]any{},
			"small":   []any{int8(-1), int16(-2), uint8(3), uint16(4), uint32(5), uint64(6), uint(7), float32(0.5)},
			"nil map": map[string]any(nil), "number": json.Number("12"), "time": time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			"strings": []string{"x"}, "labels": map[string]string{"a": "b"}, "bytes": []byte("raw"),
		},
		Items:  []inner{{"a", 1}, {"b", 2}},
		Ptr:    &inner{"p", 9},
		M:      map[string]int{"x": 1},
		Bytes:  []byte{0, 1, 2},
		Nested: map[string]map[string]any{"n": {"k": int32(7)}},
	}
	data, err := Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	var out outer
	if err := Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	got, want := out.A.(map[string]any), in.A.(map[string]any)
	if !math.IsNaN(got["nan"].(float64)) {
		t.Errorf("NaN came back as %v", got["nan"])
	}
	delete(got, "nan")
	delete(want, "nan")
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip differs:\n got %#v\nwant %#v", out, in)
	}
	if _, ok := got["integral float"].(float64); !ok {
		t.Errorf("2.0 came back as %T", got["integral float"])
	}
	if _, ok := got["int"].(int); !ok {
		t.Errorf("int came back as %T", got["int"])
	}
}

// TestCodecRefusesUnknownTypes checks that what cannot travel is an error, not a guess.
func TestCodecRefusesUnknownTypes(t *testing.T) {
	for _, v := range []any{map[string]any{"f": func() {}}, struct{ C chan int }{}, []any{struct{}{}}} {
		if _, err := Marshal(&v); err == nil {
			t.Errorf("%T encoded", v)
		}
	}
}

// TestCodecBoundsGarbage feeds the decoder truncated and corrupt data: errors, no panic,
// no huge allocation from a length that claims more than the data holds.
func TestCodecBoundsGarbage(t *testing.T) {
	var value any = map[string]any{"a": []any{int64(1), "two", map[string]any{"x": 1.5}}}
	data, err := Marshal(&value)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	for i := range len(data) {
		if err := Unmarshal(data[:i], &v); err == nil {
			t.Errorf("truncated at %d of %d: no error", i, len(data))
		}
	}
	huge := []byte{tagList, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if err := Unmarshal(huge, &v); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a list claiming 4G items: %v", err)
	}
	deep := []byte{}
	for range maxDepth + 10 {
		deep = append(deep, tagList, 2)
	}
	deep = append(deep, tagNil)
	if err := Unmarshal(deep, &v); err == nil {
		t.Errorf("nesting deeper than %d decoded", maxDepth)
	}
	if err := Unmarshal([]byte{99}, &v); err == nil {
		t.Errorf("unknown tag decoded")
	}
}

// TestCloutRoundTrip encodes the compiled examples and checks that the decoded Clout
// is the same Clout (its JSON identical, its edges resolved).
func TestCloutRoundTrip(t *testing.T) {
	for _, name := range []string{"hello-world", "network-service", "vendor-profile"} {
		pkg, err := tosca.Open(filepath.Join("..", "examples", name), tosca.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := tosca.NewCompiler(1).Compile(context.Background(), pkg, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		data, err := encodeClout(compiled.Clout)
		if err != nil {
			t.Fatal(err)
		}
		encoded := time.Since(start)
		start = time.Now()
		clout, err := decodeClout(data)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, encoded in %s, decoded in %s", name, len(data), encoded, time.Since(start))
		a, _ := json.Marshal(compiled.Clout)
		b, _ := json.Marshal(clout)
		if string(a) != string(b) {
			t.Errorf("%s: the decoded Clout differs", name)
		}
		for id, vertex := range clout.Vertexes {
			for _, edge := range vertex.EdgesOut {
				if edge.Source != vertex || edge.Target == nil || edge.Target.ID != edge.TargetID {
					t.Errorf("%s: vertex %s: edge not resolved", name, id)
				}
			}
		}
		pkg.Close()
	}
}
