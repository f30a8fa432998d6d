package lifecycle

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
)

// AlertPath is where Alertmanager posts alerts (a webhook_config's url).
const AlertPath = "/hooks/alertmanager"

// Labels an alert names its Service with.
const (
	AlertLabelNamespace = "namespace"
	AlertLabelService   = "calaf_service"
	AlertLabelPod       = "pod"
)

// maxAlertBody bounds an Alertmanager payload.
const maxAlertBody = 1 << 20

// AlertReceiver turns the alerts Alertmanager posts (its webhook payload, version 4) into
// occurrences: a firing alert that names a Service (labels "namespace" and
// "calaf_service") and matches one of the alert rules of the Service's package (its
// alertname and labels) creates a HEAL or a SCALE of the Service — unless the rule made
// one within its cooldown, or max_per_hour in the last hour. The occurrence records the
// alert (spec.triggeredBy); every decision is an Event on the Service and a line of the
// answer. Requests carry the receiver's own token ("Authorization: Bearer <token>"), not
// the push webhook's: this one creates occurrences.
type AlertReceiver struct {
	// Client reads Services (the cache) and creates Operations; Reader lists the
	// occurrences a rule made (fresh from the API server).
	Client client.Client
	Reader client.Reader
	// Token returns the tokens requests may carry, one per line (read per request, so a
	// mounted Secret can rotate).
	Token func() ([]byte, error)
	// Namespace limits the Services; empty means all.
	Namespace string
	Recorder  EventRecorder
	Log       logr.Logger
	Now       func() time.Time

	// mu makes the decisions one at a time: two alerts never both pass a cooldown.
	mu sync.Mutex
}

// AlertPayload is Alertmanager's webhook payload.
type AlertPayload struct {
	Version string  `json:"version"`
	Status  string  `json:"status"`
	Alerts  []Alert `json:"alerts"`
}

// Alert is one alert of a payload.
type Alert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	Fingerprint string            `json:"fingerprint"`
}

// AlertOutcome says what an alert did.
type AlertOutcome struct {
	Alert       string `json:"alert"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Service     string `json:"service,omitempty"`
	Rule        string `json:"rule,omitempty"`
	// Outcome: created, cooldown, rate-limited, ignored or failed.
	Outcome    string `json:"outcome"`
	Occurrence string `json:"occurrence,omitempty"`
	Message    string `json:"message"`
}

// Outcomes of an alert.
const (
	OutcomeCreated     = "created"
	OutcomeCooldown    = "cooldown"
	OutcomeRateLimited = "rate-limited"
	OutcomeIgnored     = "ignored"
	OutcomeFailed      = "failed"
)

func (a *AlertReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	token, err := a.Token()
	if err != nil || len(token) == 0 {
		http.Error(w, "the webhook has no token configured", http.StatusServiceUnavailable)
		return
	}
	given, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || !tokenMatches(given, token) {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var payload AlertPayload
	body, err := io.ReadAll(io.LimitReader(req.Body, maxAlertBody+1))
	if err == nil && len(body) > maxAlertBody {
		err = fmt.Errorf("payload larger than %d bytes", maxAlertBody)
	}
	if err == nil {
		err = json.Unmarshal(body, &payload)
	}
	if err != nil {
		http.Error(w, "not an Alertmanager payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	outcomes := a.Handle(req.Context(), payload)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"outcomes": outcomes})
}

// tokenMatches tells whether given is one of the tokens, one per line (the old and the
// new one while a token is rotated), comparing digests in constant time.
func tokenMatches(given string, tokens []byte) bool {
	digest := sha256.Sum256([]byte(given))
	matched := false
	for line := range strings.Lines(string(tokens)) {
		if token := strings.TrimSpace(line); token != "" {
			expected := sha256.Sum256([]byte(token))
			matched = subtle.ConstantTimeCompare(digest[:], expected[:]) == 1 || matched
		}
	}
	return given != "" && matched
}

// Handle decides, alert by alert, what the firing alerts of a payload do.
func (a *AlertReceiver) Handle(ctx context.Context, payload AlertPayload) []AlertOutcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	outcomes := []AlertOutcome{}
	for _, alert := range payload.Alerts {
		if alert.Status != "" && alert.Status != "firing" {
			continue
		}
		outcome := a.handle(ctx, alert)
		a.Log.Info("alert", "alert", outcome.Alert, "service", outcome.Service, "rule", outcome.Rule, "outcome", outcome.Outcome, "message", outcome.Message)
		outcomes = append(outcomes, outcome)
	}
	return outcomes
}

// handle routes one alert to its Service and rule, and creates the rule's occurrence when
// its cooldown and rate allow.
func (a *AlertReceiver) handle(ctx context.Context, alert Alert) AlertOutcome {
	out := AlertOutcome{Alert: alert.Labels["alertname"], Fingerprint: alert.Fingerprint, Outcome: OutcomeIgnored}
	ns, name := alert.Labels[AlertLabelNamespace], alert.Labels[AlertLabelService]
	if ns == "" || name == "" || a.Namespace != "" && ns != a.Namespace {
		out.Message = fmt.Sprintf("the alert names no Service of this operator (labels %q and %q)", AlertLabelNamespace, AlertLabelService)
		return out
	}
	out.Service = ns + "/" + name
	svc := &v1alpha1.Service{}
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		out.Message = fmt.Sprintf("Service %s: %v", out.Service, err)
		return out
	}
	rule, ok := matchRule(svc, alert)
	if !ok {
		out.Message = fmt.Sprintf("no alert rule of Service %s matches alert %s", out.Service, out.Alert)
		return out
	}
	out.Rule = rule.Name
	out.Outcome, out.Message = a.admit(ctx, svc, rule)
	if out.Outcome == "" {
		op, err := a.create(ctx, svc, rule, alert)
		if err != nil {
			out.Outcome, out.Message = OutcomeFailed, err.Error()
		} else {
			out.Outcome, out.Occurrence = OutcomeCreated, op.Name
			out.Message = fmt.Sprintf("%s %s created by rule %s", op.Spec.Type, op.Name, rule.Name)
		}
	}
	a.event(svc, out)
	return out
}

// matchRule returns the first rule of the Service (by name) the alert matches.
func matchRule(svc *v1alpha1.Service, alert Alert) (v1alpha1.AlertRule, bool) {
	if svc.Status.Lifecycle == nil {
		return v1alpha1.AlertRule{}, false
	}
	rules := slices.Clone(svc.Status.Lifecycle.AlertRules)
	slices.SortFunc(rules, func(x, y v1alpha1.AlertRule) int { return strings.Compare(x.Name, y.Name) })
	for _, rule := range rules {
		if rule.AlertName != alert.Labels["alertname"] {
			continue
		}
		matches := true
		for key, value := range rule.Labels {
			matches = matches && alert.Labels[key] == value
		}
		if matches {
			return rule, true
		}
	}
	return v1alpha1.AlertRule{}, false
}

// admit applies a rule's cooldown and rate to the occurrences it made: "" lets the alert
// create one.
func (a *AlertReceiver) admit(ctx context.Context, svc *v1alpha1.Service, rule v1alpha1.AlertRule) (string, string) {
	list := &v1alpha1.OperationList{}
	if err := a.Reader.List(ctx, list, client.InNamespace(svc.Namespace)); err != nil {
		return OutcomeFailed, fmt.Sprintf("listing the occurrences of rule %s: %v", rule.Name, err)
	}
	now := a.Now()
	var last *v1alpha1.Operation
	inHour := 0
	for i := range list.Items {
		op := &list.Items[i]
		if op.Spec.ServiceName != svc.Name || op.Spec.TriggeredBy == nil || op.Spec.TriggeredBy.Rule != rule.Name {
			continue
		}
		if now.Sub(op.CreationTimestamp.Time) < time.Hour {
			inHour++
		}
		if last == nil || last.CreationTimestamp.Before(&op.CreationTimestamp) {
			last = op
		}
	}
	cooldown := time.Duration(rule.CooldownSeconds) * time.Second
	switch {
	case last != nil && now.Sub(last.CreationTimestamp.Time) < cooldown:
		return OutcomeCooldown, fmt.Sprintf("rule %s made %s %v ago, within its cooldown of %v: nothing done", rule.Name, last.Name, now.Sub(last.CreationTimestamp.Time).Round(time.Second), cooldown)
	case rule.MaxPerHour > 0 && inHour >= int(rule.MaxPerHour):
		return OutcomeRateLimited, fmt.Sprintf("rule %s made %d occurrences in the last hour, its maximum: refused", rule.Name, inHour)
	}
	return "", ""
}

// create creates the occurrence of a rule for an alert.
func (a *AlertReceiver) create(ctx context.Context, svc *v1alpha1.Service, rule v1alpha1.AlertRule, alert Alert) (*v1alpha1.Operation, error) {
	spec := v1alpha1.OperationSpec{ServiceName: svc.Name, Type: rule.Operation, TriggeredBy: trigger(rule, alert)}
	switch rule.Operation {
	case v1alpha1.OperationHeal:
		spec.Heal = &v1alpha1.HealRequest{Nodes: rule.Nodes, Cause: "alert " + alert.Labels["alertname"]}
		if len(rule.Nodes) == 0 {
			pod := alert.Labels[AlertLabelPod]
			if pod == "" {
				return nil, fmt.Errorf("rule %s heals the pod the alert names, and the alert has no %q label", rule.Name, AlertLabelPod)
			}
			spec.Heal.Pods = []string{pod}
		}
	case v1alpha1.OperationScale:
		spec.Scale = &v1alpha1.ScaleRequest{AspectID: rule.AspectID, Type: rule.Direction, NumberOfSteps: max(rule.Steps, 1)}
	default:
		return nil, fmt.Errorf("rule %s: operation %s cannot be triggered by an alert", rule.Name, rule.Operation)
	}
	op := &v1alpha1.Operation{ObjectMeta: metav1.ObjectMeta{GenerateName: namePrefix(svc.Name + "-" + rule.Name), Namespace: svc.Namespace}, Spec: spec}
	return op, a.Client.Create(ctx, op)
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// namePrefix makes a generateName of text: lower case, dashes, at most 50 characters.
func namePrefix(text string) string {
	prefix := strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(text), "-"), "-")
	if len(prefix) > 50 {
		prefix = strings.TrimRight(prefix[:50], "-")
	}
	return prefix + "-"
}

// trigger records the alert in the occurrence.
func trigger(rule v1alpha1.AlertRule, alert Alert) *v1alpha1.AlertTrigger {
	t := &v1alpha1.AlertTrigger{Rule: rule.Name, AlertName: alert.Labels["alertname"], Fingerprint: alert.Fingerprint}
	if !alert.StartsAt.IsZero() {
		startsAt := metav1.NewTime(alert.StartsAt)
		t.StartsAt = &startsAt
	}
	for _, key := range slices.Sorted(maps.Keys(alert.Labels)) {
		if len(t.Labels) == 32 {
			break
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[key] = alert.Labels[key]
	}
	return t
}

// event records what an alert did on its Service.
func (a *AlertReceiver) event(svc *v1alpha1.Service, out AlertOutcome) {
	if a.Recorder == nil {
		return
	}
	eventType, reason := "Normal", "AlertTriggered"
	if out.Outcome != OutcomeCreated {
		eventType, reason = "Warning", "AlertNotActedOn"
	}
	a.Recorder.Eventf(svc, nil, eventType, reason, "Alert "+out.Rule, "alert %s (%s): %s", out.Alert, out.Outcome, out.Message)
}
