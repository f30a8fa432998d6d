package helmchart

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"calaf.io/calaf/etsi/chart"
)

// Templates that render past the deadline end with chart.ErrTimeout.
func TestDeadline(t *testing.T) {
	_, err := Engine{}.Render(context.Background(), chart.Request{Files: []chart.File{
		{Name: "Chart.yaml", Data: []byte("apiVersion: v2\nname: slow\nversion: 1.0.0\n")},
		{Name: "templates/slow.yaml", Data: []byte("{{ range until 3000 }}{{ range until 3000 }}{{ end }}{{ end }}\n")},
	}, Release: "r", Namespace: "ns", Timeout: 50 * time.Millisecond})
	if !errors.Is(err, chart.ErrTimeout) {
		t.Errorf("a slow chart: %v", err)
	}
}

// Manifests come in Helm's install order, hooks apart with their weight, test hooks marked.
func TestRenderOrdersManifestsAndHooks(t *testing.T) {
	rendered, err := Engine{}.Render(context.Background(), chart.Request{Files: []chart.File{
		{Name: "Chart.yaml", Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
		{Name: "values.yaml", Data: []byte("replicas: 1\n")},
		{Name: "templates/deploy.yaml", Data: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: {{ .Release.Name }} }\nspec: { replicas: {{ .Values.replicas }} }\n")},
		{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cm, namespace: {{ .Release.Namespace }} }\n")},
		{Name: "templates/hook.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pre\n  annotations: { helm.sh/hook: pre-install, helm.sh/hook-weight: \"5\" }\n")},
		{Name: "templates/test.yaml", Data: []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations: { helm.sh/hook: test }\n")},
	}, Values: map[string]any{"replicas": 3}, Release: "rel", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range rendered.Manifests {
		names = append(names, m.Name)
	}
	if len(names) != 2 || names[0] != "c/templates/cm.yaml" || names[1] != "c/templates/deploy.yaml" {
		t.Errorf("manifests %v, want the ConfigMap before the Deployment", names)
	}
	if got := rendered.Manifests[1].Content; !strings.Contains(got, "replicas: 3") || !strings.Contains(got, "name: rel") {
		t.Errorf("the Deployment did not take the values and release: %s", got)
	}
	hooks := map[string]chart.Hook{}
	for _, h := range rendered.Hooks {
		hooks[h.Name] = h
	}
	if h := hooks["c/templates/hook.yaml"]; h.Weight != 5 || h.Test {
		t.Errorf("pre-install hook: %+v", h)
	}
	if h := hooks["c/templates/test.yaml"]; !h.Test {
		t.Errorf("test hook not marked: %+v", h)
	}
}

// A chart's NOTES.txt, text helm prints for its user, is no manifest.
func TestNotesAreNoManifest(t *testing.T) {
	rendered, err := Engine{}.Render(context.Background(), chart.Request{Files: []chart.File{
		{Name: "Chart.yaml", Data: []byte("apiVersion: v2\nname: c\nversion: 1.0.0\n")},
		{Name: "templates/NOTES.txt", Data: []byte("1. Get the application URL of {{ .Release.Name }} by running these commands:\n")},
		{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: { name: cm }\n")},
	}, Release: "rel", Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rendered.Manifests) != 1 || !strings.HasSuffix(rendered.Manifests[0].Name, "cm.yaml") {
		t.Errorf("manifests %+v, want cm.yaml alone", rendered.Manifests)
	}
}
