// Package nfvostub is an NFVO for tests: the SOL003 Grant interface and VNF package
// management an NFVO offers a VNFM in direct mode, with decisions the test programs.
package nfvostub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"calaf.io/calaf/nfvo"
)

// Stub records the grant requests it gets and decides them: refused when Refuse says why,
// granted otherwise — at once, or (Later) after the VNFM read the grant that many times.
// It serves Packages by VNFD id.
type Stub struct {
	// Token the VNFM must send as a bearer token ("" accepts any request).
	Token string
	// Refuse returns why a request is refused ("" grants it).
	Refuse func(nfvo.GrantRequest) string
	// Later makes grants asynchronous: 202, then that many reads answered 202 again.
	Later int
	// Packages are the contents of onboarded packages, by VNFD id.
	Packages map[string][]byte

	mu        sync.Mutex
	requests  []nfvo.GrantRequest
	pending   map[string]int
	downloads map[string]int
}

// Downloads is how many times a package's content was fetched.
func (s *Stub) Downloads(vnfdID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.downloads[vnfdID]
}

// AddPackage serves a package's content for a VNFD id.
func (s *Stub) AddPackage(vnfdID string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Packages == nil {
		s.Packages = map[string][]byte{}
	}
	s.Packages[vnfdID] = content
}

// Requests are the grant requests received, in order.
func (s *Stub) Requests() []nfvo.GrantRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]nfvo.GrantRequest(nil), s.requests...)
}

// ServeHTTP answers the VNFM.
func (s *Stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
		problem(w, http.StatusUnauthorized, "no valid token")
		return
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/grant/v1/grants":
		s.grant(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/grant/v1/grants/"):
		s.read(w, strings.TrimPrefix(r.URL.Path, "/grant/v1/grants/"))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/vnfpkgm/v2/onboarded_vnf_packages/") && strings.HasSuffix(r.URL.Path, "/package_content"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/vnfpkgm/v2/onboarded_vnf_packages/"), "/package_content")
		s.mu.Lock()
		content, ok := s.Packages[id]
		if s.downloads == nil {
			s.downloads = map[string]int{}
		}
		s.downloads[id]++
		s.mu.Unlock()
		if !ok {
			problem(w, http.StatusNotFound, "no package of VNFD "+id)
			return
		}
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(content)
	default:
		problem(w, http.StatusNotFound, "not served: "+r.Method+" "+r.URL.Path)
	}
}

func (s *Stub) grant(w http.ResponseWriter, r *http.Request) {
	var req nfvo.GrantRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.VnfInstanceID == "" || req.VnfLcmOpOccID == "" || req.Operation == "" {
		problem(w, http.StatusBadRequest, "not a GrantRequest")
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	id := fmt.Sprintf("grant-%d", len(s.requests))
	later := s.Later
	if later > 0 {
		if s.pending == nil {
			s.pending = map[string]int{}
		}
		s.pending[id] = later
	}
	s.mu.Unlock()
	if s.Refuse != nil {
		if why := s.Refuse(req); why != "" {
			problem(w, http.StatusForbidden, why)
			return
		}
	}
	if later > 0 {
		w.Header().Set("Location", "/grant/v1/grants/"+id)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer(w, http.StatusCreated, nfvo.Grant{ID: id, VnfInstanceID: req.VnfInstanceID, VnfLcmOpOccID: req.VnfLcmOpOccID})
}

func (s *Stub) read(w http.ResponseWriter, id string) {
	s.mu.Lock()
	left, ok := s.pending[id]
	if ok && left > 0 {
		s.pending[id] = left - 1
	}
	s.mu.Unlock()
	if !ok {
		problem(w, http.StatusNotFound, "no grant "+id)
		return
	}
	if left > 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	answer(w, http.StatusOK, nfvo.Grant{ID: id})
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "detail": detail})
}
