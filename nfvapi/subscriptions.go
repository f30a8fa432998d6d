package nfvapi

import (
	"context"
	"net/http"
	"sort"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/nfvapi/sol013"
)

// CallbackTester checks a subscription's callback URI before the subscription is made
// (SOL013: a GET that the endpoint answers 204), with the credentials notifications will
// carry, through the operator's guarded outbound client.
type CallbackTester interface {
	TestCallback(ctx context.Context, uri string, auth *CallbackAuth) error
}

// CallbackAuth is how a callback is authenticated.
type CallbackAuth struct {
	Type                   v1alpha1.AuthType
	Username, Password     string
	ClientID, ClientSecret string
	TokenEndpoint          string
}

// LccnSubscriptionRequest is SOL003's LccnSubscriptionRequest.
type LccnSubscriptionRequest struct {
	Filter         *LifecycleChangeNotificationsFilter `json:"filter,omitempty"`
	CallbackURI    string                              `json:"callbackUri"`
	Authentication *SubscriptionAuthentication         `json:"authentication,omitempty"`
	Verbosity      string                              `json:"verbosity,omitempty"`
}

// LifecycleChangeNotificationsFilter is SOL003's filter of a subscription.
type LifecycleChangeNotificationsFilter struct {
	VnfInstanceSubscriptionFilter *VnfInstanceSubscriptionFilter `json:"vnfInstanceSubscriptionFilter,omitempty"`
	NotificationTypes             []string                       `json:"notificationTypes,omitempty"`
	OperationTypes                []string                       `json:"operationTypes,omitempty"`
	OperationStates               []string                       `json:"operationStates,omitempty"`
}

// VnfInstanceSubscriptionFilter selects VNF instances.
type VnfInstanceSubscriptionFilter struct {
	VnfdIDs                  []string `json:"vnfdIds,omitempty"`
	VnfProductsFromProviders []any    `json:"vnfProductsFromProviders,omitempty"`
	VnfInstanceIDs           []string `json:"vnfInstanceIds,omitempty"`
	VnfInstanceNames         []string `json:"vnfInstanceNames,omitempty"`
}

// SubscriptionAuthentication is SOL013's SubscriptionAuthentication.
type SubscriptionAuthentication struct {
	AuthType                      []string                       `json:"authType"`
	ParamsBasic                   *ParamsBasic                   `json:"paramsBasic,omitempty"`
	ParamsOauth2ClientCredentials *ParamsOauth2ClientCredentials `json:"paramsOauth2ClientCredentials,omitempty"`
}

type ParamsBasic struct {
	UserName string `json:"userName"`
	Password string `json:"password"`
}

type ParamsOauth2ClientCredentials struct {
	ClientID       string `json:"clientId"`
	ClientPassword string `json:"clientPassword"`
	TokenEndpoint  string `json:"tokenEndpoint"`
}

// LccnSubscription is SOL003's LccnSubscription: what a subscription shows (never its
// credentials).
type LccnSubscription struct {
	ID          string                              `json:"id"`
	Filter      *LifecycleChangeNotificationsFilter `json:"filter,omitempty"`
	CallbackURI string                              `json:"callbackUri"`
	Verbosity   string                              `json:"verbosity"`
	Links       struct {
		Self Link `json:"self"`
	} `json:"_links"`
}

var subscriptionShape = shapeOf(LccnSubscription{}, []string{"id", "callbackUri", "verbosity", "_links"}, nil)

const subscriptions, subscription = "/vnflcm/v2/subscriptions", "/vnflcm/v2/subscriptions/{id}"

func (s *Server) routeSubscriptions() {
	s.route("GET "+subscriptions, s.listSubscriptions)
	s.route("POST "+subscriptions, s.createSubscription)
	s.route("GET "+subscription, s.showSubscription)
	s.route("DELETE "+subscription, s.deleteSubscription)
}

func (s *Server) subscriptionMethods() map[string][]string {
	return map[string][]string{subscriptions: {"GET", "POST"}, subscription: {"GET", "DELETE"}}
}

// fromSOL003 are Calaf's occurrence types by SOL003 name (the ones Calaf carries out).
var fromSOL003 = func() map[string]v1alpha1.OperationType {
	m := map[string]v1alpha1.OperationType{}
	for t, name := range sol003Operations {
		m[name] = t
	}
	return m
}()

// createSubscription makes a LifecycleSubscription (and a Secret of its credentials,
// owned by it) once its callback answered the test GET.
func (s *Server) createSubscription(r *request) (int, any, error) {
	var req LccnSubscriptionRequest
	if err := r.decode(&req); err != nil {
		return 0, nil, err
	}
	spec, auth, err := subscriptionSpec(req, r.base(s))
	if err != nil {
		return 0, nil, err
	}
	if s.cfg.Callbacks != nil {
		if err := s.cfg.Callbacks.TestCallback(r.Context(), req.CallbackURI, auth); err != nil {
			return 0, nil, sol013.Errorf(http.StatusBadRequest, "the callback URI did not pass the test GET (it must answer 204): %v", err)
		}
	}
	sub := &v1alpha1.LifecycleSubscription{ObjectMeta: metav1.ObjectMeta{Name: uuid.NewString(), Namespace: r.caller.Namespace}, Spec: *spec}
	if auth != nil {
		sub.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: sub.Name + "-credentials"}
	}
	if err := r.client.Create(r.Context(), sub); err != nil {
		return 0, nil, err
	}
	if auth != nil {
		if err := r.credentialsSecret(sub, auth); err != nil {
			_ = r.client.Delete(context.WithoutCancel(r.Context()), sub)
			return 0, nil, err
		}
	}
	base := r.base(s)
	r.header.Set("Location", base+"/vnflcm/v2/subscriptions/"+sub.Name)
	return http.StatusCreated, subscriptionView(base, sub), nil
}

// subscriptionSpec reads a subscription request: 400 for what is malformed, 422 for what
// this VNFM cannot deliver.
func subscriptionSpec(req LccnSubscriptionRequest, base string) (*v1alpha1.LifecycleSubscriptionSpec, *CallbackAuth, error) {
	if req.CallbackURI == "" {
		return nil, nil, sol013.Errorf(http.StatusBadRequest, "callbackUri is required")
	}
	spec := &v1alpha1.LifecycleSubscriptionSpec{CallbackURI: req.CallbackURI, APIRoot: base, Verbosity: req.Verbosity}
	if req.Verbosity != "" && req.Verbosity != "FULL" && req.Verbosity != "SHORT" {
		return nil, nil, sol013.Errorf(http.StatusBadRequest, "verbosity must be FULL or SHORT, not %q", req.Verbosity)
	}
	if f := req.Filter; f != nil {
		filter, types, err := subscriptionFilter(f)
		if err != nil {
			return nil, nil, err
		}
		spec.Filter, spec.NotificationTypes = filter, types
	}
	auth, err := callbackAuth(req.Authentication)
	if err != nil {
		return nil, nil, err
	}
	if auth != nil {
		spec.Authentication = &v1alpha1.SubscriptionAuthentication{Type: auth.Type, TokenEndpoint: auth.TokenEndpoint}
	}
	return spec, auth, nil
}

func subscriptionFilter(f *LifecycleChangeNotificationsFilter) (*v1alpha1.SubscriptionFilter, []v1alpha1.NotificationType, error) {
	filter := &v1alpha1.SubscriptionFilter{}
	if i := f.VnfInstanceSubscriptionFilter; i != nil {
		if len(i.VnfProductsFromProviders) > 0 {
			return nil, nil, sol013.Errorf(http.StatusUnprocessableEntity, "vnfProductsFromProviders is not available as a filter here: filter by vnfdIds")
		}
		filter.ServiceNames, filter.VnfdIDs, filter.VnfInstanceNames = i.VnfInstanceIDs, i.VnfdIDs, i.VnfInstanceNames
	}
	for _, name := range f.OperationTypes {
		t, ok := fromSOL003[name]
		if !ok {
			return nil, nil, sol013.Errorf(http.StatusUnprocessableEntity, "operation type %q never occurs on this VNFM", name)
		}
		filter.OperationTypes = append(filter.OperationTypes, t)
	}
	for _, state := range f.OperationStates {
		switch st := v1alpha1.OperationState(state); st {
		case v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateCompleted, v1alpha1.StateFailedTemp,
			v1alpha1.StateFailed, v1alpha1.StateRollingBack, v1alpha1.StateRolledBack:
			filter.OperationStates = append(filter.OperationStates, st)
		default:
			return nil, nil, sol013.Errorf(http.StatusBadRequest, "%q is not an operation state", state)
		}
	}
	var types []v1alpha1.NotificationType
	for _, t := range f.NotificationTypes {
		switch nt := v1alpha1.NotificationType(t); nt {
		case v1alpha1.NotificationOccurrence, v1alpha1.NotificationCreation, v1alpha1.NotificationDeletion:
			types = append(types, nt)
		default:
			return nil, nil, sol013.Errorf(http.StatusBadRequest, "%q is not a VNF LCM notification type", t)
		}
	}
	return filter, types, nil
}

func callbackAuth(a *SubscriptionAuthentication) (*CallbackAuth, error) {
	if a == nil || len(a.AuthType) == 0 {
		return nil, nil
	}
	for _, t := range a.AuthType {
		switch v1alpha1.AuthType(t) {
		case v1alpha1.AuthBasic:
			if p := a.ParamsBasic; p != nil && p.UserName != "" {
				return &CallbackAuth{Type: v1alpha1.AuthBasic, Username: p.UserName, Password: p.Password}, nil
			}
			return nil, sol013.Errorf(http.StatusBadRequest, "BASIC authentication needs paramsBasic with a userName")
		case v1alpha1.AuthOAuth2:
			if p := a.ParamsOauth2ClientCredentials; p != nil && p.ClientID != "" && p.TokenEndpoint != "" {
				return &CallbackAuth{Type: v1alpha1.AuthOAuth2, ClientID: p.ClientID, ClientSecret: p.ClientPassword, TokenEndpoint: p.TokenEndpoint}, nil
			}
			return nil, sol013.Errorf(http.StatusBadRequest, "OAUTH2_CLIENT_CREDENTIALS needs paramsOauth2ClientCredentials with a clientId and a tokenEndpoint")
		}
	}
	return nil, sol013.Errorf(http.StatusUnprocessableEntity, "authType %v: only BASIC and OAUTH2_CLIENT_CREDENTIALS are available", a.AuthType)
}

// credentialsSecret keeps a subscription's credentials in a Secret it owns, labelled for
// the use notifications make of it.
func (r *request) credentialsSecret(sub *v1alpha1.LifecycleSubscription, auth *CallbackAuth) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sub.Spec.SecretRef.Name, Namespace: sub.Namespace,
		Labels: map[string]string{v1alpha1.LabelSecretUse: v1alpha1.SecretUseSubscriptions}}, Type: corev1.SecretTypeOpaque,
		StringData: map[string]string{}}
	switch auth.Type {
	case v1alpha1.AuthBasic:
		secret.StringData["username"], secret.StringData["password"] = auth.Username, auth.Password
	case v1alpha1.AuthOAuth2:
		secret.StringData["clientId"], secret.StringData["clientSecret"] = auth.ClientID, auth.ClientSecret
	}
	if err := controllerutil.SetOwnerReference(sub, secret, r.client.Scheme()); err != nil {
		return err
	}
	return r.client.Create(r.Context(), secret)
}

// subscriptionView is the LccnSubscription of a LifecycleSubscription.
func subscriptionView(base string, sub *v1alpha1.LifecycleSubscription) LccnSubscription {
	v := LccnSubscription{ID: sub.Name, CallbackURI: sub.Spec.CallbackURI, Verbosity: sub.Spec.Verbosity}
	if v.Verbosity == "" {
		v.Verbosity = "FULL"
	}
	v.Links.Self.Href = base + "/vnflcm/v2/subscriptions/" + sub.Name
	f := sub.Spec.Filter
	if f == nil && len(sub.Spec.NotificationTypes) == 0 {
		return v
	}
	v.Filter = &LifecycleChangeNotificationsFilter{}
	for _, t := range sub.Spec.NotificationTypes {
		v.Filter.NotificationTypes = append(v.Filter.NotificationTypes, string(t))
	}
	if f == nil {
		return v
	}
	if len(f.ServiceNames)+len(f.VnfdIDs)+len(f.VnfInstanceNames) > 0 {
		v.Filter.VnfInstanceSubscriptionFilter = &VnfInstanceSubscriptionFilter{VnfdIDs: f.VnfdIDs, VnfInstanceIDs: f.ServiceNames, VnfInstanceNames: f.VnfInstanceNames}
	}
	for _, t := range f.OperationTypes {
		v.Filter.OperationTypes = append(v.Filter.OperationTypes, sol003Operations[t])
	}
	for _, st := range f.OperationStates {
		v.Filter.OperationStates = append(v.Filter.OperationStates, string(st))
	}
	return v
}

func (s *Server) listSubscriptions(r *request) (int, any, error) {
	q, err := parseQuery(r, subscriptionShape)
	if err != nil {
		return 0, nil, err
	}
	list := &v1alpha1.LifecycleSubscriptionList{}
	if err := r.client.List(r.Context(), list, client.InNamespace(r.caller.Namespace)); err != nil {
		return 0, nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	base := r.base(s)
	return q.page(r, s, len(list.Items), func(i int) (string, any) { return list.Items[i].Name, subscriptionView(base, &list.Items[i]) })
}

func (s *Server) showSubscription(r *request) (int, any, error) {
	sub, err := r.subscription(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, subscriptionView(r.base(s), sub), nil
}

func (s *Server) deleteSubscription(r *request) (int, any, error) {
	sub, err := r.subscription(r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if err := r.client.Delete(r.Context(), sub); err != nil && !apierrors.IsNotFound(err) {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func (r *request) subscription(id string) (*v1alpha1.LifecycleSubscription, error) {
	sub := &v1alpha1.LifecycleSubscription{}
	err := r.client.Get(r.Context(), client.ObjectKey{Namespace: r.caller.Namespace, Name: id}, sub)
	if apierrors.IsNotFound(err) {
		return nil, sol013.Errorf(http.StatusNotFound, "there is no subscription %q in namespace %s", id, r.caller.Namespace)
	}
	return sub, err
}
