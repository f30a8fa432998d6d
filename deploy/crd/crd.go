// Package crd holds Calaf's CustomResourceDefinitions as controller-gen writes them, for
// the code that needs their schemas at run time (ConfigMap mode validates with them).
package crd

import (
	"embed"
	"io/fs"
)

//go:embed calaf.io_*.yaml
var definitions embed.FS

// Files returns the CRD manifests, one file per resource (calaf.io_<plural>.yaml).
func Files() fs.FS { return definitions }
