package cli

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/operator"
)

// The package line says what is known of the revision: a template that did not compile
// has no name or version, and the line does not print empty fields for them.
func TestDescribePackageLine(t *testing.T) {
	cases := []struct {
		pkg  v1alpha1.PackageStatus
		want string
	}{
		{v1alpha1.PackageStatus{TemplateName: "mini5gc", TemplateVersion: "1.2", Entry: "service.yaml", Revision: "main@sha1:abc"}, "Package: mini5gc 1.2, service.yaml, revision main@sha1:abc\n"},
		{v1alpha1.PackageStatus{TemplateName: "mini5gc", Entry: "service.yaml", Revision: "r"}, "Package: mini5gc, service.yaml, revision r\n"},
		{v1alpha1.PackageStatus{Entry: "service.yaml", Revision: "sha256:1"}, "Package: service.yaml, revision sha256:1\n"},
		{v1alpha1.PackageStatus{Revision: "sha256:1"}, "Package: revision sha256:1\n"},
	}
	for _, tc := range cases {
		svc := &v1alpha1.Service{}
		svc.Status.Package = &tc.pkg
		if got := describe(svc); !strings.Contains(got, tc.want) {
			t.Errorf("describe of %+v:\n%s\nwant a line %q", tc.pkg, got, tc.want)
		}
	}
}

// calaf status prints the Services of substituted nodes under their nodes, and theirs
// under them; a child that cannot be read is said, not fatal.
func TestPrintChildren(t *testing.T) {
	node := func(name, service string) v1alpha1.NodeStatus {
		return v1alpha1.NodeStatus{Name: name, Service: service}
	}
	core := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "core"}}
	core.Status.Nodes = []v1alpha1.NodeStatus{node("front", ""), node("db", "core-db"), node("cache", "core-cache")}
	db := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "core-db"}}
	db.Status.Nodes = []v1alpha1.NodeStatus{node("disk", "core-db-disk")}
	disk := &v1alpha1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "core-db-disk"}}
	fc := fake.NewClientBuilder().WithScheme(operator.NewScheme()).WithObjects(db, disk).Build()
	var out strings.Builder
	if err := printChildren(context.Background(), &out, fc, core, 1); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\n    node db is Service core-db:\n    Service t/core-db: Ready=Unknown",
		"\n        node disk is Service core-db-disk:\n        Service t/core-db-disk: Ready=Unknown",
		"\n    node cache: Service core-cache: ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("calaf status children:\n%s\nwant %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "front") {
		t.Errorf("a node that is no Service printed:\n%s", out.String())
	}
}
