package controller

import (
	"testing"

	"calaf.io/calaf/internal/redact"
	"calaf.io/calaf/render"
)

// An output derived from a Secret — its definition reads an input that came from one, or
// its value holds one — is withheld unless the package marks it; marked, it is published
// redacted, or as it is when the admin reveals such outputs. Other outputs are published
// as they are.
func TestPublishedOutputs(t *testing.T) {
	secrets := redact.New()
	secrets.Add("hunter2-secret")
	s := &scope{Redact: secrets, secretInputs: map[string]bool{"password": true, "tier": false}}
	marked := map[string]string{render.MetadataPublishSecret: "true"}
	cases := []struct {
		name     string
		def      render.OutputDefinition
		value    any
		reveal   bool
		want     any
		withheld bool
	}{
		{"no secret", render.OutputDefinition{Inputs: []string{"tier"}}, "gold", false, "gold", false},
		{"reads a Secret's input, not marked", render.OutputDefinition{Inputs: []string{"password"}}, "aGVsbG8=", false, nil, true},
		{"holds a secret, not marked", render.OutputDefinition{}, "user:hunter2-secret", false, nil, true},
		{"marked: redacted", render.OutputDefinition{Inputs: []string{"password"}, Metadata: marked}, "user:hunter2-secret", false, "user:*****", false},
		{"marked, revealed", render.OutputDefinition{Inputs: []string{"password"}, Metadata: marked}, "user:hunter2-secret", true, "user:hunter2-secret", false},
		{"revealed, but not marked", render.OutputDefinition{Inputs: []string{"password"}}, "hunter2-secret", true, nil, true},
	}
	for _, c := range cases {
		r := &ServiceReconciler{RevealSecretOutputs: c.reveal}
		got, withheld := r.publishedOutput(s, c.def, c.value)
		if got != c.want || (withheld != "") != c.withheld {
			t.Errorf("%s: published %v (withheld %q), want %v (withheld %v)", c.name, got, withheld, c.want, c.withheld)
		}
	}
}
