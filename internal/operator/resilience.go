package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"calaf.io/calaf/api/v1alpha1"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/internal/redact"
)

// leaderElectionID names the lease the operator's replicas compete for.
const leaderElectionID = "calaf-operator.calaf.io"

// leaseName is the lease of this operator's replicas: a shard's replicas have their own,
// named after its selector, so that the shards of a fleet run side by side.
func (opts Options) leaseName() string {
	if opts.ServiceSelector == nil || opts.ServiceSelector.Empty() {
		return leaderElectionID
	}
	sum := sha256.Sum256([]byte(opts.ServiceSelector.String()))
	return "calaf-operator-" + hex.EncodeToString(sum[:5]) + ".calaf.io"
}

// errRestart asks Run for a new manager: the API server came back after an outage long
// enough for the watches' own retries to have backed off.
var errRestart = errors.New("the API server came back after a long outage")

// Run runs the operator until ctx ends. Losing the API server does not end the process:
// a short outage costs nothing (the leader keeps its lease for RenewDeadline, and every
// Service is reconciled when the API answers again); after a long one — or a lost
// leadership — the manager is made anew in this process once the API answers, with the
// same leader identity, so the operator converges at once instead of going through a
// container restart and its crash-loop back-off.
func Run(ctx context.Context, config *rest.Config, opts Options, log logr.Logger) error {
	opts.secrets = redact.NewRegistry()
	log = redact.Logger(log, opts.secrets)
	ctrl.SetLogger(log)
	st, err := newStages(config, opts, opts.registry(), log)
	if err != nil {
		return err
	}
	for {
		mgr, _, orchestrator, err := buildManager(config, opts, st, log)
		if err != nil {
			return err
		}
		err = mgr.Start(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if !errors.Is(err, errRestart) && (err == nil || !strings.Contains(err.Error(), "leader election lost")) {
			return err
		}
		log.Info("starting the manager again once the API server answers", "reason", err.Error())
		if orchestrator != nil {
			orchestrator.Wait(ctx, time.Minute)
		}
		if err := waitForAPI(ctx, config, time.Second); err != nil {
			return nil
		}
	}
}

// leaderLock is the lease of the leader election, held with the process's identity (so
// that a manager made anew by Run takes back the lease its predecessor held), or nil
// without leader election.
func leaderLock(config *rest.Config, opts Options, identity string) (resourcelock.Interface, error) {
	if !opts.LeaderElection {
		return nil, nil
	}
	namespace := opts.LeaderElectionNamespace
	if namespace == "" {
		data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return nil, fmt.Errorf("leader election: not running in a cluster: give --leader-election-namespace")
		}
		namespace = strings.TrimSpace(string(data))
	}
	config = rest.CopyConfig(config)
	config.Timeout = max(opts.RenewDeadline/2, time.Second) // one hung request must not cost the lease
	clientset, err := kubernetes.NewForConfig(rest.AddUserAgent(config, "leader-election"))
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, opts.leaseName(),
		clientset.CoreV1(), clientset.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: identity})
}

// apiMonitor follows the API server from this process. When it answers again after an
// outage, every Service is reconciled at once (their retries may have backed off far);
// after an outage of RestartAfter or more, it ends the manager with errRestart so that Run
// makes a fresh one (watches too may have backed off).
type apiMonitor struct {
	ping         func(ctx context.Context) error
	reader       client.Reader
	triggers     *controller.Triggers
	namespace    string
	interval     time.Duration
	restartAfter time.Duration
	log          logr.Logger
}

func newAPIMonitor(config *rest.Config, reader client.Reader, triggers *controller.Triggers, opts Options, log logr.Logger) (*apiMonitor, error) {
	ping, err := readyz(config)
	if err != nil {
		return nil, err
	}
	return &apiMonitor{
		ping: ping, reader: reader, triggers: triggers,
		namespace: opts.Namespace, interval: time.Second, restartAfter: opts.RestartAfter, log: log.WithName("api-monitor"),
	}, nil
}

// NeedLeaderElection is false: every replica follows the API server.
func (m *apiMonitor) NeedLeaderElection() bool { return false }

// Start follows the API server until ctx ends or a long outage ends.
func (m *apiMonitor) Start(ctx context.Context) error {
	var downSince time.Time
	ticker := time.NewTicker(m.interval)
	defer ticker.Stop()
	for {
		err := m.ping(ctx)
		switch {
		case err != nil && downSince.IsZero() && ctx.Err() == nil:
			downSince = time.Now()
			m.log.Info("the API server does not answer", "error", err.Error())
		case err == nil && !downSince.IsZero():
			outage := time.Since(downSince).Round(time.Second)
			downSince = time.Time{}
			m.log.Info("the API server answers again", "outage", outage.String())
			if m.restartAfter > 0 && outage >= m.restartAfter {
				return fmt.Errorf("%w (%s)", errRestart, outage)
			}
			m.reconcileAll(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// reconcileAll asks for a reconcile of every Service the operator watches.
func (m *apiMonitor) reconcileAll(ctx context.Context) {
	list := &v1alpha1.ServiceList{}
	if err := m.reader.List(ctx, list, client.InNamespace(m.namespace)); err != nil {
		m.log.Info("listing the Services to reconcile after the outage", "error", err.Error())
		return
	}
	for _, svc := range list.Items {
		m.triggers.Trigger(svc.Namespace, svc.Name)
	}
}

// readyz returns a function asking the API server whether it is ready, within two
// seconds.
func readyz(config *rest.Config) (func(ctx context.Context) error, error) {
	config = rest.CopyConfig(config)
	config.Timeout = 2 * time.Second
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	rest := clientset.Discovery().RESTClient()
	return func(ctx context.Context) error { return rest.Get().AbsPath("/readyz").Do(ctx).Error() }, nil
}

// waitForAPI polls the API server until it answers or ctx ends.
func waitForAPI(ctx context.Context, config *rest.Config, every time.Duration) error {
	ping, err := readyz(config)
	if err != nil {
		return err
	}
	for {
		if err := ping(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}
