package operator

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/lifecycle"
)

// addOccurrences registers the reconciler of operation occurrences (package lifecycle): it
// queues every Operation, runs lifecycle operations through the Service's spec and the
// orchestrator, and asks for reconciles of Services through triggers; pods is the client
// of the pods of a Service deployed into another cluster (spec.kubeConfig).
func addOccurrences(mgr ctrl.Manager, opts Options, st *stages, triggers *controller.Triggers,
	pods func(context.Context, *v1alpha1.Service) (lifecycle.PodClient, error), log logr.Logger) error {
	occurrences := &lifecycle.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  newRecorder(mgr, opts),
		Notify:    triggers.Trigger,
		Log:       log.WithName("lifecycle"),
		// The Services of another shard are not gone: their occurrences are its to run.
		ServiceElsewhere: serviceElsewhere(mgr.GetAPIReader(), opts),
		VNFMRoot:         opts.VNFMRoot,
		Pods:             pods,
	}
	if st.nfvo != nil {
		occurrences.Granter = st.nfvo
	}
	return occurrences.SetupWithManager(mgr, opts.Concurrency)
}

// addSubscriptions registers the notifier of LifecycleSubscriptions (custom resources
// only) and the releaser of the NFV interface's identifiers.
func addSubscriptions(mgr ctrl.Manager, opts Options, st *stages, log logr.Logger) error {
	notifier := &lifecycle.Notifier{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Log: log.WithName("notifications"),
		Backoff: opts.NotifyBackoff, Outbound: st.outbound, CredentialsReader: subscriptionReader(opts, st.identities)}
	if opts.OutboundDiscover {
		watch := &networkWatch{reader: mgr.GetAPIReader(), client: st.outbound, opts: opts, log: log.WithName("outbound")}
		if err := mgr.Add(watch); err != nil {
			return err
		}
	}
	if err := notifier.SetupWithManager(mgr); err != nil {
		return err
	}
	releaser := &lifecycle.IdentifierReleaser{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
	return releaser.SetupWithManager(mgr)
}

// subscriptionReader is how a subscription's credentials Secret is read: in lockdown mode
// as the tenant account of its namespace (the identity its Services act as), never with
// the operator's rights; otherwise nil (the operator's reader, and only Secrets labelled
// for subscriptions).
func subscriptionReader(opts Options, identities *controller.Identities) func(*v1alpha1.LifecycleSubscription) (client.Reader, error) {
	if opts.DefaultServiceAccount == "" {
		return nil
	}
	return func(sub *v1alpha1.LifecycleSubscription) (client.Reader, error) {
		return identities.Client(controller.ServiceAccountUser(sub.Namespace, opts.DefaultServiceAccount))
	}
}

// newAlertReceiver makes the Alertmanager webhook (lifecycle.AlertPath), served beside
// the push webhook with a token of its own.
func newAlertReceiver(mgr ctrl.Manager, opts Options, log logr.Logger) *lifecycle.AlertReceiver {
	receiver := &lifecycle.AlertReceiver{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Token: opts.AlertToken, Namespace: opts.Namespace,
		Recorder: newRecorder(mgr, opts), Log: log.WithName("alerts"), Now: opts.Now,
	}
	if receiver.Now == nil {
		receiver.Now = time.Now
	}
	return receiver
}
