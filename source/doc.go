// Package source fetches the TOSCA package of a Service — an uploaded archive, an HTTP(S)
// CSAR, a git repository, an OCI artifact — into a local content-addressed store, so that
// Services sharing a package revision fetch and extract it once.
package source
