package worker

import (
	"fmt"

	cloutpkg "github.com/tliron/puccini/clout"
)

// wireClout is a Clout without its back pointers (vertexes to their Clout, edges to their
// ends), which would make it cyclic; ResolveEdges restores them.
type wireClout struct {
	Version    string
	Metadata   map[string]any
	Properties map[string]any
	Vertexes   map[string]wireVertex
}

type wireVertex struct {
	Metadata   map[string]any
	Properties map[string]any
	EdgesOut   []wireEdge
}

type wireEdge struct {
	Metadata   map[string]any
	Properties map[string]any
	TargetID   string
}

// encodeClout encodes a Clout for the wire; its values are shared, not copied.
func encodeClout(clout *cloutpkg.Clout) ([]byte, error) {
	if clout == nil {
		return nil, nil
	}
	w := wireClout{Version: clout.Version, Metadata: clout.Metadata, Properties: clout.Properties, Vertexes: make(map[string]wireVertex, len(clout.Vertexes))}
	for id, vertex := range clout.Vertexes {
		wv := wireVertex{Metadata: vertex.Metadata, Properties: vertex.Properties, EdgesOut: make([]wireEdge, 0, len(vertex.EdgesOut))}
		for _, edge := range vertex.EdgesOut {
			target := edge.TargetID
			if edge.Target != nil {
				target = edge.Target.ID
			}
			wv.EdgesOut = append(wv.EdgesOut, wireEdge{Metadata: edge.Metadata, Properties: edge.Properties, TargetID: target})
		}
		w.Vertexes[id] = wv
	}
	return Marshal(&w)
}

// decodeClout decodes a Clout encoded by encodeClout, its edges resolved.
func decodeClout(data []byte) (*cloutpkg.Clout, error) {
	var w wireClout
	if err := Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("clout: %w", err)
	}
	clout := &cloutpkg.Clout{Version: w.Version, Metadata: w.Metadata, Properties: w.Properties, Vertexes: make(cloutpkg.Vertexes, len(w.Vertexes))}
	for id, wv := range w.Vertexes {
		vertex := &cloutpkg.Vertex{Clout: clout, ID: id, Metadata: wv.Metadata, Properties: wv.Properties, EdgesOut: make(cloutpkg.Edges, 0, len(wv.EdgesOut)), EdgesIn: cloutpkg.Edges{}}
		for _, we := range wv.EdgesOut {
			vertex.EdgesOut = append(vertex.EdgesOut, &cloutpkg.Edge{Metadata: we.Metadata, Properties: we.Properties, TargetID: we.TargetID})
		}
		clout.Vertexes[id] = vertex
	}
	if err := clout.ResolveEdges(); err != nil {
		return nil, fmt.Errorf("clout: %w", err)
	}
	return clout, nil
}
