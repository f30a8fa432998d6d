package sol013

import (
	"encoding/base64"
	"net/http"
	"net/url"
)

// MarkerParam is the query parameter of the next page (SOL013 5.4).
const MarkerParam = "nextpage_opaque_marker"

// EncodeMarker makes an opaque marker of a position (what the server needs to carry on).
func EncodeMarker(position string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(position))
}

// DecodeMarker reads a marker EncodeMarker made; anything else is a 400.
func DecodeMarker(marker string) (string, error) {
	if len(marker) > MaxFilterLength {
		return "", Errorf(http.StatusBadRequest, "%s is too long", MarkerParam)
	}
	b, err := base64.RawURLEncoding.DecodeString(marker)
	if err != nil {
		return "", Errorf(http.StatusBadRequest, "%s is not a marker this server gave", MarkerParam)
	}
	return string(b), nil
}

// SetNextLink adds the Link header of the next page: the request's URL with the marker.
func SetNextLink(h http.Header, r *http.Request, base *url.URL, marker string) {
	next := *r.URL
	if base != nil {
		next.Scheme, next.Host = base.Scheme, base.Host
	}
	q := next.Query()
	q.Set(MarkerParam, marker)
	next.RawQuery = q.Encode()
	h.Add("Link", "<"+next.String()+`>; rel="next"`)
}
