package nfvapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"calaf.io/calaf/nfvapi/sol013"
)

// query is what a list request asks for: a filter, a selector, and where its page starts.
type query struct {
	filter   sol013.Filter
	selector sol013.Selector
	shape    sol013.Shape
	after    string
	raw      string
}

func parseQuery(r *request, shape sol013.Shape) (*query, error) {
	values := r.URL.Query()
	f, err := sol013.ParseFilter(values.Get("filter"), shape.Known)
	if err != nil {
		return nil, err
	}
	sel, err := sol013.ParseSelector(values, shape)
	if err != nil {
		return nil, err
	}
	q := &query{filter: f, selector: sel, shape: shape, raw: r.URL.RawQuery}
	if marker := values.Get(sol013.MarkerParam); marker != "" {
		if q.after, err = sol013.DecodeMarker(marker); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// touches tells whether the filter or the selector reaches into an attribute (so that
// what it needs is read).
func (q *query) touches(attribute string) bool {
	for _, e := range q.filter {
		if e.Path[0] == attribute {
			return true
		}
	}
	return strings.Contains(q.raw, "all_fields") || strings.Contains(q.raw, attribute)
}

// page answers a list: the n items (in order, each an id and its view) after the
// marker's id that the filter keeps, at most a page of them as the selector shapes them,
// and a Link to the next page when more remain.
func (q *query) page(r *request, s *Server, n int, item func(i int) (string, any)) (int, any, error) {
	out := []map[string]any{}
	for i := 0; i < n; i++ {
		id, view := item(i)
		if q.after != "" && id <= q.after {
			continue
		}
		doc, err := asDocument(view)
		if err != nil {
			return 0, nil, err
		}
		ok, err := q.filter.Match(doc)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			continue
		}
		if len(out) == s.cfg.PageSize {
			last, _ := out[len(out)-1]["id"].(string)
			base, _ := url.Parse(r.base(s))
			sol013.SetNextLink(r.header, r.Request, base, sol013.EncodeMarker(last))
			break
		}
		out = append(out, q.selector.Apply(doc, q.shape))
	}
	return http.StatusOK, out, nil
}

func asDocument(view any) (map[string]any, error) {
	data, err := json.Marshal(view)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	return doc, json.Unmarshal(data, &doc)
}
