package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/outbound"
	"calaf.io/calaf/internal/text"
)

// Notifier delivers to each LifecycleSubscription the notifications of the occurrences
// of its namespace that it selects: every transition an occurrence recorded since the
// subscription was created, each occurrence's in order, retrying the next one with
// backoff until the endpoint takes it (at least once: a notification's id tells a
// repeat). Where each occurrence stands, and when a failed delivery is tried again, is
// kept in the subscription's status, so an operator restart resumes there and waits as
// long.
type Notifier struct {
	client.Client
	// APIReader reads the subscriptions (where the cache may be behind) and, without
	// CredentialsReader, the credentials Secrets (the cache holds only Calaf's objects).
	APIReader client.Reader
	// CredentialsReader returns how a subscription's Secret is read: as the identity the
	// subscription acts as (lockdown mode: its namespace's tenant account). Without it,
	// or when it answers nil, the APIReader reads the Secret and only one labelled
	// calaf.io/use=lifecycle-subscriptions is used.
	CredentialsReader func(sub *v1alpha1.LifecycleSubscription) (client.Reader, error)
	// Outbound sends the notifications: the admin's outbound policy, the circuits of
	// failing endpoints, reused connections.
	Outbound *outbound.Client
	Log      logr.Logger
	// Backoff is the wait before a failed delivery is tried again, by failures in a row
	// (default 1 s doubling to 5 min).
	Backoff outbound.Backoff
	Now     func() time.Time
}

// maxPerReconcile bounds the notifications one reconcile delivers.
const maxPerReconcile = 20

// SetupWithManager registers the notifier: every change of an Operation looks at the
// subscriptions of its namespace.
func (n *Notifier) SetupWithManager(mgr ctrl.Manager) error {
	if n.Backoff == (outbound.Backoff{}) {
		n.Backoff = outbound.DefaultBackoff()
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	if n.Outbound == nil {
		return errors.New("the notifier needs an outbound client")
	}
	// The subscription's own status patches do not trigger it: only a change of its spec
	// (a new generation), an occurrence's, or the wait of its backoff.
	// A Service's creation and deletion are notifications too.
	identifiers := predicate.Funcs{
		CreateFunc: func(ctrlevent.CreateEvent) bool { return true },
		UpdateFunc: func(e ctrlevent.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		DeleteFunc:  func(ctrlevent.DeleteEvent) bool { return false },
		GenericFunc: func(ctrlevent.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("notifications").
		For(&v1alpha1.LifecycleSubscription{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.Operation{}, handler.EnqueueRequestsFromMapFunc(n.subscriptionsOf)).
		Watches(&v1alpha1.Service{}, handler.EnqueueRequestsFromMapFunc(n.subscriptionsOf), builder.WithPredicates(identifiers)).
		Complete(n)
}

// subscriptionsOf maps an Operation to the subscriptions of its namespace.
func (n *Notifier) subscriptionsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &v1alpha1.LifecycleSubscriptionList{}
	if err := n.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for _, sub := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sub)})
	}
	return requests
}

// pending is a notification to deliver: a transition of an occurrence (op, index), or the
// creation or deletion (seq) of a Service (svc).
type pending struct {
	op    *v1alpha1.Operation
	index int
	svc   *v1alpha1.Service
	seq   int64
	at    time.Time
}

// cursor is the name of the cursor the notification moves.
func (p pending) cursor() string {
	if p.svc != nil {
		return serviceCursor(p.svc.Name)
	}
	return p.op.Name
}

// sequence is the notification's sequence number in its cursor.
func (p pending) sequence() int64 {
	if p.svc != nil {
		return p.seq
	}
	return Sequence(p.op, p.index)
}

// notification is what is sent for it to a subscription.
func (p pending) notification(sub *v1alpha1.LifecycleSubscription) any {
	if p.svc != nil {
		return identifierNotificationOf(sub, p.svc, p.seq)
	}
	return notificationOf(sub, p.op, p.index)
}

// id is the notification's id.
func (p pending) id() string {
	if p.svc != nil {
		return identifierNotificationOf(&v1alpha1.LifecycleSubscription{}, p.svc, p.seq).ID
	}
	return notificationID(p.op, p.sequence())
}

// serviceCursor names the cursor of a Service's identifier notifications.
func serviceCursor(service string) string { return "service/" + service }

// Reconcile delivers the subscription's pending notifications in order, and records what
// it delivered and what failed. The subscription is read from the API server, not the
// cache: a cache behind the last delivery's status patch would send it again. After a
// failure nothing is sent before the status's next attempt time.
func (n *Notifier) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sub := &v1alpha1.LifecycleSubscription{}
	if err := n.APIReader.Get(ctx, req.NamespacedName, sub); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := sub.DeepCopy()
	queue, err := n.pending(ctx, sub)
	if err != nil {
		return ctrl.Result{}, err
	}
	if wait := n.waiting(sub); wait > 0 {
		sub.Status.Pending = int32(len(queue))
		setSubscriptionReady(sub, readyReason(sub))
		return ctrl.Result{RequeueAfter: wait}, n.save(ctx, before, sub)
	}
	result, reason := ctrl.Result{}, v1alpha1.SubscriptionDelivering
	delivered := 0
	for _, p := range queue {
		if delivered == maxPerReconcile {
			result.RequeueAfter = time.Millisecond
			break
		}
		if err := n.deliver(ctx, sub, p.notification(sub)); err != nil {
			result.RequeueAfter, reason = n.failed(sub, err)
			break
		}
		n.delivered(sub, p)
		delivered++
		if err := n.save(ctx, before, sub); err != nil {
			return ctrl.Result{}, err
		}
		before = sub.DeepCopy()
	}
	sub.Status.Pending = int32(len(queue) - delivered)
	setSubscriptionReady(sub, reason)
	return result, n.save(ctx, before, sub)
}

// waiting is how long the subscription still waits before a failed delivery is tried
// again: nothing once its spec changed since (a new callback is tried at once).
func (n *Notifier) waiting(sub *v1alpha1.LifecycleSubscription) time.Duration {
	next := sub.Status.NextAttemptTime
	ready := apimeta.FindStatusCondition(sub.Status.Conditions, v1alpha1.ConditionReady)
	if next == nil || sub.Status.Failures == 0 || ready == nil || ready.ObservedGeneration != sub.Generation {
		return 0
	}
	return next.Sub(n.Now())
}

// pending lists what the subscription has not delivered, in order of time, and moves its
// cursors past what it does not select (other states or types, what happened before the
// subscription). Cursors are sequence numbers, which go on when an occurrence drops its
// oldest transitions.
func (n *Notifier) pending(ctx context.Context, sub *v1alpha1.LifecycleSubscription) ([]pending, error) {
	ops := &v1alpha1.OperationList{}
	if err := n.List(ctx, ops, client.InNamespace(sub.Namespace)); err != nil {
		return nil, err
	}
	services := &v1alpha1.ServiceList{}
	if err := n.List(ctx, services, client.InNamespace(sub.Namespace)); err != nil {
		return nil, err
	}
	byName := map[string]*v1alpha1.Service{}
	for i := range services.Items {
		byName[services.Items[i].Name] = &services.Items[i]
	}
	cursors := map[string]int64{}
	for _, c := range sub.Status.Cursors {
		cursors[c.Operation] = int64(c.Delivered)
	}
	var queue []pending
	var kept []v1alpha1.DeliveryCursor
	track := func(name string, events []pending, skipped func(pending) bool) {
		cursor, waiting := cursors[name], false
		for _, e := range events {
			switch seq := e.sequence(); {
			case seq <= cursors[name]:
			case !skipped(e):
				queue, waiting = append(queue, e), true
			case !waiting:
				cursor = seq
			}
		}
		kept = append(kept, v1alpha1.DeliveryCursor{Operation: name, Delivered: int32(cursor)})
	}
	for i := range ops.Items {
		op := &ops.Items[i]
		if op.Labels[v1alpha1.LabelOccurrence] != "" || !wants(sub, v1alpha1.NotificationOccurrence) || !selects(sub.Spec.Filter, op, byName[op.Spec.ServiceName]) {
			continue
		}
		events := make([]pending, len(op.Status.Transitions))
		for k, tr := range op.Status.Transitions {
			events[k] = pending{op: op, index: k, at: tr.Time.Time}
		}
		track(op.Name, events, func(e pending) bool { return skips(sub, op.Status.Transitions[e.index]) })
	}
	for _, svc := range byName {
		if !wants(sub, v1alpha1.NotificationCreation) && !wants(sub, v1alpha1.NotificationDeletion) || !selectsService(sub.Spec.Filter, svc) {
			continue
		}
		events := []pending{{svc: svc, seq: identifierCreated, at: svc.CreationTimestamp.Time}}
		if svc.DeletionTimestamp != nil {
			// After every transition of the Service (a deletion time is in whole seconds).
			events = append(events, pending{svc: svc, seq: identifierDeleted, at: svc.DeletionTimestamp.Add(time.Second)})
		}
		track(serviceCursor(svc.Name), events, func(e pending) bool { return skipsIdentifier(sub, e) })
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Operation < kept[j].Operation })
	sub.Status.Cursors = kept
	sort.SliceStable(queue, func(i, j int) bool {
		a, b := queue[i], queue[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		if a.cursor() != b.cursor() {
			return a.cursor() < b.cursor()
		}
		return a.sequence() < b.sequence()
	})
	return queue, nil
}

// wants tells whether a subscription asks for a type of notification: those its
// notificationTypes name; with none, occurrence notifications, and — for a subscription
// made through the NFV API — every type, as SOL003 says.
func wants(sub *v1alpha1.LifecycleSubscription, t v1alpha1.NotificationType) bool {
	if len(sub.Spec.NotificationTypes) == 0 {
		return t == v1alpha1.NotificationOccurrence || sub.Spec.APIRoot != ""
	}
	return slices.Contains(sub.Spec.NotificationTypes, t)
}

// selects tells whether a subscription's filter selects an occurrence (of svc, nil when
// gone).
func selects(f *v1alpha1.SubscriptionFilter, op *v1alpha1.Operation, svc *v1alpha1.Service) bool {
	if f == nil {
		return true
	}
	return (len(f.ServiceNames) == 0 || slices.Contains(f.ServiceNames, op.Spec.ServiceName)) &&
		(len(f.OperationTypes) == 0 || slices.Contains(f.OperationTypes, op.Spec.Type)) &&
		selectsInstance(f, svc)
}

// selectsService tells whether a subscription's filter selects a Service's identifier
// notifications (operation types and states do not apply to them).
func selectsService(f *v1alpha1.SubscriptionFilter, svc *v1alpha1.Service) bool {
	return f == nil || (len(f.ServiceNames) == 0 || slices.Contains(f.ServiceNames, svc.Name)) && selectsInstance(f, svc)
}

// selectsInstance applies the filter's VNFD ids and instance names to a Service.
func selectsInstance(f *v1alpha1.SubscriptionFilter, svc *v1alpha1.Service) bool {
	if len(f.VnfdIDs) == 0 && len(f.VnfInstanceNames) == 0 {
		return true
	}
	if svc == nil {
		return false
	}
	return (len(f.VnfdIDs) == 0 || slices.Contains(f.VnfdIDs, VnfdIDOf(svc))) &&
		(len(f.VnfInstanceNames) == 0 || slices.Contains(f.VnfInstanceNames, svc.Annotations[v1alpha1.AnnotationVnfInstanceName]))
}

// VnfdIDOf is the VNFD id of a Service: the package its source names, else its VNFD's.
func VnfdIDOf(svc *v1alpha1.Service) string {
	if ref := svc.Spec.Source.VnfPackage; ref != nil {
		return ref.VnfdID
	}
	if svc.Status.VNF != nil {
		return svc.Status.VNF.VnfdID
	}
	return ""
}

// skips tells whether a subscription does not want a transition: one of a state its
// filter leaves out, or older than the subscription.
func skips(sub *v1alpha1.LifecycleSubscription, tr v1alpha1.StateTransition) bool {
	if f := sub.Spec.Filter; f != nil && len(f.OperationStates) > 0 && !slices.Contains(f.OperationStates, tr.State) {
		return true
	}
	return tr.Time.Time.Before(sub.CreationTimestamp.Time)
}

// skipsIdentifier tells whether a subscription does not want a Service's creation or
// deletion: a type it does not ask for, or a Service made before it (its deletion is sent).
func skipsIdentifier(sub *v1alpha1.LifecycleSubscription, e pending) bool {
	if e.seq == identifierDeleted {
		return !wants(sub, v1alpha1.NotificationDeletion)
	}
	return !wants(sub, v1alpha1.NotificationCreation) || e.svc.CreationTimestamp.Before(&sub.CreationTimestamp)
}

// delivered moves the cursor past a delivered notification.
func (n *Notifier) delivered(sub *v1alpha1.LifecycleSubscription, p pending) {
	seq := p.sequence()
	for i := range sub.Status.Cursors {
		if sub.Status.Cursors[i].Operation == p.cursor() {
			sub.Status.Cursors[i].Delivered = int32(seq)
		}
	}
	now := metav1.NewTime(n.Now())
	sub.Status.Delivered++
	sub.Status.Failures, sub.Status.LastError, sub.Status.NextAttemptTime = 0, "", nil
	sub.Status.LastDelivered = p.id()
	sub.Status.LastDeliveryTime = &now
}

// failed records a failed delivery and when it is tried again; it returns the wait and
// the reason of the Ready condition. An endpoint whose circuit is open is not tried
// before it closes.
func (n *Notifier) failed(sub *v1alpha1.LifecycleSubscription, err error) (time.Duration, string) {
	sub.Status.Failures++
	now := n.Now()
	wait := n.Backoff.Delay(int(sub.Status.Failures))
	reason := v1alpha1.SubscriptionDeliveryFailed
	var open *outbound.CircuitOpenError
	var refused *outbound.RefusedError
	var credentials *credentialsError
	switch {
	case errors.As(err, &open):
		wait = max(wait, open.Until.Sub(now))
	case errors.As(err, &refused):
		reason = v1alpha1.SubscriptionCallbackRefused
	case errors.As(err, &credentials):
		reason = v1alpha1.SubscriptionCredentialsRefused
	}
	next := metav1.NewTime(now.Add(wait))
	sub.Status.NextAttemptTime = &next
	sub.Status.LastError = text.Truncate(fmt.Sprintf("%v (attempt %d; next in %v)", err, sub.Status.Failures, wait), 1024)
	return wait, reason
}

// readyReason is the reason the Ready condition has, for a reconcile that sends nothing.
func readyReason(sub *v1alpha1.LifecycleSubscription) string {
	if ready := apimeta.FindStatusCondition(sub.Status.Conditions, v1alpha1.ConditionReady); ready != nil {
		return ready.Reason
	}
	return v1alpha1.SubscriptionDelivering
}

// setSubscriptionReady words the subscription's Ready condition: True while every
// delivery succeeds, else False with the reason of the failure.
func setSubscriptionReady(sub *v1alpha1.LifecycleSubscription, reason string) {
	condition := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.SubscriptionDelivering,
		Message: fmt.Sprintf("%d notifications delivered", sub.Status.Delivered), ObservedGeneration: sub.Generation}
	if sub.Status.Failures > 0 {
		condition.Status, condition.Reason = metav1.ConditionFalse, reason
		if reason == v1alpha1.SubscriptionDelivering {
			condition.Reason = v1alpha1.SubscriptionDeliveryFailed
		}
		condition.Message = fmt.Sprintf("%d notifications wait: %s", sub.Status.Pending, sub.Status.LastError)
	}
	apimeta.SetStatusCondition(&sub.Status.Conditions, condition)
}

func (n *Notifier) save(ctx context.Context, before, sub *v1alpha1.LifecycleSubscription) error {
	if equalStatus(before.Status, sub.Status) {
		return nil
	}
	return client.IgnoreNotFound(n.Status().Patch(ctx, sub, client.MergeFrom(before)))
}

func equalStatus(a, b v1alpha1.LifecycleSubscriptionStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// deliver POSTs a notification to the subscription's endpoint through the outbound
// client, with the subscription's credentials; a 2xx answer delivers it.
func (n *Notifier) deliver(ctx context.Context, sub *v1alpha1.LifecycleSubscription, notification any) error {
	body, err := json.Marshal(notification)
	if err != nil {
		return err
	}
	auth, err := n.credentials(ctx, sub)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Spec.CallbackURI, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Version", "2.0.0")
	resp, err := n.Outbound.Do(req, auth)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%s answered %s", sub.Spec.CallbackURI, resp.Status)
	}
	return nil
}

// credentialsError says that the subscription's Secret cannot be used: nothing is sent.
type credentialsError struct {
	secret string
	err    error
}

func (e *credentialsError) Error() string {
	return fmt.Sprintf("credentials Secret %s: %v", e.secret, e.err)
}

func (e *credentialsError) Unwrap() error { return e.err }

// credentials reads the subscription's Secret as the subscription acts (see
// Notifier.CredentialsReader) into the request's authentication: "token" (bearer) or
// "username" and "password" (basic), and "ca.crt" to trust.
func (n *Notifier) credentials(ctx context.Context, sub *v1alpha1.LifecycleSubscription) (outbound.Auth, error) {
	ref := sub.Spec.SecretRef
	if ref == nil {
		return outbound.Auth{}, nil
	}
	reader, labelled := client.Reader(nil), true
	if n.CredentialsReader != nil {
		r, err := n.CredentialsReader(sub)
		if err != nil {
			return outbound.Auth{}, &credentialsError{secret: ref.Name, err: err}
		}
		reader, labelled = r, r == nil
	}
	if reader == nil {
		reader = n.APIReader
	}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: ref.Name}, secret); err != nil {
		return outbound.Auth{}, &credentialsError{secret: ref.Name, err: err}
	}
	if labelled && secret.Labels[v1alpha1.LabelSecretUse] != v1alpha1.SecretUseSubscriptions {
		return outbound.Auth{}, &credentialsError{secret: ref.Name, err: fmt.Errorf("not labelled %s=%s: the operator sends no other Secret for a subscription",
			v1alpha1.LabelSecretUse, v1alpha1.SecretUseSubscriptions)}
	}
	auth := outbound.Auth{CA: secret.Data["ca.crt"]}
	switch {
	case len(secret.Data["token"]) > 0:
		auth.Bearer = string(secret.Data["token"])
	case len(secret.Data["username"]) > 0:
		auth.Basic = &outbound.BasicAuth{Username: string(secret.Data["username"]), Password: string(secret.Data["password"])}
	}
	return auth, nil
}
