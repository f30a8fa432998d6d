package worker

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"calaf.io/calaf/tosca"
)

// TestReadVNFDInAWorker reads the VNFD of the project's VNF packages in a worker, as
// onboarding does: the same as in this process; a package that is no VNF package comes
// back as a package problem, and the pool goes on serving.
func TestReadVNFDInAWorker(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	for _, name := range []string{"cnf-manifests", "cnf-oscontainer", "cnf-helm"} {
		pkg, err := tosca.Open(filepath.Join("..", "test", "etsi", name), tosca.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pkg.Close() })
		isolated, err := pool.ReadVNFD(ctx, pkg)
		if err != nil {
			t.Fatalf("%s in a worker: %v", name, err)
		}
		local, err := pkg.ReadVNFD()
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(isolated, local) || isolated.Identity.DescriptorID == "" {
			t.Errorf("%s: the VNFD read in a worker %+v differs from the one in process %+v", name, isolated, local)
		}
	}
	_, err := pool.ReadVNFD(ctx, openExample(t, "hello-world"))
	if !tosca.IsInvalid(err) || !strings.Contains(err.Error(), "not an ETSI SOL001 VNF package") {
		t.Errorf("a package that is no VNF package: %v", err)
	}
	if _, err := pool.ReadVNFD(ctx, openExample(t, "hello-world")); !tosca.IsInvalid(err) {
		t.Errorf("the pool no longer serves: %v", err)
	}
}
