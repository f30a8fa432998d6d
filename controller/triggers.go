package controller

import (
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"calaf.io/calaf/api/v1alpha1"
)

// Triggers carries requests for an immediate reconcile of a Service — from the push
// webhook, a finished operation, an accepted Operation — to the Service reconciler. It is
// made before the reconciler and the parts that trigger it, so none of them needs the
// others to exist first.
type Triggers struct {
	events chan event.GenericEvent
	sent   atomic.Int64
}

// NewTriggers returns Triggers holding up to size pending requests.
func NewTriggers(size int) *Triggers {
	return &Triggers{events: make(chan event.GenericEvent, size)}
}

// Trigger asks for an immediate reconcile of a Service; it never blocks: when the queue
// is full, the Service is reconciled at its interval, and Trigger says false.
func (t *Triggers) Trigger(namespace, name string) bool {
	svc := &v1alpha1.Service{}
	svc.Namespace, svc.Name = namespace, name
	select {
	case t.events <- event.GenericEvent{Object: svc}:
		t.sent.Add(1)
		return true
	default:
		return false
	}
}

// Sent is how many requests were queued so far.
func (t *Triggers) Sent() int64 { return t.sent.Load() }

// source is the watch source of the requests.
func (t *Triggers) source() source.Source {
	return source.Channel(t.events, &handler.EnqueueRequestForObject{})
}
