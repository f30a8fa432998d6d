package nfvapi

import (
	_ "embed"
	"net/http"

	"calaf.io/calaf/nfvapi/sol013"
)

// lcmVersion is the version of the VNF LCM interface served at /vnflcm/v2 (SOL003 v3.x
// names its VNF lifecycle management interface 2.0.0).
const lcmVersion = "2.0.0"

//go:embed openapi.yaml
var openAPIDocument []byte

// routes registers every endpoint: what is served, and a 405 for other methods on the
// same paths, a 404 for the rest.
func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openAPIDocument)
	})

	s.route("GET /vnflcm/api_versions", s.apiVersions("/vnflcm/v2"))
	s.route("GET /vnflcm/v2/api_versions", s.apiVersions("/vnflcm/v2"))

	const instances, instance = "/vnflcm/v2/vnf_instances", "/vnflcm/v2/vnf_instances/{id}"
	s.route("GET "+instances, s.listInstances)
	s.route("POST "+instances, s.createInstance)
	s.route("GET "+instance, s.showInstance)
	s.route("PATCH "+instance, s.modifyInstance)
	s.route("DELETE "+instance, s.deleteInstance)
	for task, h := range s.tasks() {
		s.route("POST "+instance+"/"+task, h)
	}

	const occurrences, occurrence = "/vnflcm/v2/vnf_lcm_op_occs", "/vnflcm/v2/vnf_lcm_op_occs/{id}"
	s.route("GET "+occurrences, s.listOccurrences)
	s.route("GET "+occurrence, s.showOccurrence)
	for decision, h := range s.decisions() {
		s.route("POST "+occurrence+"/"+decision, h)
	}

	s.routeSubscriptions()

	allowed := map[string][]string{
		"/vnflcm/api_versions": {"GET"}, "/vnflcm/v2/api_versions": {"GET"},
		instances: {"GET", "POST"}, instance: {"GET", "PATCH", "DELETE"},
		occurrences: {"GET"}, occurrence: {"GET"},
	}
	for task := range s.tasks() {
		allowed[instance+"/"+task] = []string{"POST"}
	}
	for decision := range s.decisions() {
		allowed[occurrence+"/"+decision] = []string{"POST"}
	}
	for path, methods := range s.subscriptionMethods() {
		allowed[path] = methods
	}
	for path, methods := range s.routePackages() {
		allowed[path] = methods
	}
	s.methods(allowed)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sol013.WriteProblem(w, r, sol013.Errorf(http.StatusNotFound, "nothing is served at %s", r.URL.Path))
	})
}

// ApiVersion is one version of an interface (SOL013 ApiVersionInformation).
type apiVersion struct {
	Version      string `json:"version"`
	IsDeprecated bool   `json:"isDeprecated"`
}

type apiVersionInformation struct {
	URIPrefix   string       `json:"uriPrefix"`
	APIVersions []apiVersion `json:"apiVersions"`
}

func (s *Server) apiVersions(prefix string) handlerFunc {
	return func(*request) (int, any, error) {
		return http.StatusOK, apiVersionInformation{URIPrefix: prefix, APIVersions: []apiVersion{{Version: lcmVersion}}}, nil
	}
}

// OpenAPI returns the OpenAPI document of the interfaces served (also at /openapi.yaml).
func OpenAPI() []byte { return append([]byte(nil), openAPIDocument...) }
