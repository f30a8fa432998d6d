package lifecycle

import (
	"fmt"
	"strings"
	"time"

	"calaf.io/calaf/api/v1alpha1"
)

// Notification is a SOL003 VnfLcmOperationOccurrenceNotification: one state an operation
// occurrence entered. Calaf's own details are under "calaf" (SOL003 lets notifications
// carry extensions).
type Notification struct {
	ID                 string `json:"id"`
	NotificationType   string `json:"notificationType"`
	SubscriptionID     string `json:"subscriptionId"`
	TimeStamp          string `json:"timeStamp"`
	NotificationStatus string `json:"notificationStatus"`
	OperationState     string `json:"operationState"`
	// VnfInstanceID is the Service, "<namespace>/<name>".
	VnfInstanceID string `json:"vnfInstanceId"`
	// Operation is the SOL003 LcmOperationType (CUSTOM for a node operation).
	Operation             string `json:"operation"`
	IsAutomaticInvocation bool   `json:"isAutomaticInvocation"`
	Verbosity             string `json:"verbosity"`
	// VnfLcmOpOccID is the occurrence, "<namespace>/<name>".
	VnfLcmOpOccID string `json:"vnfLcmOpOccId"`
	// AffectedVnfcs are the pods the occurrence changed (RESULT, verbosity FULL).
	AffectedVnfcs []AffectedVnfc  `json:"affectedVnfcs,omitempty"`
	Error         *ProblemDetails `json:"error,omitempty"`
	Links         Links           `json:"_links"`
	Calaf         Extension       `json:"calaf"`
}

// AffectedVnfc is a pod an occurrence added, removed or replaced.
type AffectedVnfc struct {
	ID              string         `json:"id"`
	VduID           string         `json:"vduId"`
	ChangeType      string         `json:"changeType"`
	ComputeResource ResourceHandle `json:"computeResource"`
}

// ResourceHandle names a pod.
type ResourceHandle struct {
	ResourceID           string `json:"resourceId"`
	VimLevelResourceType string `json:"vimLevelResourceType"`
}

// IdentifierNotification is a SOL003 VnfIdentifierCreationNotification or
// VnfIdentifierDeletionNotification: a Service made or deleted.
type IdentifierNotification struct {
	ID               string `json:"id"`
	NotificationType string `json:"notificationType"`
	SubscriptionID   string `json:"subscriptionId"`
	TimeStamp        string `json:"timeStamp"`
	VnfInstanceID    string `json:"vnfInstanceId"`
	Links            Links  `json:"_links"`
}

// ProblemDetails is SOL013's ProblemDetails: why an occurrence failed.
type ProblemDetails struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// Links are the notification's links: the NFV API's resources for a subscription made
// there (spec.apiRoot), else API paths of the Kubernetes resources.
type Links struct {
	VnfInstance  Link  `json:"vnfInstance"`
	Subscription Link  `json:"subscription"`
	VnfLcmOpOcc  *Link `json:"vnfLcmOpOcc,omitempty"`
}

// Link is a link.
type Link struct {
	Href string `json:"href"`
}

// Extension is what Calaf adds: where the occurrence stands, and the alert that
// triggered it.
type Extension struct {
	Namespace  string `json:"namespace"`
	Service    string `json:"service"`
	Occurrence string `json:"occurrence"`
	Type       string `json:"type"`
	Message    string `json:"message,omitempty"`
	// Transition is the transition's sequence number (from 1).
	Transition  int64  `json:"transition"`
	TriggeredBy string `json:"triggeredBy,omitempty"`
}

// sol003Operations maps Calaf's types to SOL003's LcmOperationType.
var sol003Operations = map[v1alpha1.OperationType]string{
	v1alpha1.OperationInstantiate: "INSTANTIATE", v1alpha1.OperationChangeFlavour: "CHANGE_FLAVOUR", v1alpha1.OperationScale: "SCALE", v1alpha1.OperationScaleToLevel: "SCALE_TO_LEVEL", v1alpha1.OperationHeal: "HEAL",
	v1alpha1.OperationChangePackage: "CHANGE_VNFPKG", v1alpha1.OperationModify: "MODIFY_INFO", v1alpha1.OperationOperate: "OPERATE",
	v1alpha1.OperationTerminate: "TERMINATE", v1alpha1.OperationCustom: "CUSTOM",
}

// notificationID is the id of the notification of an occurrence's transition of sequence
// number seq: the same whenever it is sent again.
func notificationID(op *v1alpha1.Operation, seq int64) string {
	return fmt.Sprintf("%s-%d", op.UID, seq)
}

// notificationOf builds the notification of an occurrence's i-th transition for a
// subscription.
func notificationOf(sub *v1alpha1.LifecycleSubscription, op *v1alpha1.Operation, i int) Notification {
	tr := op.Status.Transitions[i]
	ids := idsOf(sub)
	n := Notification{
		ID:               notificationID(op, Sequence(op, i)),
		NotificationType: string(v1alpha1.NotificationOccurrence), SubscriptionID: ids.subscription(),
		TimeStamp:          tr.Time.UTC().Format(time.RFC3339Nano),
		NotificationStatus: "RESULT", OperationState: string(tr.State),
		VnfInstanceID: ids.instance(op.Namespace, op.Spec.ServiceName), Operation: sol003Operations[op.Spec.Type],
		IsAutomaticInvocation: op.Spec.TriggeredBy != nil, Verbosity: verbosity(sub),
		VnfLcmOpOccID: ids.occurrence(op),
		Links:         ids.links(op.Namespace, op.Spec.ServiceName, op.Name),
		Calaf:         Extension{Namespace: op.Namespace, Service: op.Spec.ServiceName, Occurrence: op.Name, Type: string(op.Spec.Type), Message: tr.Message, Transition: Sequence(op, i)},
	}
	switch tr.State {
	case v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateRollingBack:
		n.NotificationStatus = "START"
	case v1alpha1.StateFailedTemp, v1alpha1.StateFailed, v1alpha1.StateRolledBack:
		n.Error = &ProblemDetails{Title: string(tr.State), Status: 500, Detail: tr.Message}
	}
	if n.NotificationStatus == "RESULT" && n.Verbosity == "FULL" {
		for _, p := range op.Status.AffectedPods {
			n.AffectedVnfcs = append(n.AffectedVnfcs, AffectedVnfc{ID: p.Pod, VduID: p.Node, ChangeType: string(p.ChangeType),
				ComputeResource: ResourceHandle{ResourceID: p.Pod, VimLevelResourceType: "Pod"}})
		}
	}
	if by := op.Spec.TriggeredBy; by != nil {
		n.Calaf.TriggeredBy = fmt.Sprintf("alert %s (rule %s)", by.AlertName, by.Rule)
	}
	return n
}

// identifierNotificationOf builds the notification that a Service was made (seq 1) or
// deleted (seq 2).
func identifierNotificationOf(sub *v1alpha1.LifecycleSubscription, svc *v1alpha1.Service, seq int64) IdentifierNotification {
	ids := idsOf(sub)
	n := IdentifierNotification{ID: fmt.Sprintf("%s-%s", svc.UID, identifierEvents[seq]), NotificationType: string(v1alpha1.NotificationCreation),
		SubscriptionID: ids.subscription(), TimeStamp: svc.CreationTimestamp.UTC().Format(time.RFC3339Nano),
		VnfInstanceID: ids.instance(svc.Namespace, svc.Name), Links: ids.links(svc.Namespace, svc.Name, "")}
	if seq == identifierDeleted {
		n.NotificationType = string(v1alpha1.NotificationDeletion)
		if svc.DeletionTimestamp != nil {
			n.TimeStamp = svc.DeletionTimestamp.UTC().Format(time.RFC3339Nano)
		}
	}
	return n
}

// The sequence numbers of a Service's identifier notifications.
const (
	identifierCreated int64 = 1
	identifierDeleted int64 = 2
)

var identifierEvents = map[int64]string{identifierCreated: "created", identifierDeleted: "deleted"}

func verbosity(sub *v1alpha1.LifecycleSubscription) string {
	if sub.Spec.Verbosity == "SHORT" {
		return "SHORT"
	}
	return "FULL"
}

// ids names resources in a subscription's notifications: as the NFV API does when the
// subscription was made there (names; links under its root), else as Kubernetes does
// ("namespace/name"; API paths).
type ids struct {
	sub  *v1alpha1.LifecycleSubscription
	root string
}

func idsOf(sub *v1alpha1.LifecycleSubscription) ids {
	return ids{sub: sub, root: strings.TrimSuffix(sub.Spec.APIRoot, "/")}
}

func (i ids) subscription() string {
	if i.root != "" {
		return i.sub.Name
	}
	return string(i.sub.UID)
}

func (i ids) instance(namespace, service string) string {
	if i.root != "" {
		return service
	}
	return namespace + "/" + service
}

func (i ids) occurrence(op *v1alpha1.Operation) string {
	if i.root != "" {
		return op.Name
	}
	return op.Namespace + "/" + op.Name
}

// links of an occurrence's (op non-empty) or a Service's notification.
func (i ids) links(namespace, service, op string) Links {
	var l Links
	if i.root != "" {
		l.VnfInstance.Href = i.root + "/vnflcm/v2/vnf_instances/" + service
		l.Subscription.Href = i.root + "/vnflcm/v2/subscriptions/" + i.sub.Name
		if op != "" {
			l.VnfLcmOpOcc = &Link{Href: i.root + "/vnflcm/v2/vnf_lcm_op_occs/" + op}
		}
		return l
	}
	l.VnfInstance.Href = fmt.Sprintf("/apis/calaf.io/v1alpha1/namespaces/%s/services/%s", namespace, service)
	l.Subscription.Href = fmt.Sprintf("/apis/calaf.io/v1alpha1/namespaces/%s/lifecyclesubscriptions/%s", i.sub.Namespace, i.sub.Name)
	if op != "" {
		l.VnfLcmOpOcc = &Link{Href: fmt.Sprintf("/apis/calaf.io/v1alpha1/namespaces/%s/operations/%s", namespace, op)}
	}
	return l
}
