//go:build tools

// Package tools records the registry main package (distribution/distribution v3) as a
// dependency of this module.
package tools

import _ "github.com/distribution/distribution/v3/cmd/registry"
