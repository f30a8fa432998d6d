package profilekit_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"calaf.io/calaf/profilekit"
)

var update = flag.Bool("update", false, "rewrite docs/kubernetes-profile.md")

// referencePath is the checked-in reference of the Calaf Kubernetes profile.
const referencePath = "../docs/kubernetes-profile.md"

// TestKubernetesProfileReference: the reference of the Calaf Kubernetes profile in docs/
// is what `calaf profile doc profiles/kubernetes/1.0` writes today, its test cases run
// (go test ./profilekit -run TestKubernetesProfileReference -update rewrites it).
func TestKubernetesProfileReference(t *testing.T) {
	catalog, err := profilekit.LoadDir("../profiles/kubernetes/1.0", profilekit.ProfileEntry, profilekit.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := (&profilekit.Runner{Render: profilekit.LocalRender()}).Run(context.Background(), "../profiles/kubernetes/1.0", "../profiles/kubernetes/1.0/tests")
	if err != nil {
		t.Fatal(err)
	}
	if run.Failed() > 0 {
		for _, r := range run.Results {
			if !r.Passed() {
				t.Errorf("%s: %v", r.Case.Name, r.Failures)
			}
		}
		t.Fatal("the profile's test cases fail")
	}
	want := profilekit.Markdown(catalog, profilekit.ReferenceOptions{Source: "profiles/kubernetes/1.0", Renders: run.RenderedKinds()})
	if *update {
		if err := os.WriteFile(referencePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("%s is not what the profile says now (- checked in, + generated); regenerate it with calaf profile doc profiles/kubernetes/1.0 -o docs/kubernetes-profile.md:\n%s",
			referencePath, profilekit.TextDiff(string(got), string(want), "checked in", "generated"))
	}
}
