package cli

import (
	"context"
	"os"
	"path/filepath"

	"calaf.io/calaf/tosca"
	"calaf.io/calaf/tosca/locked"
	"calaf.io/calaf/tosca/sol004"
)

// profileCacheDir is where calaf keeps the profiles packages import by reference:
// $CALAF_PROFILE_CACHE, else $CALAF_CACHE/profiles, by default ~/.cache/calaf/profiles.
func profileCacheDir() string {
	if dir := os.Getenv("CALAF_PROFILE_CACHE"); dir != "" {
		return dir
	}
	if dir := os.Getenv("CALAF_CACHE"); dir != "" {
		return filepath.Join(dir, "profiles")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "calaf", "profiles")
	}
	return filepath.Join(os.TempDir(), "calaf-profiles")
}

// profileCache is the CLI's cache of profiles.
func profileCache() *locked.Cache {
	return &locked.Cache{Dir: profileCacheDir(), Limits: tosca.DefaultLimits()}
}

// resolveCached resolves a package's imports by reference from its lock and the profile
// cache alone, offline (calaf package lock fills the cache), judging each profile's
// signature by policy. A package without such imports is returned as it is.
func resolveCached(ctx context.Context, pkg *tosca.Package, policy sol004.Policy) (*tosca.Package, error) {
	resolver := &locked.Resolver{Cache: profileCache(), Policy: policy}
	resolved, _, err := resolver.Resolve(ctx, pkg)
	return resolved, err
}
