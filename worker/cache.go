package worker

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"calaf.io/calaf/render"
)

// ResultCodec encodes render results with the wire codec for the operator's render cache
// (render.Renderer's Codec): a result's objects once, in their nodes, as a worker sends
// them; a decoded result gathers them again, as the pool does.
type ResultCodec struct{}

// Encode encodes result.
func (ResultCodec) Encode(result *render.Result) ([]byte, error) {
	wire := *result
	wire.Objects = nil
	return Marshal(&wire)
}

// Decode decodes what Encode encoded: a result of its own, sharing nothing.
func (ResultCodec) Decode(data []byte) (*render.Result, error) {
	result := &render.Result{}
	if err := Unmarshal(data, result); err != nil {
		return nil, err
	}
	result.Objects = []*unstructured.Unstructured{}
	for _, node := range result.Nodes {
		result.Objects = append(result.Objects, node.Objects...)
	}
	return result, nil
}
