//go:build tools

// Package tools records the etcd main package as a dependency of this module.
package tools

import _ "go.etcd.io/etcd/server/v3"
