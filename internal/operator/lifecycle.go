package operator

import (
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/controller"
	"calaf.io/calaf/lifecycle"
)

// addLifecycle registers the reconciler of operation occurrences (package lifecycle): it
// queues every Operation, runs lifecycle operations through the Service's spec and the
// orchestrator, and asks for reconciles of Services through triggers; and the notifier
// of LifecycleSubscriptions.
func addLifecycle(mgr ctrl.Manager, opts Options, triggers *controller.Triggers, log logr.Logger) error {
	occurrences := &lifecycle.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  oneLineRecorder{mgr.GetEventRecorder("calaf-operator")},
		Notify:    triggers.Trigger,
		Log:       log.WithName("lifecycle"),
		// The Services of another shard are not gone: their occurrences are its to run.
		ServiceElsewhere: serviceElsewhere(mgr.GetAPIReader(), opts),
	}
	if err := occurrences.SetupWithManager(mgr, opts.Concurrency); err != nil {
		return err
	}
	notifier := &lifecycle.Notifier{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Log: log.WithName("notifications"), BaseBackoff: opts.NotifyBackoff}
	return notifier.SetupWithManager(mgr)
}

// newAlertReceiver makes the Alertmanager webhook (lifecycle.AlertPath), served with the
// push webhook and its token.
func newAlertReceiver(mgr ctrl.Manager, opts Options, log logr.Logger) *lifecycle.AlertReceiver {
	return &lifecycle.AlertReceiver{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Token: opts.WebhookToken, Namespace: opts.Namespace,
		Recorder: oneLineRecorder{mgr.GetEventRecorder("calaf-operator")}, Log: log.WithName("alerts"), Now: time.Now,
	}
}
