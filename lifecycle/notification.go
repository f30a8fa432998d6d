package lifecycle

import (
	"fmt"
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
	VnfLcmOpOccID string          `json:"vnfLcmOpOccId"`
	Error         *ProblemDetails `json:"error,omitempty"`
	Links         Links           `json:"_links"`
	Calaf         Extension       `json:"calaf"`
}

// ProblemDetails is SOL013's ProblemDetails: why an occurrence failed.
type ProblemDetails struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// Links are the notification's links, API paths of the Kubernetes resources.
type Links struct {
	VnfInstance  Link `json:"vnfInstance"`
	Subscription Link `json:"subscription"`
	VnfLcmOpOcc  Link `json:"vnfLcmOpOcc"`
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
	v1alpha1.OperationScale: "SCALE", v1alpha1.OperationScaleToLevel: "SCALE_TO_LEVEL", v1alpha1.OperationHeal: "HEAL",
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
	n := Notification{
		ID:               notificationID(op, Sequence(op, i)),
		NotificationType: "VnfLcmOperationOccurrenceNotification", SubscriptionID: string(sub.UID),
		TimeStamp:          tr.Time.UTC().Format(time.RFC3339Nano),
		NotificationStatus: "RESULT", OperationState: string(tr.State),
		VnfInstanceID: op.Namespace + "/" + op.Spec.ServiceName, Operation: sol003Operations[op.Spec.Type],
		IsAutomaticInvocation: op.Spec.TriggeredBy != nil, Verbosity: "FULL",
		VnfLcmOpOccID: op.Namespace + "/" + op.Name,
		Links: Links{
			VnfInstance:  Link{Href: fmt.Sprintf("/apis/calaf.io/v1alpha1/namespaces/%s/services/%s", op.Namespace, op.Spec.ServiceName)},
			Subscription: Link{Href: fmt.Sprintf("/apis/calaf.io/v1alpha1/namespaces/%s/lifecyclesubscriptions/%s", sub.Namespace, sub.Name)},
			VnfLcmOpOcc:  Link{Href: fmt.Sprintf("/apis/calaf.io/v1alpha1/namespaces/%s/operations/%s", op.Namespace, op.Name)},
		},
		Calaf: Extension{Namespace: op.Namespace, Service: op.Spec.ServiceName, Occurrence: op.Name, Type: string(op.Spec.Type), Message: tr.Message, Transition: Sequence(op, i)},
	}
	switch tr.State {
	case v1alpha1.StateStarting, v1alpha1.StateProcessing, v1alpha1.StateRollingBack:
		n.NotificationStatus = "START"
	case v1alpha1.StateFailedTemp, v1alpha1.StateFailed, v1alpha1.StateRolledBack:
		n.Error = &ProblemDetails{Title: string(tr.State), Status: 500, Detail: tr.Message}
	}
	if by := op.Spec.TriggeredBy; by != nil {
		n.Calaf.TriggeredBy = fmt.Sprintf("alert %s (rule %s)", by.AlertName, by.Rule)
	}
	return n
}
