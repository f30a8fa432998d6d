package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/lifecycle"
)

// alertRule makes a package with an alert rule healing its config node.
const alertRule = `  policies:
  - config_broken:
      type: calaf.policies.AlertRule
      targets: [ config ]
      properties:
        alert: ConfigBroken
        labels: { severity: critical }
        operation: HEAL
        cooldown: 3 s
        max_per_hour: 2
`

// postAlert posts an Alertmanager payload with one firing alert and returns the status
// code and the outcomes.
func postAlert(t *testing.T, token string, labels map[string]string) (int, []lifecycle.AlertOutcome) {
	t.Helper()
	payload := lifecycle.AlertPayload{Version: "4", Status: "firing", Alerts: []lifecycle.Alert{{Status: "firing", Labels: labels,
		StartsAt: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), Fingerprint: "c0ffee"}}}
	data, _ := json.Marshal(payload)
	req, _ := http.NewRequest(http.MethodPost, env.webhook+lifecycle.AlertPath, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Outcomes []lifecycle.AlertOutcome `json:"outcomes"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Outcomes
}

// An alert posted to the Alertmanager webhook heals what its rule names, once within the
// rule's cooldown and at most max_per_hour times an hour; the occurrence records the
// alert. Alerts without the receiver's token (the push webhook's is not it), of no
// Service, or matching no rule do nothing.
func TestAlertsHealWithinCooldownAndRate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	deploy(t, ns, "cfg", configTemplate("1", alertRule), nil)
	labels := map[string]string{"alertname": "ConfigBroken", "severity": "critical", "namespace": ns, "calaf_service": "cfg"}

	code, _ := postAlert(t, "wrong", labels)
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	code, _ = postAlert(t, pushToken, labels)
	g.Expect(code).To(Equal(http.StatusUnauthorized), "the push webhook's token opens no other receiver")

	code, outcomes := postAlert(t, env.token, labels)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(outcomes).To(HaveLen(1))
	g.Expect(outcomes[0].Outcome).To(Equal(lifecycle.OutcomeCreated), outcomes[0].Message)
	g.Expect(outcomes[0].Rule).To(Equal("config_broken"))
	first := &v1alpha1.Operation{}
	g.Expect(env.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: outcomes[0].Occurrence}, first)).To(Succeed())
	g.Expect(first.Spec.Type).To(Equal(v1alpha1.OperationHeal))
	g.Expect(first.Spec.Heal.Nodes).To(Equal([]string{"config"}))
	g.Expect(first.Spec.TriggeredBy.Rule).To(Equal("config_broken"))
	g.Expect(first.Spec.TriggeredBy.AlertName).To(Equal("ConfigBroken"))
	g.Expect(first.Spec.TriggeredBy.Fingerprint).To(Equal("c0ffee"))
	g.Expect(first.Spec.TriggeredBy.Labels).To(HaveKeyWithValue("severity", "critical"))
	waitState(t, first, v1alpha1.StateCompleted, time.Minute)

	_, outcomes = postAlert(t, env.token, labels)
	g.Expect(outcomes[0].Outcome).To(Equal(lifecycle.OutcomeCooldown), outcomes[0].Message)
	g.Expect(outcomes[0].Message).To(ContainSubstring("within its cooldown of 3s"))

	advanceClock(t, 3500*time.Millisecond) // past the cooldown
	_, outcomes = postAlert(t, env.token, labels)
	g.Expect(outcomes[0].Outcome).To(Equal(lifecycle.OutcomeCreated), outcomes[0].Message)
	advanceClock(t, 3500*time.Millisecond)
	_, outcomes = postAlert(t, env.token, labels)
	g.Expect(outcomes[0].Outcome).To(Equal(lifecycle.OutcomeRateLimited), outcomes[0].Message)
	g.Expect(outcomes[0].Message).To(ContainSubstring("made 2 occurrences in the last hour, its maximum: refused"))

	list := &v1alpha1.OperationList{}
	g.Expect(env.client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(2), "two heals, no more")

	other := map[string]string{"alertname": "ConfigBroken", "severity": "warning", "namespace": ns, "calaf_service": "cfg"}
	_, outcomes = postAlert(t, env.token, other)
	g.Expect(outcomes[0].Outcome).To(Equal(lifecycle.OutcomeIgnored))
	g.Expect(outcomes[0].Message).To(ContainSubstring("no alert rule of Service " + ns + "/cfg matches alert ConfigBroken"))
	_, outcomes = postAlert(t, env.token, map[string]string{"alertname": "ConfigBroken", "namespace": ns})
	g.Expect(outcomes[0].Outcome).To(Equal(lifecycle.OutcomeIgnored))
	g.Eventually(func() []string { return events(t, ns, "cfg") }, 10*time.Second).Should(ContainElements("AlertTriggered", "AlertNotActedOn"))
}
