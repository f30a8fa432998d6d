package cli

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// projectPackages lists the packages under the project's test/ and examples/ directories:
// every directory with a TOSCA-Metadata/TOSCA.meta, and every other directory holding a
// service template; each with the instantiate requests beside it (test/etsi/NAME.*.json
// and .yaml for the package test/etsi/NAME).
func projectPackages(t *testing.T) map[string][]string {
	t.Helper()
	roots := map[string][]string{}
	var templates []string
	for _, top := range []string{"../../test", "../../examples"} {
		err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == "TOSCA-Metadata":
				roots[filepath.Dir(path)] = nil
			case !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")):
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				if bytes.HasPrefix(data, []byte("tosca_definitions_version:")) || bytes.Contains(data, []byte("\ntosca_definitions_version:")) {
					templates = append(templates, path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, template := range templates {
		inside := false
		for root := range roots {
			inside = inside || strings.HasPrefix(template, root+string(filepath.Separator))
		}
		if !inside {
			roots[filepath.Dir(template)] = nil
		}
	}
	for root := range roots {
		if filepath.Base(filepath.Dir(root)) == "etsi" {
			requests, _ := filepath.Glob(root + ".*.json")
			yamlRequests, _ := filepath.Glob(root + ".*.yaml")
			roots[root] = append(requests, yamlRequests...)
		}
	}
	return roots
}

// packageInputs are the inputs of the project's packages that require some.
var packageInputs = map[string][]string{
	"../../test/bench/fleet/package":   {"-i", "app=fleet-1"},
	"../../test/bench/fleet/nodeless":  {"-i", "app=fleet-1"},
	"../../test/multicluster/endpoint": {"-i", "greeting=hola"},
}

// requestArgs are the flags the requests of the project's packages need: the render policy
// of an admin who trusts cluster RBAC, for the request that deploys some.
var requestArgs = map[string][]string{
	"../../test/etsi/cnf-tacker.all-kinds.json": {"--policy", "../../test/etsi/policies/trust-cluster-rbac.yaml"},
}

// TestProjectPackagesSpeakClearly runs calaf validate on every package of the project's
// own under test/ and examples/ (with each of its instantiate requests): each is valid, and
// no line of what calaf says about it is longer than 500 characters or shows Go's
// internals.
func TestProjectPackagesSpeakClearly(t *testing.T) {
	packages := projectPackages(t)
	names := make([]string, 0, len(packages))
	for root := range packages {
		names = append(names, root)
	}
	slices.Sort(names)
	if len(names) < 8 {
		t.Fatalf("found only %d packages: %v", len(names), names)
	}
	for _, root := range names {
		runs := [][]string{append([]string{root}, packageInputs[root]...)}
		if requests := packages[root]; len(requests) > 0 {
			runs = nil
			for _, request := range requests {
				runs = append(runs, append([]string{root, "--instantiate", request}, requestArgs[request]...))
			}
		}
		for _, args := range runs {
			t.Run(strings.TrimPrefix(strings.Join(args, " "), "../../"), func(t *testing.T) {
				code, stdout, stderr := runCalaf(t, caseTimeout, append([]string{"validate"}, args...)...)
				if code != ExitOK {
					t.Errorf("exit code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				checkLines(t, stdout+stderr)
			})
		}
	}
}
