package cli

import (
	"strings"
	"testing"

	"calaf.io/calaf/api/v1alpha1"
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
