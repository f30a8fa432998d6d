package cli

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"calaf.io/calaf/artifacts"
	"calaf.io/calaf/controller"
	"calaf.io/calaf/internal/operator"
)

// withOrchestration makes the operator run the operations of node templates in their
// pods (package artifacts) and Day-2 Operations, with the calaf-runner binary at
// runnerPath (default: next to calaf, or on $PATH). Without a runner the operator still
// runs; nodes with operations then fail with a message saying so.
func withOrchestration(opts *operator.Options, runnerPath *string) {
	var orchestrator *artifacts.Orchestrator
	opts.Orchestrator = func(mgr ctrl.Manager, metrics *controller.Metrics) (controller.Orchestrator, error) {
		log := mgr.GetLogger().WithName("orchestrator")
		runner, err := artifacts.LoadRunner(*runnerPath)
		if err != nil {
			log.Error(err, "operations cannot run: nodes with operations will fail until the operator has a runner")
		} else {
			log.Info("runner loaded", "path", runner.Path, "hash", runner.Hash, "bytes", runner.Size)
		}
		executor := artifacts.NewPodExecutor(mgr.GetConfig(), runner)
		orchestrator = artifacts.NewOrchestrator(mgr.GetClient(), executor, mgr.GetEventRecorder("calaf-operator"), metrics, log)
		return orchestrator, nil
	}
	opts.Extra = func(mgr ctrl.Manager, deps operator.Dependencies) error {
		if orchestrator != nil {
			orchestrator.Notify = deps.Service.Trigger
		}
		return (&artifacts.OperationReconciler{
			Client:   mgr.GetClient(),
			Notify:   deps.Service.Trigger,
			Recorder: mgr.GetEventRecorder("calaf-operator"),
		}).SetupWithManager(mgr)
	}
}
