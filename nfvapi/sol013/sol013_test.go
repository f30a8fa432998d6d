package sol013

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var instanceShape = Shape{
	Known:           map[string]bool{"id": true, "vnfdId": true, "vnfInstanceName": true, "instantiationState": true, "instantiatedVnfInfo": true, "metadata": true, "count": true, "flag": true, "_links": true},
	Mandatory:       []string{"id", "vnfdId", "instantiationState", "_links"},
	DefaultExcluded: []string{"instantiatedVnfInfo", "metadata"},
}

func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

const instance = `{"id":"a1","vnfdId":"d-1","vnfInstanceName":"it's, mine","instantiationState":"INSTANTIATED","count":3,"flag":true,
 "instantiatedVnfInfo":{"flavourId":"simple","vnfcResourceInfo":[{"id":"p1","vduId":"VDU1"},{"id":"p2","vduId":"VDU2"}]},
 "metadata":{"tenant":"blue","a/b":"slash"},"_links":{"self":{"href":"/x"}}}`

func TestFilterMatches(t *testing.T) {
	cases := []struct {
		filter string
		match  bool
	}{
		{"(eq,id,a1)", true},
		{"(eq,id,a2)", false},
		{"(neq,id,a2)", true},
		{"(neq,vnfInstanceDescription~1x,a)", false}, // refused below: unknown attribute
		{"(eq,vnfInstanceName,'it''s, mine')", true},
		{"(in,vnfdId,x,d-1,y)", true},
		{"(nin,vnfdId,x,d-1)", false},
		{"(cont,vnfInstanceName,mine)", true},
		{"(ncont,vnfInstanceName,yours)", true},
		{"(eq,instantiatedVnfInfo/flavourId,simple)", true},
		{"(eq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU2)", true},
		{"(neq,instantiatedVnfInfo/vnfcResourceInfo/vduId,VDU2)", false},
		{"(eq,metadata/a~1b,slash)", true},
		{"(eq,metadata/@key,tenant)", true},
		{"(gt,count,2)", true},
		{"(lte,count,2.5)", false},
		{"(eq,flag,true)", true},
		{"(eq,id,a1);(eq,instantiationState,NOT_INSTANTIATED)", false},
		{"(eq,metadata/absent,x)", false},
		{"(neq,metadata/absent,x)", true},
	}
	for _, c := range cases {
		f, err := ParseFilter(c.filter, instanceShape.Known)
		if strings.Contains(c.filter, "vnfInstanceDescription") {
			if err == nil {
				t.Errorf("%s: an unknown attribute was accepted", c.filter)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.filter, err)
			continue
		}
		got, err := f.Match(doc(t, instance))
		if err != nil || got != c.match {
			t.Errorf("%s: match %v (%v), want %v", c.filter, got, err, c.match)
		}
	}
}

func TestFilterRefused(t *testing.T) {
	cases := map[string]string{
		"eq,id,a1":                        "'(' expected",
		"(eq,id,a1":                       "')' expected",
		"(like,id,a1)":                    "unknown operator",
		"(eq,id)":                         "has no value",
		"(eq,id,a,b)":                     "takes one value",
		"(eq,nosuch,a)":                   "does not have",
		"(eq,id,a1)x":                     "';' or the end",
		"(eq,id,'open)":                   "not closed",
		"(eq,id,it's)":                    "must be quoted",
		"(eq,id//x,a)":                    "empty level",
		"(eq,id,)":                        "a value expected",
		strings.Repeat("(eq,id,a);", 500): "characters long",
	}
	for raw, want := range cases {
		_, err := ParseFilter(raw, instanceShape.Known)
		var p *Problem
		if !errors.As(err, &p) || p.Status != http.StatusBadRequest || !strings.Contains(p.Detail, want) {
			t.Errorf("%.40s: %v, want a 400 saying %q", raw, err, want)
		}
	}
	for _, raw := range []string{"(gt,count,many)", "(eq,flag,yes)", "(eq,instantiatedVnfInfo,x)", "(cont,count,3)", "(eq,vnfInstanceName/x,a)"} {
		f, err := ParseFilter(raw, instanceShape.Known)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if _, err := f.Match(doc(t, instance)); err == nil {
			t.Errorf("%s: matched a value of another kind without a word", raw)
		}
	}
}

func TestSelectors(t *testing.T) {
	cases := []struct {
		query string
		keys  []string
	}{
		{"", []string{"_links", "count", "flag", "id", "instantiationState", "vnfInstanceName", "vnfdId"}},
		{"exclude_default", []string{"_links", "count", "flag", "id", "instantiationState", "vnfInstanceName", "vnfdId"}},
		{"all_fields", []string{"_links", "count", "flag", "id", "instantiatedVnfInfo", "instantiationState", "metadata", "vnfInstanceName", "vnfdId"}},
		{"fields=metadata", []string{"_links", "id", "instantiationState", "metadata", "vnfdId"}},
		{"fields=metadata&exclude_default", []string{"_links", "count", "flag", "id", "instantiationState", "metadata", "vnfInstanceName", "vnfdId"}},
		{"exclude_fields=count,flag,id", []string{"_links", "id", "instantiatedVnfInfo", "instantiationState", "metadata", "vnfInstanceName", "vnfdId"}},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		s, err := ParseSelector(q, instanceShape)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		got := s.Apply(doc(t, instance), instanceShape)
		var keys []string
		for k := range got {
			keys = append(keys, k)
		}
		if !reflect.DeepEqual(sorted(keys), c.keys) {
			t.Errorf("%q: %v, want %v", c.query, sorted(keys), c.keys)
		}
	}
	q, _ := url.ParseQuery("fields=instantiatedVnfInfo/flavourId")
	s, _ := ParseSelector(q, instanceShape)
	got := s.Apply(doc(t, instance), instanceShape)
	if info := got["instantiatedVnfInfo"].(map[string]any); len(info) != 1 || info["flavourId"] != "simple" {
		t.Errorf("a nested field: %v", info)
	}
	for _, bad := range []string{"all_fields&fields=metadata", "fields=metadata&exclude_fields=count", "exclude_fields=count&exclude_default", "fields=nosuch"} {
		q, _ := url.ParseQuery(bad)
		if _, err := ParseSelector(q, instanceShape); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestVersion(t *testing.T) {
	cases := []struct {
		header   string
		required bool
		status   int
	}{
		{"2.0.0", true, 0}, {"2.1.3-impl:example.com:x:1", true, 0}, {"", false, 0},
		{"", true, 400}, {"two", true, 400}, {"1.3.0", true, 406}, {"02.0.0", true, 400},
	}
	for _, c := range cases {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if c.header != "" {
			r.Header.Set(HeaderVersion, c.header)
		}
		err := CheckVersion(r, 2, c.required)
		if got := statusOf(err); got != c.status {
			t.Errorf("%q: %d (%v), want %d", c.header, got, err, c.status)
		}
	}
}

func statusOf(err error) int {
	if err == nil {
		return 0
	}
	return AsProblem(err).Status
}

func TestProblems(t *testing.T) {
	gr := schema.GroupResource{Group: "calaf.io", Resource: "services"}
	cases := []struct {
		err    error
		status int
		detail string
	}{
		{apierrors.NewNotFound(gr, "x"), 404, `"x" not found`},
		{apierrors.NewForbidden(gr, "x", errors.New("no")), 403, "forbidden"},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), 409, "changed"},
		{apierrors.NewAlreadyExists(gr, "x"), 409, "already exists"},
		{apierrors.NewBadRequest("bad"), 400, "bad"},
		{errors.New("dial tcp 10.0.0.1:6443: secret internals"), 500, "server's log"},
		{Errorf(422, "the package is %s", "DISABLED"), 422, "DISABLED"},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		WriteProblem(w, httptest.NewRequest(http.MethodGet, "/vnflcm/v2/vnf_instances/x", nil), c.err)
		var p Problem
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		if w.Code != c.status || p.Status != c.status || !strings.Contains(p.Detail, c.detail) || w.Header().Get("Content-Type") != ContentTypeProblem || p.Instance == "" {
			t.Errorf("%v: %d %+v, want %d with %q", c.err, w.Code, p, c.status, c.detail)
		}
		if strings.Contains(p.Detail, "internals") {
			t.Errorf("a 500 repeats the error: %s", p.Detail)
		}
	}
}

func TestMarkers(t *testing.T) {
	m := EncodeMarker("svc-42")
	if got, err := DecodeMarker(m); err != nil || got != "svc-42" {
		t.Errorf("%q %v", got, err)
	}
	if _, err := DecodeMarker("!!!"); statusOf(err) != 400 {
		t.Errorf("a bad marker: %v", err)
	}
	w := httptest.NewRecorder()
	SetNextLink(w.Header(), httptest.NewRequest(http.MethodGet, "/vnflcm/v2/vnf_instances?filter=(eq,id,a)", nil), &url.URL{Scheme: "https", Host: "vnfm:8443"}, m)
	if l := w.Header().Get("Link"); !strings.HasPrefix(l, "<https://vnfm:8443/vnflcm/v2/vnf_instances?") || !strings.Contains(l, "nextpage_opaque_marker="+m) || !strings.Contains(l, "filter=") || !strings.HasSuffix(l, `>; rel="next"`) {
		t.Errorf("Link %s", l)
	}
}
