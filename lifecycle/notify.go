package lifecycle

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/internal/text"
)

// Notifier delivers to each LifecycleSubscription the notifications of the occurrences
// of its namespace that it selects: every transition an occurrence recorded since the
// subscription was created, each occurrence's in order, retrying the next one with
// backoff until the endpoint takes it (at least once: a notification's id tells a
// repeat). Where each occurrence stands is kept in the subscription's status, so an
// operator restart resumes there.
type Notifier struct {
	client.Client
	// APIReader reads the subscriptions (where the cache may be behind) and the
	// credentials Secrets (the cache holds only Calaf's objects).
	APIReader client.Reader
	Log       logr.Logger
	// BaseBackoff and MaxBackoff bound the wait before a failed delivery is tried again
	// (default 1 s and 5 min).
	BaseBackoff, MaxBackoff time.Duration
	// Timeout bounds one delivery (default 10 s).
	Timeout time.Duration
	Now     func() time.Time
}

// maxPerReconcile bounds the notifications one reconcile delivers.
const maxPerReconcile = 20

// SetupWithManager registers the notifier: every change of an Operation looks at the
// subscriptions of its namespace.
func (n *Notifier) SetupWithManager(mgr ctrl.Manager) error {
	if n.BaseBackoff <= 0 {
		n.BaseBackoff = time.Second
	}
	if n.MaxBackoff <= 0 {
		n.MaxBackoff = 5 * time.Minute
	}
	if n.Timeout <= 0 {
		n.Timeout = 10 * time.Second
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("notifications").
		For(&v1alpha1.LifecycleSubscription{}).
		Watches(&v1alpha1.Operation{}, handler.EnqueueRequestsFromMapFunc(n.subscriptionsOf)).
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

// pending is a notification to deliver.
type pending struct {
	op    *v1alpha1.Operation
	index int
}

// Reconcile delivers the subscription's pending notifications in order, and records what
// it delivered and what failed. The subscription is read from the API server, not the
// cache: a cache behind the last delivery's status patch would send it again.
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
	result := ctrl.Result{}
	delivered := 0
	for _, p := range queue {
		if delivered == maxPerReconcile {
			result.RequeueAfter = time.Millisecond
			break
		}
		if err := n.deliver(ctx, sub, notificationOf(sub, p.op, p.index)); err != nil {
			result.RequeueAfter = n.failed(sub, err)
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
	setSubscriptionReady(sub)
	return result, n.save(ctx, before, sub)
}

// pending lists what the subscription has not delivered, in order of the transitions,
// and moves its cursors past what it does not select (other states, transitions older
// than the subscription).
func (n *Notifier) pending(ctx context.Context, sub *v1alpha1.LifecycleSubscription) ([]pending, error) {
	list := &v1alpha1.OperationList{}
	if err := n.List(ctx, list, client.InNamespace(sub.Namespace)); err != nil {
		return nil, err
	}
	cursors := map[string]int32{}
	for _, c := range sub.Status.Cursors {
		cursors[c.Operation] = c.Delivered
	}
	var queue []pending
	var kept []v1alpha1.DeliveryCursor
	for i := range list.Items {
		op := &list.Items[i]
		if op.Labels[v1alpha1.LabelOccurrence] != "" || !selects(sub.Spec.Filter, op) {
			continue
		}
		next := int(cursors[op.Name])
		for next < len(op.Status.Transitions) && skips(sub, op.Status.Transitions[next]) {
			next++
		}
		for k := next; k < len(op.Status.Transitions); k++ {
			if !skips(sub, op.Status.Transitions[k]) {
				queue = append(queue, pending{op: op, index: k})
			}
		}
		kept = append(kept, v1alpha1.DeliveryCursor{Operation: op.Name, Delivered: int32(next)})
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].Operation < kept[j].Operation })
	sub.Status.Cursors = kept
	sort.SliceStable(queue, func(i, j int) bool {
		a, b := queue[i].op.Status.Transitions[queue[i].index].Time, queue[j].op.Status.Transitions[queue[j].index].Time
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		if queue[i].op.Name != queue[j].op.Name {
			return queue[i].op.Name < queue[j].op.Name
		}
		return queue[i].index < queue[j].index
	})
	return queue, nil
}

// selects tells whether a subscription's filter selects an occurrence.
func selects(f *v1alpha1.SubscriptionFilter, op *v1alpha1.Operation) bool {
	if f == nil {
		return true
	}
	return (len(f.ServiceNames) == 0 || slices.Contains(f.ServiceNames, op.Spec.ServiceName)) &&
		(len(f.OperationTypes) == 0 || slices.Contains(f.OperationTypes, op.Spec.Type))
}

// skips tells whether a subscription does not want a transition: one of a state its
// filter leaves out, or older than the subscription.
func skips(sub *v1alpha1.LifecycleSubscription, tr v1alpha1.StateTransition) bool {
	if f := sub.Spec.Filter; f != nil && len(f.OperationStates) > 0 && !slices.Contains(f.OperationStates, tr.State) {
		return true
	}
	return tr.Time.Time.Before(sub.CreationTimestamp.Time)
}

// delivered moves the occurrence's cursor past a delivered notification.
func (n *Notifier) delivered(sub *v1alpha1.LifecycleSubscription, p pending) {
	for i := range sub.Status.Cursors {
		if sub.Status.Cursors[i].Operation == p.op.Name {
			sub.Status.Cursors[i].Delivered = int32(p.index + 1)
		}
	}
	now := metav1.NewTime(n.Now())
	sub.Status.Delivered++
	sub.Status.Failures, sub.Status.LastError = 0, ""
	sub.Status.LastDelivered = fmt.Sprintf("%s-%d", p.op.UID, p.index)
	sub.Status.LastDeliveryTime = &now
}

// failed records a failed delivery and returns the wait before the next try.
func (n *Notifier) failed(sub *v1alpha1.LifecycleSubscription, err error) time.Duration {
	sub.Status.Failures++
	wait := n.BaseBackoff
	for i := int32(1); i < sub.Status.Failures && wait < n.MaxBackoff; i++ {
		wait *= 2
	}
	wait = min(wait, n.MaxBackoff)
	sub.Status.LastError = text.Truncate(fmt.Sprintf("%v (attempt %d; next in %v)", err, sub.Status.Failures, wait), 1024)
	return wait
}

// setSubscriptionReady words the subscription's Ready condition.
func setSubscriptionReady(sub *v1alpha1.LifecycleSubscription) {
	condition := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Delivering",
		Message: fmt.Sprintf("%d notifications delivered", sub.Status.Delivered), ObservedGeneration: sub.Generation}
	if sub.Status.Failures > 0 {
		condition.Status, condition.Reason = metav1.ConditionFalse, "DeliveryFailed"
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

// deliver POSTs a notification to the subscription's endpoint, with its credentials; a
// 2xx answer delivers it.
func (n *Notifier) deliver(ctx context.Context, sub *v1alpha1.LifecycleSubscription, notification Notification) error {
	body, err := json.Marshal(notification)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Spec.CallbackURI, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Version", "2.0.0")
	httpClient, err := n.credentials(ctx, sub, req)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
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

// credentials sets the request's authorization from the subscription's Secret and
// returns the client to send it with (trusting the Secret's CA).
func (n *Notifier) credentials(ctx context.Context, sub *v1alpha1.LifecycleSubscription, req *http.Request) (*http.Client, error) {
	var ca []byte
	if ref := sub.Spec.SecretRef; ref != nil {
		secret := &corev1.Secret{}
		if err := n.APIReader.Get(ctx, client.ObjectKey{Namespace: sub.Namespace, Name: ref.Name}, secret); err != nil {
			return nil, fmt.Errorf("credentials Secret %s: %w", ref.Name, err)
		}
		switch {
		case len(secret.Data["token"]) > 0:
			req.Header.Set("Authorization", "Bearer "+string(secret.Data["token"]))
		case len(secret.Data["username"]) > 0:
			req.SetBasicAuth(string(secret.Data["username"]), string(secret.Data["password"]))
		}
		ca = secret.Data["ca.crt"]
	}
	return notificationClient(ca)
}

// notificationClient is an HTTP client that follows no redirect and connects to no
// link-local address (where clouds serve instance metadata and credentials).
func notificationClient(ca []byte) (*http.Client, error) {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: refuseLinkLocal}
	transport := &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 10 * time.Second, MaxIdleConns: 1}
	if len(ca) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("ca.crt of the credentials Secret holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// refuseLinkLocal refuses connections to link-local addresses.
func refuseLinkLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast()) {
		return fmt.Errorf("notifications are not sent to link-local address %s", host)
	}
	return nil
}
