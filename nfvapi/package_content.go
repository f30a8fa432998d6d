package nfvapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/nfvapi/content"
	"calaf.io/calaf/nfvapi/sol013"
)

// uploadContent takes a CREATED package's content (a zip, streamed and bounded): kept by
// the content store as the caller, named in the package's spec.source; onboarding goes on
// in the operator (202).
func (s *Server) uploadContent(r *request) (int, any, error) {
	if err := zipBody(r); err != nil {
		return 0, nil, err
	}
	pkg, err := r.vnfPackage(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if err := awaitsContent(pkg); err != nil {
		return 0, nil, err
	}
	src, err := s.cfg.Content.Put(r.Context(), r.client, pkg, r.Body)
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	return setContent(r, pkg, src)
}

// zipBody refuses a body that does not say it is a zip (application/zip, or
// application/octet-stream, or nothing).
func zipBody(r *request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil || mediaType != "application/zip" && mediaType != "application/octet-stream" {
		return sol013.Errorf(http.StatusUnsupportedMediaType, "the package's content must be sent as application/zip, not %s", ct)
	}
	return nil
}

// awaitsContent refuses a package that has content already (409: SOL005 takes content
// for a CREATED package only).
func awaitsContent(pkg *v1alpha1.VnfPackage) error {
	if pkg.Spec.Source != nil {
		return sol013.Errorf(http.StatusConflict, "the VNF package %s has its content already (%s)", pkg.Name, onboardingState(pkg))
	}
	return nil
}

// setContent names a package's content in its spec.source, as the caller, unless another
// request gave it content meanwhile (409): the operator onboards it.
func setContent(r *request, pkg *v1alpha1.VnfPackage, src v1alpha1.Source) (int, any, error) {
	err := r.updatePackage(pkg.Name, func(pkg *v1alpha1.VnfPackage) error {
		if err := awaitsContent(pkg); err != nil {
			return err
		}
		pkg.Spec.Source = &src
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, nil, nil
}

// uploadVnfPkgFromUriRequest is SOL005's UploadVnfPkgFromUriRequest.
type uploadVnfPkgFromUriRequest struct {
	AddressInformation string `json:"addressInformation"`
	UserName           string `json:"userName,omitempty"`
	Password           string `json:"password,omitempty"`
}

// uploadFromURI fetches a CREATED package's content from a URL — through the outbound
// client, under the admin's outbound policy, with the credentials given (used for this
// download alone, kept nowhere) — into the content store, as an upload would keep it
// (202). What cannot be fetched is refused at once: 422, the reason in the detail.
func (s *Server) uploadFromURI(r *request) (int, any, error) {
	var req uploadVnfPkgFromUriRequest
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	u, err := url.Parse(req.AddressInformation)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return 0, nil, sol013.Errorf(http.StatusBadRequest, "addressInformation must be an http(s) URL without credentials (give userName and password)")
	}
	pkg, err := r.vnfPackage(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if err := awaitsContent(pkg); err != nil {
		return 0, nil, err
	}
	body, err := s.download(r, u, req.UserName, req.Password)
	if err != nil {
		return 0, nil, err
	}
	defer body.Close()
	src, err := s.cfg.Content.Put(r.Context(), r.client, pkg, body)
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	return setContent(r, pkg, src)
}

// download starts the download of a package's content: the answer's body, once the
// server answered 200.
func (s *Server) download(r *request, u *url.URL, user, password string) (io.ReadCloser, error) {
	ctx, cancel := context.WithTimeout(r.Context(), downloadTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, sol013.Errorf(http.StatusBadRequest, "addressInformation: %v", err)
	}
	var auth outbound.Auth
	if user != "" || password != "" {
		auth.Basic = &outbound.BasicAuth{Username: user, Password: password}
	}
	resp, err := s.cfg.Downloads.Do(req, auth)
	if err != nil {
		cancel()
		return nil, sol013.Errorf(http.StatusUnprocessableEntity, "the package could not be fetched from %s: %v", u.Redacted(), err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, sol013.Errorf(http.StatusUnprocessableEntity, "the package could not be fetched from %s: it answered %s", u.Redacted(), resp.Status)
	}
	return cancelOnClose{ReadCloser: resp.Body, cancel: cancel}, nil
}

// downloadTimeout bounds the download of a package's content.
const downloadTimeout = 10 * time.Minute

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	defer c.cancel()
	return c.ReadCloser.Close()
}

// onboardedPackage reads a package whose content may be read back: ONBOARDED (409
// otherwise, as SOL005 says).
func (r *request) onboardedPackage() (*v1alpha1.VnfPackage, error) {
	pkg, err := r.vnfPackage(r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if state := onboardingState(pkg); state != v1alpha1.OnboardingOnboarded {
		return nil, sol013.Errorf(http.StatusConflict, "the VNF package %s is %s, not ONBOARDED", pkg.Name, state)
	}
	return pkg, nil
}

// readContent answers an onboarded package's content as it was uploaded (a zip; ranges
// served).
func (s *Server) readContent(r *request) (int, any, error) {
	pkg, err := r.onboardedPackage()
	if err != nil {
		return 0, nil, err
	}
	read, err := s.cfg.Content.Open(r.Context(), r.client, pkg)
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	return http.StatusOK, archiveAnswer{content: read, name: pkg.Name + ".zip"}, nil
}

// archiveAnswer streams a package's archive (http.ServeContent: ranges, conditional
// requests), then forgets it.
type archiveAnswer struct {
	content *content.Content
	name    string
}

func (a archiveAnswer) write(w http.ResponseWriter, r *http.Request, _ int) {
	defer a.content.Close()
	f, err := a.content.Archive()
	if err != nil {
		sol013.WriteProblem(w, r, err)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("ETag", `"`+a.content.SHA256+`"`)
	http.ServeContent(w, r, a.name, time.Time{}, f)
}

// fileAnswer is a file of a package (ranges served).
type fileAnswer struct {
	contentType string
	name        string
	data        []byte
}

func (a fileAnswer) write(w http.ResponseWriter, r *http.Request, _ int) {
	w.Header().Set("Content-Type", a.contentType)
	http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
}

// readVNFD answers an onboarded package's VNFD: as text/plain when it is one file and the
// caller accepts it, else (or when the caller accepts a zip) a zip of its files and
// TOSCA.meta; 406 when the caller accepts only text/plain and the VNFD is several files.
func (s *Server) readVNFD(r *request) (int, any, error) {
	pkg, err := r.onboardedPackage()
	if err != nil {
		return 0, nil, err
	}
	read, err := s.cfg.Content.Open(r.Context(), r.client, pkg)
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	defer read.Close()
	files, err := read.VNFD()
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	entry, err := read.Entry()
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	text, zipped := acceptsVNFD(r.Header.Get("Accept"))
	single := len(files) == 1 || len(files) == 2 && files[entry] != nil && hasMeta(files)
	switch {
	case text && single:
		return http.StatusOK, fileAnswer{contentType: "text/plain", name: entry, data: files[entry]}, nil
	case !zipped:
		return 0, nil, sol013.Errorf(http.StatusNotAcceptable, "the VNFD of %s is %d files: accept application/zip", pkg.Name, len(files))
	}
	var buffer bytes.Buffer
	if err := content.Zip(&buffer, files); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, fileAnswer{contentType: "application/zip", name: pkg.Name + "-vnfd.zip", data: buffer.Bytes()}, nil
}

func hasMeta(files map[string][]byte) bool {
	_, ok := files["TOSCA-Metadata/TOSCA.meta"]
	return ok
}

// acceptsVNFD reads an Accept header: whether text/plain and a zip are accepted (a zip
// when it says nothing).
func acceptsVNFD(accept string) (text, zipped bool) {
	if strings.TrimSpace(accept) == "" {
		return false, true
	}
	for _, part := range strings.Split(accept, ",") {
		mediaType, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mediaType {
		case "text/plain", "text/*":
			text = true
		case "application/zip", "application/*":
			zipped = true
		case "*/*":
			text, zipped = true, true
		}
	}
	return text, zipped
}

// readArtifact answers one file of an onboarded package, by its path in the package.
func (s *Server) readArtifact(r *request) (int, any, error) {
	pkg, err := r.onboardedPackage()
	if err != nil {
		return 0, nil, err
	}
	path := r.PathValue("path")
	read, err := s.cfg.Content.Open(r.Context(), r.client, pkg)
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	defer read.Close()
	data, err := read.File(path)
	if err != nil {
		return 0, nil, contentProblem(err)
	}
	return http.StatusOK, fileAnswer{contentType: "application/octet-stream", name: path, data: data}, nil
}

// contentProblem words an error of the content store as the ProblemDetails it is.
func contentProblem(err error) error {
	var tooLarge *content.TooLargeError
	var invalid *content.InvalidError
	var notHeld *content.NotHeldError
	var notFound *content.NotFoundError
	switch {
	case errors.As(err, &tooLarge):
		return sol013.Errorf(http.StatusRequestEntityTooLarge, "%s", tooLarge.Error())
	case errors.As(err, &invalid):
		return sol013.Errorf(http.StatusBadRequest, "%s", invalid.Message)
	case errors.As(err, &notHeld):
		return sol013.Errorf(http.StatusConflict, "%s", notHeld.Message)
	case errors.As(err, &notFound):
		return sol013.Errorf(http.StatusNotFound, "%s", notFound.Error())
	}
	return fmt.Errorf("the package's content: %w", err)
}
